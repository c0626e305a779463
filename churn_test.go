package drover_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestWorkerChurnLosesNothing starts and closes workers while jobs flow, with
// close deadlines short enough to cancel running jobs. Every job must end
// completed: cancelled jobs go back to wait, and nothing stays active.
func TestWorkerChurnLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	const n = 2000
	_, err := b.queue.AddBulk(ctx, numberedJobs("work", n))
	require.NoError(t, err)

	var runs atomic.Int64
	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Add(1)
		select {
		case <-time.After(time.Duration(rand.IntN(3)) * time.Millisecond):
			return "ok", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				w, err := drover.NewWorker(b.rdb, b.name, proc, &drover.WorkerOptions{Prefix: b.prefix, Concurrency: 5 + g*10})
				require.NoError(t, err)
				require.NoError(t, w.Start(ctx))
				time.Sleep(time.Duration(20+rand.IntN(40)) * time.Millisecond)
				cctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(2))*time.Millisecond)
				require.NoError(t, w.Close(cctx))
				cancel()
			}
		}()
	}
	testkit.WaitFor(t, 60*time.Second, "all jobs completed", func() bool {
		c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return c[drover.StateCompleted] == n
	})
	close(stop)
	wg.Wait()
	counts, err := b.queue.GetJobCounts(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(n), counts[drover.StateCompleted])
	require.Zero(t, counts[drover.StateActive], "no job may be left active")
	require.Zero(t, counts[drover.StateWaiting])
	require.GreaterOrEqual(t, runs.Load(), int64(n))
	t.Logf("%d jobs, %d processor runs (%d re-runs after cancelled closes)", n, runs.Load(), runs.Load()-n)
}
