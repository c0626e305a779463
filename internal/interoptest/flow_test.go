package interoptest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropFlows: Node's FlowProducer adds a parent waiting for children in
// another queue; a drover worker processes the children and updates the
// parent as BullMQ's own finish script does, and the released parent runs on
// a Node worker (or, for failParentOnFailure, fails there with BullMQ's
// reason).
func TestInteropFlows(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	t.Run("ChildrenCompleteThenParentRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids, err := b.oracle.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{
			Name: "report", QueueName: queueName, Data: map[string]any{"kind": "parent"},
			Children: []bullmqoracle.FlowJob{
				{Name: "part", QueueName: partsQueue, Data: map[string]any{"n": 1}},
				{Name: "part", QueueName: partsQueue, Data: map[string]any{"n": 2}},
			},
		})
		require.NoError(t, err)
		parent := ids.ID
		require.Equal(t, "waiting-children", b.nodeState(t, parent))

		// drover works the children: the last one releases the parent.
		stop := partsWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) { return job.Data, nil })
		waitForNodeState(t, b, parent, "waiting")
		stop()

		// The parent sees its children's results through Node's own API.
		counts, err := b.oracle.GetJobCounts(ctx, b.prefix, partsQueue, "completed")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"completed": 2}, counts)
		processed, err := b.rdb.HGetAll(ctx, b.prefix+":"+queueName+":"+parent+":processed").Result()
		require.NoError(t, err)
		require.Len(t, processed, 2)
		for key, v := range processed {
			require.Contains(t, key, b.prefix+":"+partsQueue+":")
			require.Contains(t, v, `"n":`)
		}
		deps, err := b.rdb.SCard(ctx, b.prefix+":"+queueName+":"+parent+":dependencies").Result()
		require.NoError(t, err)
		require.Zero(t, deps)

		stop = b.startWorker(t, nodeImpl, workerSpec{})
		b.waitFinal(t, parent, 1)
		stop()
		require.Equal(t, "completed", b.nodeState(t, parent))
		names := []string{}
		for _, e := range b.events(t) {
			if e.JobID == parent && e.Name == drover.EventWaiting {
				names = append(names, e.Prev)
			}
		}
		require.Equal(t, []string{"waiting-children"}, names, "the release event BullMQ writes")
	})

	t.Run("FailParentOnFailure", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids, err := b.oracle.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{
			Name: "report", QueueName: queueName,
			Children: []bullmqoracle.FlowJob{
				{Name: "bad", QueueName: partsQueue, Opts: map[string]any{"failParentOnFailure": true}},
				{Name: "slow", QueueName: partsQueue, Opts: map[string]any{"delay": 60000}},
			},
		})
		require.NoError(t, err)
		stop := partsWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("child broke")
		})
		waitForNodeState(t, b, ids.ID, "waiting")
		stop()
		stop = b.startWorker(t, nodeImpl, workerSpec{})
		waitForNodeState(t, b, ids.ID, "failed")
		stop()
		nj, err := b.oracle.GetJob(ctx, b.prefix, queueName, ids.ID)
		require.NoError(t, err)
		require.Equal(t, "child "+b.prefix+":"+partsQueue+":"+ids.Children[0].ID+" failed", nj.FailedReason)
	})

	t.Run("IgnoreDependencyOnFailure", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids, err := b.oracle.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{
			Name: "report", QueueName: queueName,
			Children: []bullmqoracle.FlowJob{
				{Name: "bad", QueueName: partsQueue, Opts: map[string]any{"ignoreDependencyOnFailure": true}},
			},
		})
		require.NoError(t, err)
		stop := partsWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("optional part failed")
		})
		waitForNodeState(t, b, ids.ID, "waiting")
		stop()
		failed, err := b.rdb.HGetAll(ctx, b.prefix+":"+queueName+":"+ids.ID+":failed").Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{b.prefix + ":" + partsQueue + ":" + ids.Children[0].ID: "optional part failed"}, failed)
		stop = b.startWorker(t, nodeImpl, workerSpec{})
		waitForNodeState(t, b, ids.ID, "completed")
		stop()
	})
}

// partsQueue holds the children of the flows in TestInteropFlows.
const partsQueue = "parts"

// partsWorker runs a drover worker on partsQueue until the returned stop.
func partsWorker(t *testing.T, b *bundle, proc drover.ProcessorFunc) (stop func()) {
	t.Helper()
	w, err := drover.NewWorker(b.rdb, partsQueue, proc, &drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	return func() { require.NoError(t, w.Close(context.Background())) }
}

func (b *bundle) nodeState(t *testing.T, id string) string {
	t.Helper()
	s, err := b.oracle.GetState(context.Background(), b.prefix, queueName, id)
	require.NoError(t, err)
	return s
}

func waitForNodeState(t *testing.T, b *bundle, id, state string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if b.nodeState(t, id) == state {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s never reached %s (now %s)", id, state, b.nodeState(t, id))
}
