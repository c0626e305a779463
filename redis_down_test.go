package drover_test

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCloseWhileRedisIsDown: the worker's Redis disappears while a job runs.
// Close must still return, bounded: it retries writing the result for a
// grace period, then gives up and says so (the job stays active in Redis for
// the stalled checker), and it leaves no goroutine behind (goleak in
// TestMain).
func TestCloseWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })

	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	started := make(chan struct{})
	release := make(chan struct{})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		close(started)
		<-release
		return "done", nil
	}), &drover.WorkerOptions{
		// Longer than the test: with 1 s, a loaded machine pausing the
		// test for a second after Redis went let the lock expire
		// unrenewed, the worker dropped the result on purpose ("job
		// lock lost: result not written"), and Close had none to report.
		LockDuration: 10 * time.Second,
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	<-started

	srv.Stop() // Redis is gone: the result cannot be written
	close(release)
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = w.Close(cctx)
	require.ErrorContains(t, err, "results were not written")
	require.Less(t, time.Since(t0), 30*time.Second, "Close is bounded")
	require.Equal(t, err, w.Close(ctx), "a second Close reports the first one's outcome")
}

// TestStartWhileRedisIsDown: a worker started while its Redis does not
// answer starts anyway (Start returns nil and says so in a warning), keeps
// retrying with backoff, processes the job added once Redis is up, and Close
// stops it. Before, Start returned the ping error and spent its once: a
// retried Start returned nil and started nothing.
func TestStartWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	port, err := redistest.FreePort()
	require.NoError(t, err)
	proxy, err := faultproxy.Start(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) // nothing listens there yet
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })

	var logs testkit.SyncBuffer
	done := make(chan string, 1)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		done <- job.ID
		return "ok", nil
	}), &drover.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx), "Start while Redis is down")
	require.Contains(t, logs.String(), "Redis does not answer")
	require.NoError(t, w.Start(ctx), "a second Start is a no-op")

	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	direct := srv.Client(t)
	q, err := drover.NewQueue(direct, "q", nil)
	require.NoError(t, err)
	id, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	proxy.SetTarget(srv.Addr) // Redis is back

	select {
	case got := <-done:
		require.Equal(t, id.Job.ID, got)
	case <-time.After(60 * time.Second):
		t.Fatalf("the job was not processed after Redis came up; worker log:\n%s", logs.String())
	}
	testkit.WaitFor(t, 30*time.Second, "the job completed", func() bool {
		st, err := q.GetJobState(ctx, id.Job.ID)
		return err == nil && st == drover.StateCompleted
	})
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))
}

// TestCloseDuringANetworkPartition: the network to Redis stops carrying
// anything (a partition, a paused server: connections stay open, no reset)
// while a worker waits for jobs. Close must end the worker's wait at once
// rather than wait for Redis to answer a wake-up: before, Close(500 ms)
// took over 10 s (the wake-up write timed out, the fetcher's blocking call
// ran out its block time and the read timeout, the wake key's deletion was
// retried), with ReadTimeout 1 s.
func TestCloseDuringANetworkPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: time.Second, WriteTimeout: time.Second})
	direct, prefix := redistest.Client(t)

	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	testkit.WaitFor(t, 10*time.Second, "the worker to wait for jobs", func() bool {
		for _, c := range strings.Split(direct.ClientList(ctx).Val(), "\n") {
			if strings.Contains(c, " name="+prefix+":") && strings.Contains(c, " flags=b ") {
				return true
			}
		}
		return false
	})

	proxy.SetBlackhole(true)
	defer proxy.SetBlackhole(false)
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	require.NoError(t, w.Close(cctx))
	// Bounded by the client's read timeout (a call in flight when Close
	// began runs out), not by a sum of them.
	require.Less(t, time.Since(t0), 5*time.Second, "Close returns about when its context ends")
}

