package drover_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
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

// TestWorkerCutOffPastItsLockStopsItsJob: the network between worker A and
// Redis turns into a black hole (nothing arrives either way, nothing is
// closed) while A runs a job, for longer than the job's lock lasts, while
// worker B still reaches Redis. B's stalled checker finds the lock expired
// and B runs the job again. By the time B starts it, A's processor must
// have been told to stop (its context cancelled with cause ErrLockLost):
// A cannot renew the lock, so once its last renewal's lifetime has run
// out the lock is gone for certain. Before, A's processor ran on, unaware,
// beside B's for as long as the black hole lasted, and learnt of the loss
// only when the network came back. The job completes once (B's result),
// A writes nothing, and A takes new jobs once the network is back.
func TestWorkerCutOffPastItsLockStopsItsJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, viaProxy := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	type start struct {
		worker   string
		attempt  int
		aStopped error // A's first run's context cause when this run began
	}
	starts := make(chan start, 10)
	var aCtx atomic.Pointer[context.Context]
	aStoppedAt := make(chan error, 1)
	logsA := &testkit.SyncBuffer{}
	lostA := make(chan string, 4)
	a, err := drover.NewWorker(viaProxy, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.ID != "long" {
			return "a", nil
		}
		aCtx.Store(&ctx)
		starts <- start{worker: "a", attempt: job.AttemptsStarted}
		select {
		case <-ctx.Done():
			aStoppedAt <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-time.After(15 * time.Second):
			aStoppedAt <- nil
			return "a", nil
		}
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 2, LockDuration: time.Second, StalledInterval: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logsA, nil)),
		Hooks:  &drover.WorkerHooks{LockLost: func(job *drover.Job, reason string) { lostA <- reason }}})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = a.Close(cctx)
	})
	_, err = q.Add(ctx, "long", nil, &drover.JobOptions{JobID: "long", Attempts: 3})
	require.NoError(t, err)
	require.Equal(t, start{worker: "a", attempt: 1}, recv(t, starts))

	b, err := drover.NewWorker(direct, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		s := start{worker: "b", attempt: job.AttemptsStarted}
		if p := aCtx.Load(); p != nil {
			s.aStopped = context.Cause(*p)
		}
		starts <- s
		return "b", nil
	}), &drover.WorkerOptions{Prefix: prefix, LockDuration: time.Second, StalledInterval: time.Second})
	require.NoError(t, err)
	proxy.SetBlackhole(true)
	healed := false
	heal := func() {
		if !healed {
			healed = true
			proxy.SetBlackhole(false)
		}
	}
	defer heal()
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = b.Close(cctx)
	})

	// B recovers the job as stalled once A's lock has expired, and runs it.
	sb := recvWithin(t, starts, 10*time.Second, "B to run the stalled job")
	require.Equal(t, "b", sb.worker)
	require.Equal(t, 2, sb.attempt)
	require.ErrorIs(t, sb.aStopped, drover.ErrLockLost,
		"when B began the job, A's processor of it had not been told its lock was lost (the network to A is still a black hole)")
	require.ErrorIs(t, recvWithin(t, aStoppedAt, time.Second, "A's processor to stop"), drover.ErrLockLost)
	why := recv(t, lostA)
	t.Logf("A was told: %s", why)
	require.Contains(t, why, "no renewal")

	heal()
	testkit.WaitFor(t, 10*time.Second, "the job to complete", func() bool {
		return direct.ZScore(ctx, prefix+":q:completed", "long").Err() == nil
	})
	// A takes new jobs now that the network is back.
	require.NoError(t, b.Close(ctx))
	_, err = q.Add(ctx, "after", nil, &drover.JobOptions{JobID: "after"})
	require.NoError(t, err)
	testkit.WaitFor(t, 15*time.Second, "A to run a job after the black hole", func() bool {
		return direct.ZScore(ctx, prefix+":q:completed", "after").Err() == nil
	})
	require.Equal(t, "\"b\"", direct.HGet(ctx, prefix+":q:long", "returnvalue").Val(), "B's result stands")
	completions := 0
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" && m.Values["jobId"] == "long" {
			completions++
		}
	}
	require.Equal(t, 1, completions)
	require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val(), "nothing left in active")
	lostLines := 0
	for _, line := range strings.Split(logsA.String(), "\n") {
		if strings.Contains(line, "job lock lost") {
			lostLines++
		}
	}
	require.Equal(t, 1, lostLines, "A says once that it lost the lock:\n%s", logsA.String())
	select {
	case extra := <-lostA:
		t.Fatalf("A reported the lock lost again: %s", extra)
	default:
	}
}

