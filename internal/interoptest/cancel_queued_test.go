package interoptest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// cancelReason is what both sides end the job with: drover's CancelJob
// reason "operator" makes the failedReason "cancelled: operator", and the
// Node worker throws UnrecoverableError with that message.
const cancelReason = "cancelled: operator"

// TestDifferentialCancelQueued: drover's Queue.CancelJob of a job that is not
// running leaves Redis as a Node BullMQ worker leaves it when it takes that
// job and fails it with UnrecoverableError, less the attempt the job never
// made. The same Node-added jobs run under two prefixes: Node's worker fails
// the job under one, drover cancels it under the other. Then both dumps
// must match once these are taken out (undoAttempt): on the job hash,
// processedOn, ats, atm, pb and stacktrace (the attempt); in the stream,
// Node's active event, its promotion of a delayed job (waiting prev=delayed)
// and its retries-exhausted event (which carries attemptsMade), and the
// failed event's prev (active vs the state the job left); for a delayed
// job, the delay field Node's promotion zeroed. Node's getters
// read drover's result the same, a Node worker finds nothing to run, and
// Node's job.retry of the cancelled job lets a Node worker complete it.
func TestDifferentialCancelQueued(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	cases := []struct {
		name string
		// add adds the scenario's jobs with Node and returns the id to
		// cancel; delayed scenarios are due at once on Node's side only
		// after due has passed.
		add  func(t *testing.T, b *bundle) string
		due  time.Duration
		prev string
	}{
		{name: "Waiting", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeAdd(t, b, "j", map[string]any{"attempts": 3})
		}},
		{name: "Prioritized", prev: "prioritized", add: func(t *testing.T, b *bundle) string {
			return nodeAdd(t, b, "j", map[string]any{"priority": 4})
		}},
		{name: "Delayed", prev: "delayed", due: 300 * time.Millisecond, add: func(t *testing.T, b *bundle) string {
			return nodeAdd(t, b, "j", map[string]any{"delay": 300})
		}},
		{name: "RemoveOnFail", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeAdd(t, b, "j", map[string]any{"removeOnFail": true})
		}},
		{name: "RemoveOnFailCount", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			// An earlier job already failed; the count bound of 1 trims it.
			first := nodeAdd(t, b, "first", map[string]any{"removeOnFail": 1})
			id, err := b.oracle.StepWork(ctx, b.prefix, queueName, bullmqoracle.Unrecoverable("first"))
			require.NoError(t, err)
			require.Equal(t, first, id)
			return nodeAdd(t, b, "j", map[string]any{"removeOnFail": 1})
		}},
		{name: "Dedup", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeAdd(t, b, "j", map[string]any{"deduplication": map[string]any{"id": "d"}})
		}},
		{name: "DedupTTL", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeAdd(t, b, "j", map[string]any{"deduplication": map[string]any{"id": "d", "ttl": 60000}})
		}},
		{name: "FlowChildFailParent", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeFlow(t, b, map[string]any{"failParentOnFailure": true})
		}},
		{name: "FlowChildContinueParent", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeFlow(t, b, map[string]any{"continueParentOnFailure": true})
		}},
		{name: "FlowChildIgnoreDependency", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeFlow(t, b, map[string]any{"ignoreDependencyOnFailure": true})
		}},
		{name: "FlowChildRemoveDependency", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeFlow(t, b, map[string]any{"removeDependencyOnFailure": true})
		}},
		{name: "FlowChildParentWaits", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeFlow(t, b, map[string]any{})
		}},
		{name: "FlowChildRemoveOnFail", prev: "waiting", add: func(t *testing.T, b *bundle) string {
			return nodeFlow(t, b, map[string]any{"removeOnFail": true, "ignoreDependencyOnFailure": true})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nb := setup(t)
			db := nb.sibling(t)

			nodeID := tc.add(t, nb)
			droverID := tc.add(t, db)
			require.Equal(t, nodeID, droverID)
			time.Sleep(tc.due) // Node's worker takes the delayed job once due
			var got string
			var err error
			deadline := time.Now().Add(waitLong)
			for got == "" && time.Now().Before(deadline) {
				got, err = nb.oracle.StepWork(ctx, nb.prefix, queueName, bullmqoracle.Unrecoverable(cancelReason))
				require.NoError(t, err)
			}
			require.Equal(t, nodeID, got)
			require.NoError(t, db.dq.CancelJob(ctx, droverID, "operator", nil))

			// Node reads drover's result as its own.
			a := assertAgree(t, db, droverID)
			na := assertAgree(t, nb, nodeID)
			require.Equal(t, na.counts, a.counts)
			require.Equal(t, na.states, a.states)
			if a.states[droverID] == "failed" {
				nj, err := db.oracle.GetJob(ctx, db.prefix, queueName, droverID)
				require.NoError(t, err)
				require.Equal(t, cancelReason, nj.FailedReason)
				require.Zero(t, nj.AttemptsMade)
			}

			node := comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true})
			drv := comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true})
			undoAttempt(t, node, nodeID, "active")
			undoAttempt(t, drv, droverID, tc.prev)
			if tc.due > 0 {
				// Node's promotion to wait, which let its worker take the
				// job, set the delay field to 0; the cancelled job keeps
				// the delay of its stay in delayed (Job.Delay).
				require.Equal(t, "0", node.Keys[queueName+":"+nodeID].Hash["delay"])
				require.Equal(t, "300", drv.Keys[queueName+":"+droverID].Hash["delay"])
				delete(node.Keys[queueName+":"+nodeID].Hash, "delay")
				delete(drv.Keys[queueName+":"+droverID].Hash, "delay")
			}
			requireSameState(t, node, drv)

			// Node's worker finds nothing left to run but what the
			// failure released (a flow parent), and handles that.
			for {
				id, err := db.oracle.StepWork(ctx, db.prefix, queueName, bullmqoracle.Return("ok"))
				require.NoError(t, err)
				if id == "" {
					break
				}
				require.NotEqual(t, droverID, id)
			}
			// Node retries a cancelled job it kept as any failed job, and
			// its worker then runs it.
			if a.states[droverID] == "failed" {
				require.NoError(t, db.oracle.RetryJob(ctx, db.prefix, queueName, droverID, "failed", false, false))
				id, err := db.oracle.StepWork(ctx, db.prefix, queueName, bullmqoracle.Return("ok"))
				require.NoError(t, err)
				require.Equal(t, droverID, id)
				state, err := db.oracle.GetState(ctx, db.prefix, queueName, droverID)
				require.NoError(t, err)
				require.Equal(t, "completed", state)
			}
		})
	}
}

