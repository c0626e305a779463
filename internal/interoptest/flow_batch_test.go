package interoptest_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestDifferentialFlowBatchFinish: a drover worker ends the attempts of
// several jobs in one finishJobs call (a batch); BullMQ ends them one
// moveToFinished call at a time. For flow children of one parent, in the
// parent's queue, the events a batch writes must come in the order Node's
// calls write them: each job's own events, with the parent's release just
// before the event of the child that released it, job after job. The Node
// run takes and finishes the children one by one (a step worker); the
// drover run takes them in one fetch and ends them in one finishJobs call
// with the records a drover worker sends. Events (but "active", which the
// two runs write at different moments) and Redis state must be equal.
func TestDifferentialFlowBatchFinish(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)

	// A step is what happens to one child, in the order the children are
	// taken (c1, c2, c3).
	type step struct {
		fail bool // fails (a retry when attempts are left), else completes
	}
	tests := []struct {
		name string
		// opts of each child, by id.
		opts  map[string]map[string]any
		steps []step
	}{
		{
			// The last child releases the parent: Node writes "waiting p"
			// between c2's and c3's completed events.
			name:  "LastChildReleasesParent",
			steps: []step{{}, {}, {}},
		},
		{
			// A retry in the middle: its waiting event comes between the
			// completions; the parent keeps waiting for c2.
			name:  "RetryBetweenCompletions",
			opts:  map[string]map[string]any{"c2": {"attempts": 2}},
			steps: []step{{}, {fail: true}, {}},
		},
		{
			// The last child fails with failParentOnFailure while the
			// others are still pending: the parent is released (to the
			// front of wait, so only the last child can do this here: Node
			// would take the parent next) before c3's failed event.
			name:  "LastChildFailsParent",
			opts:  map[string]map[string]any{"c3": {"failParentOnFailure": true}, "c2": {"attempts": 2}},
			steps: []step{{}, {fail: true}, {fail: true}},
		},
		{
			// Retention trims the completed set once per batch (Node: once
			// per job); the release still sits before the last completion.
			name: "RetentionCountOne",
			opts: map[string]map[string]any{
				"c1": {"removeOnComplete": 1}, "c2": {"removeOnComplete": 1}, "c3": {"removeOnComplete": 1},
			},
			steps: []step{{}, {}, {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			children := []string{"c1", "c2", "c3"}
			addFlow := func(b *bundle) {
				f := bullmqoracle.FlowJob{Name: "parent", QueueName: queueName, Opts: map[string]any{"jobId": "p"}}
				for _, id := range children {
					opts := map[string]any{"jobId": id}
					for k, v := range tt.opts[id] {
						opts[k] = v
					}
					f.Children = append(f.Children, bullmqoracle.FlowJob{Name: "child", QueueName: queueName, Data: map[string]any{"id": id}, Opts: opts})
				}
				_, err := b.oracle.AddFlow(ctx, b.prefix, f)
				require.NoError(t, err)
			}
			withoutActive := func(evs []drover.Event) []string {
				return slices.DeleteFunc(eventLines(evs), func(l string) bool { return strings.HasPrefix(l, "active ") })
			}

			nb := setup(t)
			addFlow(nb)
			for i, s := range tt.steps {
				bh := bullmqoracle.Return("r-" + children[i])
				if s.fail {
					bh = bullmqoracle.Fail("boom")
				}
				id, err := nb.oracle.StepWork(ctx, nb.prefix, queueName, bh)
				require.NoError(t, err)
				require.Equal(t, children[i], id, "Node takes the children in the order they were added")
			}

			db := nb.sibling(t)
			addFlow(db)
			k := keys.New(db.prefix, queueName)
			now := time.Now().UnixMilli()
			f, err := scripts.MoveToActive(ctx, db.rdb, k, scripts.FetchArgs{
				Now: now, Count: len(children), Token: "t", LockDuration: 30000, WorkerName: workerName,
			})
			require.NoError(t, err)
			var taken []string
			for _, j := range f.Jobs {
				taken = append(taken, j.ID)
			}
			require.Equal(t, children, taken, "drover takes the children in the order they were added")
			recs := make([]scripts.FinishRecord, len(tt.steps))
			for i, s := range tt.steps {
				id := children[i]
				attempts := 1
				if a, ok := tt.opts[id]["attempts"].(int); ok {
					attempts = a
				}
				// What a drover worker sends for a flow child's first
				// attempt (worker_run.go outcome).
				r := scripts.FinishRecord{
					ID: id, Token: "t:" + id, Kind: scripts.FinishCompleted, Value: strconv.Quote("r-" + id),
					AttemptsMade: 1, Attempts: attempts, HasParent: true,
				}
				if tt.opts[id]["removeOnComplete"] == 1 {
					r.Keep = "1,,0" // count 1, no age bound (jobcodec.Keep.Spec)
				}
				if s.fail {
					r.Kind, r.Value, r.Stacktrace = scripts.FinishFailed, "boom", `["Error: boom"]`
					if attempts > 1 {
						r.Kind = scripts.FinishRetry
					}
				}
				recs[i] = r
			}
			codes, _, err := scripts.FinishJobs(ctx, db.rdb, k, scripts.FetchArgs{Now: time.Now().UnixMilli(), Token: "t2", LockDuration: 30000, WorkerName: workerName}, 0, recs)
			require.NoError(t, err)
			for i, c := range codes {
				require.NoError(t, c, "finish of %s", recs[i].ID)
			}

			nodeEvents, droverEvents := withoutActive(nb.events(t)), withoutActive(db.events(t))
			require.Equal(t, nodeEvents, droverEvents, "events after the flow's add: Node one job at a time vs drover's one batch")
			// The stream was compared above without its active events.
			dropActive := func(raw *statedump.Snapshot) {
				if ev := raw.Keys[queueName+":events"]; ev != nil {
					ev.Stream = slices.DeleteFunc(ev.Stream, func(e statedump.StreamEntry) bool {
						return len(e.Fields) >= 2 && e.Fields[0] == "event" && e.Fields[1] == "active"
					})
				}
			}
			requireSameState(t,
				comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true, rewrite: dropActive}),
				comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true, rewrite: dropActive}))
		})
	}
}
