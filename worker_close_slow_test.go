package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// A processor that ignores its ctx and returns after Close's deadline and
// write grace have passed, while Redis answers all along: BullMQ's close()
// waits for it and writes its result. drover gave up writing it (the give-up
// meant for an unreachable Redis), so a job that completed stayed active
// until its lock expired and the stalled checker ran it again.
func TestWorkerCloseWritesResultOfSlowProcessor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	started := make(chan struct{})
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		close(started)
		time.Sleep(drover.CloseWriteGrace + 1500*time.Millisecond) // ignores ctx
		return "done", nil
	}), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	res, err := b.queue.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	<-started
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	require.NoError(t, w.Close(cctx), "Redis answered: every result could be written")
	job, err := b.queue.GetJob(ctx, res.Job.ID)
	require.NoError(t, err)
	state, err := job.GetState(ctx)
	require.NoError(t, err)
	require.Equal(t, drover.StateCompleted, state, "the processor returned a value; the job must not be left active for a second run")
	require.JSONEq(t, `"done"`, string(job.ReturnValue))
}
