//go:build cluster

package clustertest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
)

// BenchmarkClusterThroughput measures end-to-end throughput (AddBulk by
// producers while workers complete the jobs) on the shared 3-master cluster,
// with the same 6 queues, workers and jobs either all on one master's slots
// (masters=1) or 2 per master (masters=3). Each queue has one in-process
// worker with concurrency 50, a no-op processor and RemoveOnComplete.
// b.N is the number of jobs; the jobs/s metric is the figure to compare.
// Two more metrics say where the time went: master-µs/job is the CPU time
// all masters spent per job, busiest-master-% the busiest master's CPU use
// over the run (100 = one core):
//
//	go test -tags cluster -run '^$' -bench ClusterThroughput -benchtime 60000x ./internal/testkit/clustertest/
func BenchmarkClusterThroughput(b *testing.B) {
	const queues = 6
	for _, masters := range []int{1, 3} {
		b.Run(fmt.Sprintf("masters=%d", masters), func(b *testing.B) {
			benchThroughput(b, masters, queues)
		})
	}
}

func benchThroughput(b *testing.B, masters, queues int) {
	ctx := context.Background()
	c, rdb := clusterClient(b)
	prefix := testPrefix(b, rdb, false)
	shards, tags, err := c.TagsByMaster(ctx, prefix+"-", queues)
	require.NoError(b, err)
	names := make([]string, queues)
	used := map[string]bool{}
	for i := range names {
		si := i % masters
		names[i] = "q{" + tags[si][i/masters] + "}"
		m, err := c.MasterOf(ctx, keys.Slot(names[i]))
		require.NoError(b, err)
		require.Equal(b, shards[si].Master, m)
		used[m] = true
	}
	require.Len(b, used, masters)

	var done atomic.Int64
	target := int64(b.N)
	finished := make(chan struct{})
	var once sync.Once
	qs := make([]*drover.Queue, queues)
	for i, name := range names {
		qs[i] = newQueue(b, rdb, prefix, name)
		startWorker(b, rdb, prefix, name, func(context.Context, *drover.Job) (any, error) { return nil, nil },
			&drover.WorkerOptions{Concurrency: 50, RemoveOnComplete: &drover.Retention{Remove: true},
				Hooks: &drover.WorkerHooks{JobFinished: func(_ *drover.Job, outcome drover.Outcome, _ time.Duration, _ error) {
					if outcome == drover.OutcomeCompleted && done.Add(1) == target {
						once.Do(func() { close(finished) })
					}
				}}})
	}

	cpu := func() []time.Duration {
		out := make([]time.Duration, len(shards))
		for i, sh := range shards {
			if d, err := c.Node(sh.Master).CPUTime(); err == nil {
				out[i] = d
			}
		}
		return out
	}
	cpuBefore := cpu()

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, q := range qs {
		n := b.N / queues
		if i < b.N%queues {
			n++
		}
		wg.Go(func() {
			for from := 0; from < n; from += 1000 {
				jobs := make([]drover.BulkJob, min(1000, n-from))
				for j := range jobs {
					jobs[j] = drover.BulkJob{Name: "n"}
				}
				if _, err := q.AddBulk(ctx, jobs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d jobs completed", done.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	var sum, busiest time.Duration
	for i, d := range cpu() {
		d -= cpuBefore[i]
		sum += d
		busiest = max(busiest, d)
	}
	if sum > 0 {
		b.ReportMetric(float64(sum.Microseconds())/float64(b.N), "master-µs/job")
		b.ReportMetric(100*busiest.Seconds()/elapsed.Seconds(), "busiest-master-%")
	}
}
