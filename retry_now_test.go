package drover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
)

func TestRetryNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// setup leaves a job that failed twice and waits an hour for its third
	// and last attempt.
	setup := func(t *testing.T) (*testBundle, string) {
		t.Helper()
		b := setupQueue(t)
		require.NoError(t, b.queue.Pause(ctx)) // keep the promoted job in wait
		id := "j1"
		b.rdb.HSet(ctx, b.prefix+":q:"+id, "name", "x", "data", "{}", "opts", `{"attempts":3}`, "timestamp", 1,
			"delay", 3600000, "priority", 0, "atm", 2, "ats", 2, "failedReason", "boom", "processedOn", 4, "stacktrace", `["boom","boom"]`)
		due := time.Now().Add(time.Hour).UnixMilli()
		b.rdb.ZAdd(ctx, b.prefix+":q:delayed", redisZ(float64(keys.DelayedScore(due, 1)), id))
		return b, id
	}

	t.Run("ResetAttemptsAndPromote", func(t *testing.T) {
		t.Parallel()
		b, id := setup(t)
		require.NoError(t, b.queue.Job(id).RetryNow(ctx, &drover.RetryOptions{ResetAttemptsMade: true}))
		j, err := b.queue.GetJob(ctx, id)
		require.NoError(t, err)
		state, err := j.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
		require.Equal(t, 0, j.AttemptsMade)
		require.Equal(t, 2, j.AttemptsStarted)
		require.Len(t, j.Stacktrace, 2, "history is kept")
	})

	t.Run("WithoutResetIsPromote", func(t *testing.T) {
		t.Parallel()
		b, id := setup(t)
		require.NoError(t, b.queue.Job(id).RetryNow(ctx, nil))
		j, err := b.queue.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, 2, j.AttemptsMade)
		b.waitState(t, id, drover.StateWaiting)
	})

	t.Run("RefusalsTouchNothing", func(t *testing.T) {
		t.Parallel()
		b, _ := setup(t)
		err := b.queue.Job("missing").RetryNow(ctx, &drover.RetryOptions{ResetAttemptsMade: true})
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 3})
		require.NoError(t, err)
		b.rdb.HSet(ctx, b.prefix+":q:"+res.Job.ID, "atm", 1)
		err = res.Job.RetryNow(ctx, &drover.RetryOptions{ResetAttemptsMade: true})
		require.ErrorIs(t, err, drover.ErrNotInState)
		require.True(t, drover.IsRefusal(err))
		var je *drover.JobError
		require.True(t, errors.As(err, &je))
		j, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 1, j.AttemptsMade, "a refused reset writes nothing")
	})
}