// TestSlowNetworkShortLocks: worker A reaches Redis through a link that
// delays every packet by 200 ms each way, with locks of 2 s (renewed every
// 500 ms, each renewal taking 400 ms and more, a new connection over 1 s),
// while worker B, on a good link, runs jobs of the same queue and checks
// for stalled jobs every 200 ms. Jobs take 1.5 s. Whatever A's renewals
// manage, no job may run in two processors at once unless the earlier one
// had been told its lock was lost (context cancelled with ErrLockLost) when
// the later one began; every job completes once, nothing is left in
// active, and a job A lost is run again (a stall, as BullMQ would) rather
// than dropped.
func TestSlowNetworkShortLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, viaProxy := faultproxy.StartClient(t, srv.Addr, redis.Options{PoolSize: 20})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		running = map[string][]context.Context{} // job id -> contexts of the runs in progress
		overlap []string
		runs    atomic.Int64
	)
	process := func(name string) drover.ProcessorFunc {
		return func(ctx context.Context, job *drover.Job) (any, error) {
			runs.Add(1)
			mu.Lock()
			for _, other := range running[job.ID] {
				if !errors.Is(context.Cause(other), drover.ErrLockLost) {
					overlap = append(overlap, fmt.Sprintf("%s began job %s (attempt %d) while another run of it went on, not told of a lost lock (%v)",
						name, job.ID, job.AttemptsStarted, context.Cause(other)))
				}
			}
			running[job.ID] = append(running[job.ID], ctx)
			mu.Unlock()
			defer func() {
				mu.Lock()
				running[job.ID] = slices.DeleteFunc(running[job.ID], func(c context.Context) bool { return c == ctx })
				mu.Unlock()
			}()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(1500 * time.Millisecond):
				return name, nil
			}
		}
	}
	opts := func() *drover.WorkerOptions {
		return &drover.WorkerOptions{Prefix: prefix, Concurrency: 4, LockDuration: 2 * time.Second,
			StalledInterval: 200 * time.Millisecond, MaxStalledCount: 100}
	}
	proxy.SetLatency(200 * time.Millisecond)
	ao := opts()
	var lostA atomic.Int64
	ao.Hooks = &drover.WorkerHooks{LockLost: func(*drover.Job, string) { lostA.Add(1) }}
	a, err := drover.NewWorker(viaProxy, "q", process("a"), ao)
	require.NoError(t, err)
	b, err := drover.NewWorker(direct, "q", process("b"), opts())
	require.NoError(t, err)
	for _, w := range []*drover.Worker{a, b} {
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		})
	}
	const jobs = 24
	for i := range jobs {
		_, err := q.Add(ctx, "j", nil, &drover.JobOptions{JobID: fmt.Sprintf("j%d", i)})
		require.NoError(t, err)
	}
	testkit.WaitFor(t, 60*time.Second, "every job to complete", func() bool {
		return direct.ZCard(ctx, prefix+":q:completed").Val() == jobs
	})
	proxy.SetLatency(0)
	mu.Lock()
	require.Empty(t, overlap)
	mu.Unlock()
	completions, byA := map[string]int{}, 0
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" {
			completions[fmt.Sprint(m.Values["jobId"])]++
			if m.Values["returnvalue"] == "\"a\"" {
				byA++
			}
		}
	}
	require.Len(t, completions, jobs)
	for id, n := range completions {
		require.Equal(t, 1, n, "job %s completed once", id)
	}
	require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val(), "nothing left in active")
	t.Logf("%d runs for %d jobs; A completed %d and lost %d locks", runs.Load(), jobs, byA, lostA.Load())
}

