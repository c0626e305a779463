package interoptest_test

// Flows added from Go (drover.FlowProducer) against the same flows added by
// Node's FlowProducer: the state after the add, and after workers of the
// same implementation ran them, is the same; and a big flow added from Go
// completes under mixed Node and drover workers.

import (
	"context"
	"encoding/json"
	"maps"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// addFlow adds f with Node's FlowProducer in the Node run and with drover's
// in the drover run.
func (s side) addFlow(f bullmqoracle.FlowJob) {
	s.t.Helper()
	if s.by == nodeImpl {
		s.flow(f)
		return
	}
	fp, err := drover.NewFlowProducer(s.b.rdb, &drover.FlowProducerOptions{Prefix: s.b.prefix})
	require.NoError(s.t, err)
	_, err = fp.Add(context.Background(), droverFlow(s.t, f))
	require.NoError(s.t, err)
}

// droverFlow is the drover form of a Node flow: options through
// ParseJobOptions (BullMQ's names), the root's parent option as
// FlowJob.Parent.
func droverFlow(t *testing.T, f bullmqoracle.FlowJob) drover.FlowJob {
	t.Helper()
	opts := maps.Clone(f.Opts)
	out := drover.FlowJob{Name: f.Name, QueueName: f.QueueName, Prefix: f.Prefix, Data: f.Data}
	if p, ok := opts["parent"].(map[string]any); ok {
		ref, err := drover.ParseJobKey(p["queue"].(string) + ":" + p["id"].(string))
		require.NoError(t, err)
		out.Parent = &ref
		delete(opts, "parent")
	}
	if len(opts) > 0 {
		b, err := json.Marshal(opts)
		require.NoError(t, err)
		out.Opts, err = drover.ParseJobOptions(b)
		require.NoError(t, err)
	}
	for _, c := range f.Children {
		out.Children = append(out.Children, droverFlow(t, c))
	}
	return out
}

// TestDifferentialFlowProducer: drover's FlowProducer stores a flow as Node's
// does (ids, fields, options, events, list and set orders), and each
// failure policy set from Go plays out as BullMQ's.
//
//	go test -count=1 -run 'TestDifferentialFlowProducer' ./internal/interoptest/
func TestDifferentialFlowProducer(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	echo := bullmqoracle.Echo()

	t.Run("ThreeLevels", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// Parents get distinct timestamps: Node stamps each job when it
			// builds it, so a tree's parents may or may not share a
			// millisecond, which orders waiting-children.
			s.addFlow(node("root", queueName, &echo, map[string]any{"attempts": 2, "timestamp": 1_700_000_000_000},
				node("a", partsQueue, &echo, nil),
				node("b", partsQueue, &echo, map[string]any{"priority": 3, "failParentOnFailure": true}),
				node("m", queueName, &echo, map[string]any{"priority": 2, "timestamp": 1_700_000_000_001},
					node("m1", partsQueue, &echo, map[string]any{"lifo": true, "removeOnComplete": 5}),
					node("m2", partsQueue, &echo, map[string]any{"ignoreDependencyOnFailure": true, "attempts": 3,
						"backoff": map[string]any{"type": "fixed", "delay": 10}})),
				node("d", partsQueue, &echo, map[string]any{"delay": 60000, "continueParentOnFailure": true}),
				node("e", partsQueue, &echo, map[string]any{"removeDependencyOnFailure": true})))
			checkpoint("added")
			s.work(partsQueue, bullmqoracle.FromData("behavior"), 5)
			checkpoint("leaves done")
			s.work(queueName, bullmqoracle.FromData("behavior"), 1)
			checkpoint("middle done")
		})
	})

	t.Run("ExternalParentAndExistingJobs", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// Set-up by Node in both runs: a job to hang the flow under, a
			// completed job and a waiting one the flow names by id, and
			// the owner of a deduplication id a lone root uses.
			s.nodeAdd(queueName, "ext", map[string]any{"n": 0}, map[string]any{"jobId": "ext", "delay": 60000})
			s.nodeAdd(partsQueue, "done", map[string]any{"n": 1}, map[string]any{"jobId": "done"})
			s.work(partsQueue, bullmqoracle.Echo(), 1)
			s.nodeAdd(partsQueue, "waiting", map[string]any{"n": 2}, map[string]any{"jobId": "waiting"})
			s.nodeAdd(partsQueue, "owner", map[string]any{"n": 3}, map[string]any{"deduplication": map[string]any{"id": "dd"}})
			checkpoint("set up")
			parent := map[string]any{"parent": map[string]any{"id": "ext", "queue": s.b.prefix + ":" + queueName}}
			s.addFlow(node("p", queueName, &echo, parent, node("done", partsQueue, &echo, nil)))
			checkpoint("only a finished child: parent released")
			s.addFlow(node("x", partsQueue, &echo, map[string]any{"deduplication": map[string]any{"id": "dd"}}))
			checkpoint("a lone root deduplicated")
			s.addFlow(node("p2", queueName, &echo, nil,
				node("waiting", partsQueue, &echo, nil),
				node("fresh", partsQueue, &echo, nil)))
			checkpoint("an existing waiting job attached")
		})
	})

	for _, policy := range []string{"", "failParentOnFailure", "continueParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure"} {
		name := policy
		if name == "" {
			name = "Default"
		}
		t.Run("FailurePolicy/"+name, func(t *testing.T) {
			t.Parallel()
			fail := bullmqoracle.Fail("child broke")
			var opts map[string]any
			if policy != "" {
				opts = map[string]any{policy: true}
			}
			differential(t, setup, func(s side, checkpoint func(string)) {
				s.addFlow(node("p", queueName, &echo, nil,
					node("bad", partsQueue, &fail, opts),
					node("good", partsQueue, &echo, nil)))
				s.work(partsQueue, bullmqoracle.FromData("behavior"), 2)
				checkpoint("children finished")
				if policy == "" {
					return // the parent waits for the failed child
				}
				s.work(queueName, bullmqoracle.FromData("behavior"), 1)
				checkpoint("parent finished")
			})
		})
	}
}