// nodeAdd adds one job with Node and returns its id.
func nodeAdd(t *testing.T, b *bundle, name string, opts map[string]any) string {
	t.Helper()
	id, err := b.oracle.Add(context.Background(), b.prefix, queueName, name, map[string]any{"n": 1}, opts)
	require.NoError(t, err)
	return id
}

// nodeFlow adds, with Node, parent "p" with one child "c" carrying
// childOpts, both in the queue; it returns the child's id.
func nodeFlow(t *testing.T, b *bundle, childOpts map[string]any) string {
	t.Helper()
	opts := map[string]any{"jobId": "c"}
	for k, v := range childOpts {
		opts[k] = v
	}
	ids, err := b.oracle.AddFlow(context.Background(), b.prefix, bullmqoracle.FlowJob{
		Name: "parent", QueueName: queueName, Opts: map[string]any{"jobId": "p"},
		Children: []bullmqoracle.FlowJob{{Name: "child", QueueName: queueName, Data: map[string]any{"n": 1}, Opts: opts}},
	})
	require.NoError(t, err)
	return ids.Children[0].ID
}

// undoAttempt takes out of a normalized dump what differs between a job a
// worker failed and one failed without an attempt: the attempt's job hash
// fields, and its events (see TestDifferentialCancelQueued); the failed
// event's prev must be prev, and is then blanked.
func undoAttempt(t *testing.T, s *statedump.Snapshot, id, prev string) {
	t.Helper()
	if k, ok := s.Keys[queueName+":"+id]; ok {
		for _, f := range []string{"processedOn", "ats", "atm", "pb", "stacktrace"} {
			delete(k.Hash, f)
		}
	}
	events := s.Keys[queueName+":events"]
	require.NotNil(t, events)
	kept := events.Stream[:0]
	for _, e := range events.Stream {
		f := e.Fields
		field := func(name string) string {
			if i := slices.Index(f, name); i >= 0 && i%2 == 0 && i+1 < len(f) {
				return f[i+1]
			}
			return ""
		}
		if field("jobId") == id {
			switch {
			case field("event") == "active",
				field("event") == "retries-exhausted",
				field("event") == "waiting" && field("prev") == "delayed":
				continue
			case field("event") == "failed":
				require.Equal(t, prev, field("prev"), "the failed event's prev: %s", strings.Join(f, " "))
				e.Fields = slices.Clone(f)
				e.Fields[slices.Index(f, "prev")+1] = "<prev>"
			}
		}
		kept = append(kept, e)
	}
	events.Stream = kept
}

// TestInteropCancelQueuedEndsWaits: a Node Job.waitUntilFinished and a
// drover Queue.WaitUntilFinished on a delayed job both end with the failure
// when drover cancels the job: each reads the failed event CancelJob wrote.
func TestInteropCancelQueuedEndsWaits(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	b := setup(t)
	id := nodeAdd(t, b, "later", map[string]any{"delay": 3600000})

	type result struct {
		reason string
		err    error
	}
	nodeDone := make(chan result, 1)
	go func() {
		r, err := b.oracle.WaitUntilFinished(ctx, b.prefix, queueName, id, waitLong)
		if err != nil {
			nodeDone <- result{err: err}
			return
		}
		nodeDone <- result{reason: r.State + ": " + r.FailedReason}
	}()
	droverDone := make(chan error, 1)
	go func() {
		_, err := b.dq.WaitUntilFinished(ctx, id)
		droverDone <- err
	}()
	// Both waits are listening once the driver's QueueEvents and drover's
	// reader are up; a cancel before that is still seen (each reads the
	// finished job's hash first), so no ordering is needed for the result.
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, b.dq.CancelJob(ctx, id, "operator", nil))

	n := <-nodeDone
	require.NoError(t, n.err)
	require.Equal(t, "failed: "+cancelReason, n.reason)
	var jfe *drover.JobFailedError
	require.ErrorAs(t, <-droverDone, &jfe)
	require.Equal(t, cancelReason, jfe.Reason)
}
