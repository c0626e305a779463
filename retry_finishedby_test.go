package drover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestRetryFinishedBy: Job.Retry with FinishedBy moves a job that finished
// by then and refuses, leaving it as it is, one that finished later (it
// ran again since the caller chose it).
func TestRetryFinishedBy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 1})
	require.NoError(t, err)
	id := res.Job.ID
	b.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, errors.New("boom") }, nil)
	b.waitState(t, id, drover.StateFailed)
	j, err := b.queue.GetJob(ctx, id)
	require.NoError(t, err)
	finished := j.FinishedOn

	err = b.queue.Job(id).Retry(ctx, drover.StateFailed, &drover.RetryOptions{FinishedBy: finished.Add(-time.Millisecond)})
	require.ErrorIs(t, err, drover.ErrNotInState)
	require.ErrorContains(t, err, "finished again after")
	again, err := b.queue.GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, finished, again.FinishedOn, "untouched")
	st, err := b.queue.GetJobState(ctx, id)
	require.NoError(t, err)
	require.Equal(t, drover.StateFailed, st)

	require.NoError(t, b.queue.Job(id).Retry(ctx, drover.StateFailed, &drover.RetryOptions{FinishedBy: finished}))
}