// TestInteropFlowProducerAcceptance: a flow added from Go, 3 levels with
// 1,000 leaves, is worked by Node and drover workers side by side and
// completes with every leaf's value reaching the root: the leaves (Node
// and drover workers) return their numbers, the middle jobs (drover) return
// their children's values, and the root (Node) is released with all of
// them in its processed hash.
//
//	go test -count=1 -run 'TestInteropFlowProducerAcceptance' ./internal/interoptest/
func TestInteropFlowProducerAcceptance(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	const mids, leavesPer = 10, 100
	var tree []drover.FlowJob
	for m := range mids {
		var leaves []drover.FlowJob
		for l := range leavesPer {
			leaves = append(leaves, drover.FlowJob{Name: "leaf", QueueName: "leaves", Data: map[string]int{"n": m*leavesPer + l}})
		}
		tree = append(tree, drover.FlowJob{Name: "mid", QueueName: "mids", Data: map[string]int{"m": m}, Children: leaves})
	}
	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	root, err := fp.Add(ctx, drover.FlowJob{Name: "root", QueueName: queueName, Children: tree})
	require.NoError(t, err)
	rootID := root.Job.ID

	// Leaves: a Node worker and a drover worker share the queue.
	var byDrover atomic.Int64
	stopNodeLeaves := b.startWorkerOn(t, nodeImpl, "leaves", workerSpec{behavior: bullmqoracle.Echo(), concurrency: 4})
	stopDroverLeaves := b.startWorkerOn(t, droverImpl, "leaves", workerSpec{concurrency: 4,
		drover: func(ctx context.Context, job *drover.Job) (any, error) {
			byDrover.Add(1)
			return job.Data, nil
		}})
	// Middles: drover collects its children's values.
	stopMids := b.startWorkerOn(t, droverImpl, "mids", workerSpec{drover: func(ctx context.Context, job *drover.Job) (any, error) {
		vals, err := job.GetChildrenValues(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]int, 0, len(vals))
		for _, v := range vals {
			var leaf struct{ N int }
			if err := json.Unmarshal(v, &leaf); err != nil {
				return nil, err
			}
			out = append(out, leaf.N)
		}
		sort.Ints(out)
		return out, nil
	}})
	// The root: Node.
	stopRoot := b.startWorkerOn(t, nodeImpl, queueName, workerSpec{behavior: bullmqoracle.Echo()})
	testkit.WaitFor(t, 3*time.Minute, "the root to complete", func() bool {
		s, err := b.oracle.GetState(ctx, b.prefix, queueName, rootID)
		require.NoError(t, err)
		return s == "completed"
	})
	stopRoot()
	stopMids()
	stopNodeLeaves()
	stopDroverLeaves()

	rootJob, err := drover.NewQueue(b.rdb, queueName, &drover.QueueOptions{Prefix: b.prefix})
	require.NoError(t, err)
	job, err := rootJob.GetJob(ctx, rootID)
	require.NoError(t, err)
	vals, err := job.GetChildrenValues(ctx)
	require.NoError(t, err)
	require.Len(t, vals, mids)
	seen := make(map[int]bool)
	for _, v := range vals {
		var ns []int
		require.NoError(t, json.Unmarshal(v, &ns))
		require.Len(t, ns, leavesPer)
		for _, n := range ns {
			seen[n] = true
		}
	}
	require.Len(t, seen, mids*leavesPer, "every leaf's value is in the root")
	counts, err := job.GetDependenciesCount(ctx)
	require.NoError(t, err)
	require.Equal(t, drover.DependencyCounts{Processed: mids}, counts)
	t.Logf("leaves: %d by drover, %d by Node; root values from %d middle jobs hold %d distinct leaf values",
		byDrover.Load(), mids*leavesPer-int(byDrover.Load()), len(vals), len(seen))
	require.Positive(t, byDrover.Load(), "drover worked leaves")
	require.Less(t, byDrover.Load(), int64(mids*leavesPer), "Node worked leaves")

}
