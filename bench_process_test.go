package drover_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seed40057009/drover"
)

// BenchmarkProcessPhase times only the processing of b.N jobs added in bulk
// before the timer starts (no-op processor, concurrency 100 or
// $DROVER_BENCH_CONCURRENCY, Redis on loopback), and reports what a throughput figure alone hides: the CPU the
// worker's process spent per job (getrusage, so the test binary's own
// goroutines count too, but none run during the phase) and the CPU Redis
// spent per job (INFO cpu, server side). It uses only API that existed
// before the worker redesign, so scripts/bench-ab.sh can copy this file
// into an older checkout and compare two revisions on the same harness:
//
//	go test -run '^$' -bench ProcessPhase -benchtime 300000x .
//	DROVER_BENCH_CONCURRENCY=1 go test -run '^$' -bench ProcessPhase -benchtime 20000x .
//
// DROVER_BENCH_REMOVE=1 adds the jobs with removeOnComplete, as
// make bench-compare does.
func BenchmarkProcessPhase(b *testing.B) {
	ctx := context.Background()
	concurrency := 100
	if s := os.Getenv("DROVER_BENCH_CONCURRENCY"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("DROVER_BENCH_CONCURRENCY=%q: want a whole number of at least 1", s)
		}
		concurrency = n
	}
	bundle := benchQueue(b)
	var opts *drover.JobOptions
	if os.Getenv("DROVER_BENCH_REMOVE") == "1" {
		opts = &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}
	}
	for from := 0; from < b.N; from += 1000 {
		jobs := make([]drover.BulkJob, min(1000, b.N-from))
		for i := range jobs {
			jobs[i] = drover.BulkJob{Name: "noop", Data: map[string]int{"i": from + i}, Opts: opts}
		}
		if _, err := bundle.queue.AddBulk(ctx, jobs); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	finished := make(chan struct{})
	n := int64(b.N)
	redis0, err := redisCPUSeconds(ctx, bundle)
	if err != nil {
		b.Fatal(err)
	}
	client0 := processCPU()
	b.ResetTimer()
	w, err := drover.NewWorker(bundle.rdb, bundle.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		if done.Add(1) == n {
			close(finished)
		}
		return nil, nil
	}), &drover.WorkerOptions{Prefix: bundle.prefix, Concurrency: concurrency})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	<-finished
	b.StopTimer()
	client1 := processCPU()
	redis1, err := redisCPUSeconds(ctx, bundle)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64((client1-client0).Microseconds())/float64(b.N), "client-µs/job")
	b.ReportMetric((redis1-redis0)*1e6/float64(b.N), "redis-µs/job")
}

// BenchmarkAddPhase times b.N single adds from 8 concurrent producers
// sharing one client (the add_single row of make bench-compare), and
// reports the worker-side and Redis-side CPU per add as BenchmarkProcessPhase
// does. Old API only, so bench-ab.sh's copy runs in older checkouts too:
//
//	go test -run '^$' -bench AddPhase -benchtime 50000x .
func BenchmarkAddPhase(b *testing.B) {
	ctx := context.Background()
	bundle := benchQueue(b)
	const producers = 8
	var next atomic.Int64
	redis0, err := redisCPUSeconds(ctx, bundle)
	if err != nil {
		b.Fatal(err)
	}
	client0 := processCPU()
	b.ResetTimer()
	errs := make(chan error, producers)
	for range producers {
		go func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, err := bundle.queue.Add(ctx, "noop", map[string]int64{"i": i}, nil); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	client1 := processCPU()
	redis1, err := redisCPUSeconds(ctx, bundle)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "adds/s")
	b.ReportMetric(float64((client1-client0).Microseconds())/float64(b.N), "client-µs/add")
	b.ReportMetric((redis1-redis0)*1e6/float64(b.N), "redis-µs/add")
}

// processCPU is the user+system CPU this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPUSeconds is used_cpu_user + used_cpu_sys of the server.
func redisCPUSeconds(ctx context.Context, bundle *testBundle) (float64, error) {
	info, err := bundle.rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			total += f
		}
	}
	return total, nil
}
