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

// TestInteropCancel: drover's cancel request and timeout option next to Node
// workers. A Node worker keeps running a job CancelJob names (it never
// subscribes; CancelJob says the request was not delivered) and runs a job
// with drover's "timeout" option without a limit; a drover worker on the
// same queue cancels its own job, which Node then reads as an ordinary
// failed job.
func TestInteropCancel(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	b := setup(t)

	// A drover worker takes the first job and holds it until cancelled.
	droverRunning := make(chan string, 1)
	w, err := drover.NewWorker(b.rdb, queueName, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		droverRunning <- job.ID
		<-ctx.Done()
		return nil, ctx.Err()
	}), &drover.WorkerOptions{Prefix: b.prefix, Name: workerName, DrainDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })
	byDrover := b.add(t, nodeImpl, jobSpec{name: "d", data: map[string]any{}, attempts: 3})
	require.Equal(t, byDrover, <-droverRunning)

	// A Node worker takes the next one, added by drover with a timeout, and
	// holds it until a key appears.
	release := b.prefix + ":release"
	nodeID := b.prefix + "-node"
	require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
		ID: nodeID, Name: workerName, Behavior: bullmqoracle.WaitKey(release, bullmqoracle.Return("node-done")),
	}))
	t.Cleanup(func() { _ = b.oracle.StopWorker(ctx, nodeID, false) })
	res, err := b.dq.Add(ctx, "n", map[string]any{}, &drover.JobOptions{Timeout: 20 * time.Millisecond})
	require.NoError(t, err)
	byNode := res.Job.ID
	testkit.WaitFor(t, waitLong, "the Node worker to take its job", func() bool {
		s, err := b.oracle.GetState(ctx, b.prefix, queueName, byNode)
		require.NoError(t, err)
		return s == "active"
	})
	nj, err := b.oracle.GetJob(ctx, b.prefix, queueName, byNode)
	require.NoError(t, err)
	require.EqualValues(t, 20, nj.Opts["timeout"], "Node keeps drover's timeout option")

	// Cancelling the Node-run job reaches nobody and changes nothing.
	err = b.dq.CancelJob(ctx, byNode, "from Go", nil)
	require.ErrorIs(t, err, drover.ErrCancelNotDelivered)
	require.ErrorContains(t, err, "Node BullMQ")

	// Cancelling the drover-run job fails it for good.
	require.NoError(t, b.dq.CancelJob(ctx, byDrover, "operator", nil))
	testkit.WaitFor(t, waitLong, "the drover job to fail", func() bool {
		s, err := b.oracle.GetState(ctx, b.prefix, queueName, byDrover)
		require.NoError(t, err)
		return s == "failed"
	})
	dj, err := b.oracle.GetJob(ctx, b.prefix, queueName, byDrover)
	require.NoError(t, err)
	require.Equal(t, "cancelled: operator", dj.FailedReason)
	require.EqualValues(t, 1, dj.AttemptsMade)

	// The Node job ran on, past drover's 20ms timeout, and completes.
	s, err := b.oracle.GetState(ctx, b.prefix, queueName, byNode)
	require.NoError(t, err)
	require.Equal(t, "active", s)
	require.NoError(t, b.rdb.Set(ctx, release, "1", time.Minute).Err())
	testkit.WaitFor(t, waitLong, "the Node job to complete", func() bool {
		s, err := b.oracle.GetState(ctx, b.prefix, queueName, byNode)
		require.NoError(t, err)
		return s == "completed"
	})
	nj, err = b.oracle.GetJob(ctx, b.prefix, queueName, byNode)
	require.NoError(t, err)
	var v string
	require.NoError(t, json.Unmarshal(nj.ReturnValue, &v))
	require.Equal(t, "node-done", v)
	evs, err := b.oracle.WorkerEvents(ctx, nodeID)
	require.NoError(t, err)
	for _, e := range evs {
		require.NotEqual(t, "error", e.Event, "the Node worker reported an error: %+v", e)
	}
}
