package drover_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// BenchmarkAddAndProcess adds b.N jobs in bulk and times a worker at
// concurrency 100 processing them all (no-op processor).
func BenchmarkAddAndProcess(b *testing.B) {
	ctx := context.Background()
	for _, conc := range []int{1, 100} {
		b.Run("c"+strconv.Itoa(conc), func(b *testing.B) {
			bundle := benchQueue(b)
			_, err := bundle.queue.AddBulk(ctx, numberedJobs("noop", b.N))
			require.NoError(b, err)
			var done atomic.Int64
			finished := make(chan struct{})
			n := int64(b.N)
			b.ResetTimer()
			w, err := drover.NewWorker(bundle.rdb, bundle.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
				if done.Add(1) == n {
					close(finished)
				}
				return nil, nil
			}), &drover.WorkerOptions{Prefix: bundle.prefix, Concurrency: conc})
			require.NoError(b, err)
			require.NoError(b, w.Start(ctx))
			<-finished
			testkit.WaitFor(b, time.Minute, "all completed", func() bool {
				c, err := bundle.queue.GetJobCounts(ctx, drover.StateCompleted)
				require.NoError(b, err)
				return c[drover.StateCompleted] == n
			})
			b.StopTimer()
			require.NoError(b, w.Close(ctx))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkAdd times single adds from one goroutine.
func BenchmarkAdd(b *testing.B) {
	ctx := context.Background()
	bundle := benchQueue(b)
	b.ReportAllocs()
	for b.Loop() {
		_, err := bundle.queue.Add(ctx, "noop", map[string]int{"i": 1}, nil)
		require.NoError(b, err)
	}
}

// BenchmarkAddBulk times bulk adds of 1,000 jobs.
func BenchmarkAddBulk(b *testing.B) {
	ctx := context.Background()
	bundle := benchQueue(b)
	jobs := numberedJobs("noop", 1000)
	b.ReportAllocs()
	for b.Loop() {
		_, err := bundle.queue.AddBulk(ctx, jobs)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "jobs/s")
}

func benchQueue(b *testing.B) *testBundle {
	b.Helper()
	return setupQueueTB(b)
}
