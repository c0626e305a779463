package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

func TestProbeCloseDrain(t *testing.T) {
	ctx := context.Background()
	b := setupQueue(t)
	started := make(chan struct{}, 10)
	causes := make(chan error, 10)
	var fin []drover.Finish
	w, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(ctx context.Context, j *drover.Job) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}), &drover.WorkerOptions{Prefix: b.prefix, Concurrency: 2, Middleware: []drover.WorkerMiddleware{{Finished: func(_ context.Context, j *drover.Job, f drover.Finish) { fin = append(fin, f) }}}})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	r, err := b.queue.Add(ctx, "long", nil, &drover.JobOptions{Attempts: 1})
	require.NoError(t, err)
	<-started
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	t.Log("close:", w.Close(cctx))
	t.Log("cause:", <-causes)
	j, err := b.queue.GetJob(ctx, r.Job.ID)
	require.NoError(t, err)
	s, _ := j.GetState(ctx)
	t.Log("state", s, "made", j.AttemptsMade, "started", j.AttemptsStarted, "fin", fin, "failedReason", j.FailedReason)
	// Pause while job runs, ctx cancelled
	w2 := b.startWorker(t, func(ctx context.Context, j *drover.Job) (any, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
		return "ok", nil
	}, nil)
	<-started
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Millisecond)
	t.Log("pause:", w2.Pause(pctx, nil), w2.IsPaused(), w2.IsRunning())
	pcancel()
	t.Log("resume:", w2.Resume())
	b.waitState(t, r.Job.ID, drover.StateCompleted)
}
