package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

func TestProbePauseBeforeStart(t *testing.T) {
	ctx := context.Background()
	b := setupQueue(t)
	w, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(ctx context.Context, j *drover.Job) (any, error) { return 1, nil }), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.NoError(t, w.Pause(ctx, nil))
	require.NoError(t, w.Start(ctx))
	r, err := b.queue.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	s, _ := b.queue.GetJobState(ctx, r.Job.ID)
	t.Log("paused state", s, w.IsRunning(), w.IsPaused())
	require.NoError(t, w.Resume())
	b.waitState(t, r.Job.ID, drover.StateCompleted)
	require.NoError(t, w.Close(ctx))
	wi, _ := b.queue.GetWorkers(ctx)
	t.Log("workers after close", len(wi))

	w2, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(ctx context.Context, j *drover.Job) (any, error) { return 1, nil }), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.NoError(t, w2.Pause(ctx, nil))
	t.Log("close paused unstarted:", w2.Close(ctx))
	var zw drover.Worker
	t.Log("zero worker close:", zw.Close(ctx), zw.IsRunning(), zw.IsPaused(), zw.ID())
	var zq drover.Queue
	_, err = zq.Add(ctx, "x", nil, nil)
	t.Log("zero queue add:", err, zq.Close())
	var zk drover.Kinds
	_, err = zk.Process(ctx, &drover.Job{Name: "x"})
	t.Log("zero kinds:", err)
	var qe drover.QueueEvents
	_, err = qe.Next(ctx)
	t.Log("zero qe:", err)
	err = qe.Run(ctx, func(drover.Event) error { return nil })
	t.Log("zero qe run:", err)
	var fp drover.FlowProducer
	_, err = fp.Add(ctx, drover.FlowJob{Name: "a", QueueName: "q"})
	t.Log("zero fp:", err)
	var j drover.Job
	_, err = j.GetState(ctx)
	t.Log("zero job:", err)
	_, err = j.WaitUntilFinished(ctx)
	t.Log("zero job wait:", err)
	t.Log("zero job ref:", j.Ref())
}
