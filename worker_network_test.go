package drover_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWorkerNetworkFaultsUnderLoad: a proxy between a worker at
// concurrency 100 and a real redis-server resets every connection again
// and again while batches of finishes are in flight, delayed jobs come
// due and locks are renewed, then refuses connections for a second (the
// blocking fetch and everything else fail to reconnect), then lets them
// through. Every job must complete, each once in Redis (one completed
// event a job), none left in active; the worker must go on taking jobs
// after the outage; its warnings must come per outage, not per job; and
// Close must leave no goroutine of its own behind. Not parallel: it counts
// the process's goroutines.
func TestWorkerNetworkFaultsUnderLoad(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond, PoolSize: 120})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	const now, later = 1500, 100
	for i := range now {
		_, err := q.Add(ctx, "now", nil, &drover.JobOptions{JobID: fmt.Sprintf("n%d", i)})
		require.NoError(t, err)
	}
	for i := range later { // due during the resets
		_, err := q.Add(ctx, "later", nil, &drover.JobOptions{JobID: fmt.Sprintf("l%d", i),
			Delay: time.Duration(200+i*10) * time.Millisecond})
		require.NoError(t, err)
	}

	before := len(droverGoroutines())
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		time.Sleep(100 * time.Millisecond) // 1,500 jobs: about 1.5 s at concurrency 100, through the faults
		return "ok", nil
	}), &drover.WorkerOptions{
		Prefix: prefix, Concurrency: 100,
		// Renewed every 500 ms, so renewals meet the resets too; a job
		// whose lock lapses is recovered by the stalled checker.
		LockDuration: 2 * time.Second, StalledInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	closed := false
	t.Cleanup(func() {
		if !closed {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		}
	})

	for range 8 {
		time.Sleep(150 * time.Millisecond)
		proxy.ResetAll()
	}
	require.Less(t, direct.ZCard(ctx, prefix+":q:completed").Val(), int64(now), "the resets came while jobs ran")
	proxy.Refuse()
	proxy.ResetAll()
	time.Sleep(time.Second)
	require.NoError(t, proxy.Listen())

	total := int64(now + later)
	testkit.WaitFor(t, 30*time.Second, "every job to complete", func() bool {
		return direct.ZCard(ctx, prefix+":q:completed").Val() == total
	})
	// Still working after the outage.
	_, err = q.Add(ctx, "after", nil, &drover.JobOptions{JobID: "after"})
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "a job added after the outage to complete", func() bool {
		return direct.ZCard(ctx, prefix+":q:completed").Val() == total+1
	})
	require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val(), "nothing left in active")
	stalls := 0
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "stalled" {
			stalls++
		}
	}
	t.Logf("%d jobs stalled and were recovered", stalls)

	completions := map[string]int{}
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" {
			completions[fmt.Sprint(m.Values["jobId"])]++
		}
	}
	require.Len(t, completions, int(total+1), "a completed event for every job")
	for id, n := range completions {
		require.Equal(t, 1, n, "job %s completed once", id)
	}

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))
	closed = true
	// The proxy's goroutines (two an open connection, and the client's
	// pool keeps its connections) are not the worker's: count drover's.
	deadline := time.Now().Add(5 * time.Second)
	for left := droverGoroutines(); len(left) > before; left = droverGoroutines() {
		if time.Now().After(deadline) {
			t.Fatalf("%d drover goroutines before the worker, %d after Close:\n%s", before, len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	warnings := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warnings++
		}
	}
	t.Logf("%d warnings for 9 resets and a 1 s refusal, %d jobs", warnings, total)
	require.NotContains(t, logs.String(), "result not written", "no result reported unwritten")
	require.Less(t, warnings, 200, "warnings per outage, not per job:\n%s", logs.String())
}

// droverGoroutines returns the stacks of the goroutines running drover's
// own code (not its tests' or test kit's).
func droverGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, line := range strings.Split(g, "\n") {
			if strings.HasPrefix(line, "github.com/seed40057009/drover") && !strings.Contains(line, "/testkit/") &&
				!strings.Contains(line, "_test.") && !strings.HasPrefix(line, "github.com/seed40057009/drover_test") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// TestWorkerLockRenewalsCutOff: the network between a worker and Redis
// stops carrying anything (a black hole) for longer than a running job's
// lock lasts, so its renewals fail and the lock expires, then comes back.
// The job must not be completed twice: either the worker still owned it,
// or the stalled checker took it back and it ran again and completed once.
// Nothing may be left in active, and the worker takes new jobs after.
func TestWorkerLockRenewalsCutOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	started := make(chan int, 10)
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		started <- job.AttemptsStarted
		if job.Name == "long" && job.AttemptsStarted == 1 {
			time.Sleep(3 * time.Second)
		}
		return "ok", nil
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 2, LockDuration: time.Second, StalledInterval: time.Second,
		MaxStalledCount: 2, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})
	_, err = q.Add(ctx, "long", nil, &drover.JobOptions{JobID: "long"})
	require.NoError(t, err)
	require.Equal(t, 1, recv(t, started))
	proxy.SetBlackhole(true)
	time.Sleep(2 * time.Second) // the lock (1 s) expires unrenewed
	proxy.SetBlackhole(false)

	_, err = q.Add(ctx, "after", nil, &drover.JobOptions{JobID: "after"})
	require.NoError(t, err)
	testkit.WaitFor(t, 15*time.Second, "both jobs to complete", func() bool {
		return direct.ZCard(ctx, prefix+":q:completed").Val() == 2
	})
	require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val(), "nothing left in active")
	completions := map[string]int{}
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" {
			completions[fmt.Sprint(m.Values["jobId"])]++
		}
	}
	require.Equal(t, map[string]int{"long": 1, "after": 1}, completions, "logs:\n%s", logs.String())
}
