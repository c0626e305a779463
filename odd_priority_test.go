package drover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestNaNPriorityKeepsTheJob: a job hash whose priority is "NaN" (another
// tool's). Lua's tonumber reads it as NaN, which is not 0, so every script
// that moved such a job to be run again sent it to the prioritized set
// with a NaN score: ZADD refused it after the job had left the set it was
// in, and the job was lost (BullMQ 6.7 loses it the same way, see
// TestDifferentialNaNPriority). The scripts now read it as 0, as the job
// decoder does, and the job goes to wait.
func TestNaNPriorityKeepsTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nan := func(t *testing.T, b *testBundle, id string) {
		t.Helper()
		require.NoError(t, b.rdb.HSet(ctx, b.prefix+":q:"+id, "priority", "NaN").Err())
	}
	failFirst := func(_ context.Context, job *drover.Job) (any, error) {
		if job.AttemptsStarted == 1 {
			return nil, errors.New("boom")
		}
		return "ok", nil
	}
	for _, tc := range []struct {
		name    string
		backoff *drover.Backoff
	}{
		{"RetriedAtOnce", nil}, // finishJobs "r"
		{"RetriedAfterBackoff", &drover.Backoff{Type: "fixed", Delay: 50 * time.Millisecond}}, // promotion in fetch
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 2, Backoff: tc.backoff})
			require.NoError(t, err)
			nan(t, b, res.Job.ID)
			b.startWorker(t, failFirst, nil)
			b.waitState(t, res.Job.ID, drover.StateCompleted)
		})
	}
	t.Run("Promote", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		nan(t, b, res.Job.ID)
		require.NoError(t, res.Job.Promote(ctx))
		requireState(t, b, res.Job.ID, drover.StateWaiting)
	})
	t.Run("RetryFailed", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		w := b.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, errors.New("boom") }, nil)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		require.NoError(t, w.Close(ctx))
		nan(t, b, res.Job.ID)
		require.NoError(t, res.Job.Retry(ctx, drover.StateFailed, nil))
		requireState(t, b, res.Job.ID, drover.StateWaiting)
	})
	t.Run("FlowParentReleased", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		tree, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Children: []drover.FlowJob{{Name: "child", QueueName: "q"}}})
		require.NoError(t, err)
		nan(t, b, tree.Ref.ID)
		b.startWorker(t, func(_ context.Context, job *drover.Job) (any, error) { return job.Name, nil }, nil)
		b.waitState(t, tree.Ref.ID, drover.StateCompleted)
	})
}

func requireState(t *testing.T, b *testBundle, id string, want drover.JobState) {
	t.Helper()
	s, err := b.queue.GetJobState(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, want, s)
}