// TestWorkerAfterRedisLosesEverything: the redis-server dies (SIGKILL) under
// a running worker and comes back on the same address empty (no
// persistence: every job, the queue's meta, the scripts are gone). The
// worker keeps running, processes the jobs added after the restart, and
// names its connection again, so a Queue's GetWorkers (as Node's
// getWorkers) lists it.
func TestWorkerAfterRedisLosesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	var done atomic.Int64
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		done.Add(1)
		return nil, nil
	}), &drover.WorkerOptions{Name: "survivor", Concurrency: 4, DrainDelay: 200 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	defer func() { require.NoError(t, w.Close(ctx)) }()
	for range 5 {
		_, err := q.Add(ctx, "before", nil, nil)
		require.NoError(t, err)
	}
	testkit.WaitFor(t, 10*time.Second, "the jobs before the crash", func() bool { return done.Load() == 5 })

	require.NoError(t, srv.Crash()) // SIGKILL, and back on the same address, empty
	// The new server starts empty: the jobs before the crash are gone (the
	// idle worker may already have written its own keys, such as its
	// stalled-check key).
	n, err := rdb.Exists(ctx, "bull:q:completed", "bull:q:id", "bull:q:events").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the new server starts empty")

	for range 5 {
		_, err := q.Add(ctx, "after", nil, nil)
		require.NoError(t, err)
	}
	testkit.WaitFor(t, 20*time.Second, "the jobs added after the restart", func() bool { return done.Load() == 10 })
	// A processor that returned has not yet had its result written: wait
	// for the writes, then no job may have run twice.
	want := map[drover.JobState]int64{drover.StateCompleted: 5, drover.StateWaiting: 0, drover.StateActive: 0}
	var counts map[drover.JobState]int64
	testkit.WaitFor(t, 20*time.Second, "the results written", func() bool {
		counts, err = q.GetJobCounts(ctx, drover.StateCompleted, drover.StateWaiting, drover.StateActive)
		return err == nil && maps.Equal(counts, want)
	})
	require.Equal(t, int64(10), done.Load(), "a job ran twice")
	testkit.WaitFor(t, 20*time.Second, "the worker's named connection again", func() bool {
		ws, err := q.GetWorkers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Name == "survivor"
	})
}

// TestNoAcknowledgedJobLostWhenRedisCrashesWithAOF: a producer adds jobs
// and a worker runs them while the redis-server, with appendfsync always,
// is killed (SIGKILL) and restarted from its file. Every add that returned
// nil is there after the restart and ends completed, and each completes
// once: one completed event per job in the events stream, which is
// persisted with them. A job whose attempt was running at the crash is
// finished by its worker or re-run once its lock expires (at least once
// for the processor; once in Redis).
func TestNoAcknowledgedJobLostWhenRedisCrashesWithAOF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--appendonly", "yes", "--appendfsync", "always")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		time.Sleep(time.Millisecond)
		return nil, nil
	}), &drover.WorkerOptions{Concurrency: 8, DrainDelay: 200 * time.Millisecond,
		// 3 s: at load 40 a 1 s lock went unrenewed long enough for a
		// healthy job to stall twice and fail, never to complete.
		LockDuration: 3 * time.Second, StalledInterval: 500 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	defer func() { require.NoError(t, w.Close(ctx)) }()

	var acked []string
	crashed := false
	for n := 0; n < 400; n++ {
		if n == 200 {
			require.NoError(t, srv.Crash())
			crashed = true
		}
		id := "j" + strconv.Itoa(n)
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := q.Add(actx, "x", nil, &drover.JobOptions{JobID: id})
		cancel()
		if err == nil {
			acked = append(acked, id)
		}
	}
	require.True(t, crashed)
	require.Greater(t, len(acked), 300, "most adds were acknowledged")
	testkit.WaitFor(t, 60*time.Second, "every acknowledged job completed", func() bool {
		n, err := rdb.ZCard(ctx, "bull:q:completed").Result()
		return err == nil && n >= int64(len(acked))
	})
	for _, id := range acked {
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateCompleted, st, id)
	}
	events, err := rdb.XRange(ctx, "bull:q:events", "-", "+").Result()
	require.NoError(t, err)
	completions := map[string]int{}
	for _, e := range events {
		if e.Values["event"] == "completed" {
			completions[e.Values["jobId"].(string)]++
		}
	}
	for _, id := range acked {
		require.Equal(t, 1, completions[id], "completed events of %s", id)
	}
}
