package interoptest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropFlowReads: a parent whose children (worked by a drover
// worker) completed, failed under each failure policy or are still pending
// reads the same through Node's Job.getChildrenValues, getDependencies,
// getDependenciesCount and getIgnoredChildrenFailures as through drover's.
//
//	go test -count=1 -run 'TestInteropFlowReads' ./internal/interoptest/
func TestInteropFlowReads(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("child broke")
	side{t, b, nodeImpl}.flow(node("p", queueName, &echo, nil,
		node("c1", partsQueue, &echo, nil),
		node("c2", partsQueue, &fail, map[string]any{"ignoreDependencyOnFailure": true}),
		node("c3", partsQueue, &fail, map[string]any{"continueParentOnFailure": true}),
		node("c4", partsQueue, &fail, map[string]any{"failParentOnFailure": true}),
		node("c5", partsQueue, &fail, map[string]any{"removeDependencyOnFailure": true}),
		node("c6", partsQueue, &echo, map[string]any{"delay": 60000})))
	stop := b.startWorkerOn(t, droverImpl, partsQueue, workerSpec{behavior: bullmqoracle.FromData("behavior")})
	testkit.WaitFor(t, waitLong, "children finished", func() bool {
		c, _ := drover.NewQueue(b.rdb, partsQueue, &drover.QueueOptions{Prefix: b.prefix})
		n, _ := c.GetJobCounts(ctx, drover.StateCompleted, drover.StateFailed)
		return n[drover.StateCompleted]+n[drover.StateFailed] == 5
	})
	stop()
	time.Sleep(20 * time.Millisecond)
	j, err := b.dq.GetJob(ctx, "p")
	require.NoError(t, err)
	key := func(id string) string { return b.prefix + ":" + partsQueue + ":" + id }

	var nodeValues map[string]json.RawMessage
	require.NoError(t, b.oracle.JobRead(ctx, b.prefix, queueName, "p", "getChildrenValues", &nodeValues))
	values, err := j.GetChildrenValues(ctx)
	require.NoError(t, err)
	require.Len(t, values, 1)
	require.JSONEq(t, string(nodeValues[key("c1")]), string(values[key("c1")]))

	var nodeIgnored map[string]string
	require.NoError(t, b.oracle.JobRead(ctx, b.prefix, queueName, "p", "getIgnoredChildrenFailures", &nodeIgnored))
	ignored, err := j.GetIgnoredChildrenFailures(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]string{key("c2"): "child broke", key("c3"): "child broke"}, ignored)
	require.Equal(t, nodeIgnored, ignored)

	var nodeCount struct{ Processed, Unprocessed, Ignored, Failed int64 }
	require.NoError(t, b.oracle.JobRead(ctx, b.prefix, queueName, "p", "getDependenciesCount", &nodeCount))
	count, err := j.GetDependenciesCount(ctx)
	require.NoError(t, err)
	require.Equal(t, drover.DependencyCounts{Processed: 1, Unprocessed: 1, Ignored: 2, Failed: 1}, count)
	require.Equal(t, drover.DependencyCounts(nodeCount), count)

	var nodeDeps struct {
		Processed   map[string]json.RawMessage
		Unprocessed []string
		Ignored     map[string]string
		Failed      []string
	}
	require.NoError(t, b.oracle.JobRead(ctx, b.prefix, queueName, "p", "getDependencies", &nodeDeps))
	deps, err := j.GetDependencies(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{key("c6")}, deps.Unprocessed)
	require.Equal(t, nodeDeps.Unprocessed, deps.Unprocessed)
	require.Equal(t, nodeDeps.Failed, deps.Failed)
	require.Equal(t, nodeDeps.Ignored, deps.Ignored)
	require.Len(t, deps.Processed, len(nodeDeps.Processed))
	for k, v := range nodeDeps.Processed {
		require.JSONEq(t, string(v), string(deps.Processed[k]))
	}
}

// TestDifferentialMoveToWaitingChildren: a job that gets a child while it
// runs and parks itself in waiting-children (BullMQ's
// Job.moveToWaitingChildren + WaitingChildrenError, drover's
// Job.MoveToWaitingChildren + ErrWaitingChildren) leaves the same state,
// under each parent option, and runs again with its child's value once the
// child finished (or fails when the child failed with failParentOnFailure).
//
//	go test -count=1 -run 'TestDifferentialMoveToWaitingChildren' ./internal/interoptest/
func TestDifferentialMoveToWaitingChildren(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	wait := bullmqoracle.Behavior{Kind: "waitChildren", Then: &bullmqoracle.Behavior{Kind: "return", Value: "nowait"}}
	values := bullmqoracle.Behavior{Kind: "childrenValues"}
	for _, tc := range []struct {
		name  string
		popts map[string]any
		copts map[string]any
		child bullmqoracle.Behavior
	}{
		{"Plain", nil, nil, bullmqoracle.Return("cv")},
		{"Attempts", map[string]any{"attempts": 3}, nil, bullmqoracle.Return("cv")},
		{"ChildFailParent", map[string]any{"attempts": 3}, map[string]any{"failParentOnFailure": true}, bullmqoracle.Fail("child broke")},
		{"PriorityRemoveOnComplete", map[string]any{"priority": 3, "removeOnComplete": true}, nil, bullmqoracle.Return("cv")},
		{"Delay", map[string]any{"delay": 100}, nil, bullmqoracle.Return("cv")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				popts := map[string]any{"jobId": "p"}
				for k, v := range tc.popts {
					popts[k] = v
				}
				s.nodeAdd(queueName, "p", map[string]any{"n": 1}, popts)
				stop := s.b.startWorkerOn(s.t, s.by, queueName, workerSpec{behavior: bullmqoracle.Sequence(bullmqoracle.WaitKey(s.gate(), wait), values)})
				s.waitActive(queueName, "p")
				copts := map[string]any{"jobId": "c", "parent": map[string]any{"id": "p", "queue": s.b.prefix + ":" + queueName}}
				for k, v := range tc.copts {
					copts[k] = v
				}
				s.nodeAdd(partsQueue, "c", map[string]any{"n": 2}, copts)
				s.openGate()
				waitForNodeState(s.t, s.b, "p", "waiting-children")
				checkpoint("parent waiting for its child")
				s.work(partsQueue, tc.child, 1)
				s.waitFinished(queueName, 1)
				stop()
				checkpoint("child and parent finished")
			})
		})
	}
}
