package drover_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// run adds n jobs and returns each job's start time, sorted.
	run := func(t *testing.T, b *testBundle, n int, opts *drover.WorkerOptions) []time.Time {
		t.Helper()
		var mu sync.Mutex
		var starts []time.Time
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return nil, nil
		}, opts)
		for range n {
			_, err := b.queue.Add(ctx, "x", nil, nil)
			require.NoError(t, err)
		}
		testkit.WaitFor(t, 10*time.Second, "all completed", func() bool {
			c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
			require.NoError(t, err)
			return c[drover.StateCompleted] == int64(n)
		})
		mu.Lock()
		defer mu.Unlock()
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		return starts
	}

	t.Run("GlobalLimitFromMeta", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		require.NoError(t, b.queue.SetGlobalRateLimit(ctx, 2, 400*time.Millisecond))
		starts := run(t, b, 6, &drover.WorkerOptions{Concurrency: 10})
		// Jobs 3 and 5 open new windows: they cannot start before the
		// previous window of 400 ms has ended.
		require.GreaterOrEqual(t, starts[2].Sub(starts[0]), 350*time.Millisecond)
		require.GreaterOrEqual(t, starts[4].Sub(starts[2]), 350*time.Millisecond)
	})

	t.Run("WorkerLimiter", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		starts := run(t, b, 4, &drover.WorkerOptions{Concurrency: 10, Limiter: &drover.RateLimit{Max: 1, Duration: 200 * time.Millisecond}})
		for i := 1; i < len(starts); i++ {
			require.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), 150*time.Millisecond)
		}
	})

	t.Run("GlobalConcurrency", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		require.NoError(t, b.queue.SetGlobalConcurrency(ctx, 1))
		var mu sync.Mutex
		running, peak := 0, 0
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			return nil, nil
		}, &drover.WorkerOptions{Concurrency: 5})
		for range 5 {
			_, err := b.queue.Add(ctx, "x", nil, nil)
			require.NoError(t, err)
		}
		testkit.WaitFor(t, 10*time.Second, "all completed", func() bool {
			c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
			require.NoError(t, err)
			return c[drover.StateCompleted] == 5
		})
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, 1, peak)
	})

	t.Run("BadLimits", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		require.ErrorIs(t, b.queue.SetGlobalRateLimit(ctx, 0, time.Second), drover.ErrInvalidOption)
		require.ErrorIs(t, b.queue.SetGlobalConcurrency(ctx, 0), drover.ErrInvalidOption)
		_, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) { return nil, nil }),
			&drover.WorkerOptions{Limiter: &drover.RateLimit{Max: 0, Duration: time.Second}})
		require.ErrorContains(t, err, "WorkerOptions.Limiter needs Max >= 1")
	})
}