// TestCancelReachesAWorkerWhoseSubscriptionWentHalfOpen: the connections
// between a worker and Redis go half-open (open, carrying nothing, no
// reset), its subscription to cancel requests among them; new connections
// work. Redis still counts the subscriber, so CancelJob publishes to it and
// returns nil though no one hears. The worker must notice that its
// subscription hears nothing and subscribe again: a CancelJob made again
// (once a second, as a caller whose cancel did not take would) then stops
// the attempt. Before, the worker stayed deaf to cancel requests for good
// (go-redis's pubsub health check only writes its pings), while every
// CancelJob returned nil.
func TestCancelReachesAWorkerWhoseSubscriptionWentHalfOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, direct, prefix, stopped := longJobOnAStrandedWorker(t)
	var cause error
	deadline := time.Now().Add(30 * time.Second)
	for cancelled := false; !cancelled; {
		require.True(t, time.Now().Before(deadline), "the attempt was not cancelled within 30 s of CancelJob once a second")
		err := q.CancelJob(ctx, "long", "stop", nil)
		require.NoError(t, err, "Redis still counts the half-open subscriber, or the new one")
		select {
		case cause = <-stopped:
			cancelled = true
		case <-time.After(time.Second):
		}
	}
	require.ErrorIs(t, cause, drover.ErrJobCancelled)
	testkit.WaitFor(t, 15*time.Second, "the job to fail as cancelled", func() bool {
		return direct.ZScore(ctx, prefix+":q:failed", "long").Err() == nil
	})
}

// TestCancelMissedByAHalfOpenSubscriptionStillStops: as above, but
// CancelJob is made once, while the worker's subscription is half-open:
// Redis counts the subscriber, so CancelJob returns nil and the message is
// lost on the dead connection. The worker must still stop the attempt,
// from the request the script kept for it, once it reads Redis again.
// Before, the request was lost for good (documented) and the attempt ran
// on for its whole 60 s.
func TestCancelMissedByAHalfOpenSubscriptionStillStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, direct, prefix, stopped := longJobOnAStrandedWorker(t)
	require.NoError(t, q.CancelJob(ctx, "long", "stop", nil), "Redis still counts the half-open subscriber")
	select {
	case cause := <-stopped:
		require.ErrorIs(t, cause, drover.ErrJobCancelled)
	case <-time.After(40 * time.Second):
		t.Fatal("the cancel made while the subscription was half-open never reached the attempt")
	}
	testkit.WaitFor(t, 15*time.Second, "the job to fail as cancelled", func() bool {
		return direct.ZScore(ctx, prefix+":q:failed", "long").Err() == nil
	})
}

// longJobOnAStrandedWorker starts a long job ("long", on queue "q") on a
// worker whose connection goes through a fault proxy (go-redis's default
// timeouts), then strands that proxy: the worker's subscription turns
// half-open. It returns a queue and a client both straight to Redis, the
// prefix, and the attempt's stopped channel (see startLongJobWorker).
func longJobOnAStrandedWorker(t *testing.T) (q *drover.Queue, direct *redis.Client, prefix string, stopped chan error) {
	t.Helper()
	srv := redistest.Shared(t)
	proxy, viaProxy := faultproxy.StartClient(t, srv.Addr, redis.Options{})
	direct, prefix = redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	started, stopped := startLongJobWorker(t, viaProxy, &drover.WorkerOptions{Prefix: prefix})
	_, err = q.Add(context.Background(), "long", nil, &drover.JobOptions{JobID: "long"})
	require.NoError(t, err)
	recv(t, started)
	proxy.Strand()
	return q, direct, prefix, stopped
}

// startLongJobWorker starts a worker on queue "q" whose every attempt runs
// 60 s unless cancelled, closed with the test. started gets a value when an
// attempt starts; stopped gets the attempt's context cause when it was
// cancelled, or nil when it ran its 60 s.
func startLongJobWorker(t *testing.T, rdb redis.UniversalClient, opts *drover.WorkerOptions) (started chan struct{}, stopped chan error) {
	t.Helper()
	started, stopped = make(chan struct{}, 1), make(chan error, 1)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			stopped <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-time.After(60 * time.Second):
			stopped <- nil
			return "ran on", nil
		}
	}), opts)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})
	return started, stopped
}
