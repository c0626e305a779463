package drover_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestManualRateLimit: a processor that calls Worker.RateLimit and returns
// ErrRateLimited puts its job back without spending an attempt, its worker
// (which has no Limiter) takes no job until the limit ends, and the attempt
// is reported as OutcomeRateLimited.
func TestManualRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	const limit = 600 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Time
	var outcomes []drover.Outcome
	var w atomic.Pointer[drover.Worker]
	w.Store(b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		n := len(starts)
		mu.Unlock()
		if n == 1 {
			require.NoError(t, w.Load().RateLimit(ctx, limit))
			return nil, drover.ErrRateLimited
		}
		return "ok", nil
	}, &drover.WorkerOptions{Concurrency: 4, Hooks: &drover.WorkerHooks{
		JobFinished: func(job *drover.Job, o drover.Outcome, _ time.Duration, _ error) {
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		},
	}}))
	added, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 1})
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "job completed", func() bool {
		s, err := b.queue.GetJobState(ctx, added.Job.ID)
		require.NoError(t, err)
		return s == drover.StateCompleted
	})
	// JobFinished runs once the result is written: wait for it too.
	testkit.WaitFor(t, 10*time.Second, "both outcomes reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes) == 2
	})
	got, err := b.queue.GetJob(ctx, added.Job.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.AttemptsMade, "the rate-limited start spent no attempt (Attempts: 1, yet it completed)")
	require.Equal(t, 2, got.AttemptsStarted)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, 2)
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), limit-50*time.Millisecond, "the worker fetched before the limit ended")
	require.Equal(t, []drover.Outcome{drover.OutcomeRateLimited, drover.OutcomeCompleted}, outcomes)
	require.Equal(t, drover.OutcomeRateLimited, got.Timeline[0].Outcome, "the attempt timeline names it")
}

// TestManualRateLimitBadInput: a duration under 1ms or a negative maxJobs
// is refused with an error naming the problem, and Redis is not touched.
func TestManualRateLimitBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	keys := func() []string {
		k, err := b.rdb.Keys(ctx, b.prefix+"*").Result()
		require.NoError(t, err)
		return k
	}
	before := keys()
	for _, d := range []time.Duration{0, -time.Second, 500 * time.Microsecond} {
		err := b.queue.RateLimit(ctx, d)
		require.ErrorIs(t, err, drover.ErrInvalidOption, "%s", d)
		require.ErrorContains(t, err, "rate limit duration must be at least 1ms, got "+d.String())
	}
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.ErrorIs(t, w.RateLimit(ctx, -time.Millisecond), drover.ErrInvalidOption)
	_, err = b.queue.GetRateLimitTTL(ctx, -1)
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, "maxJobs >= 0")
	require.Equal(t, before, keys(), "refused calls wrote nothing")
}
