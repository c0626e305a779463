package drover_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWaitsWhileRedisIsPaused: Redis stops answering without closing its
// connections (SIGSTOP: a frozen host, a long fork, a partition) while a
// WaitUntilFinished and a QueueEvents.Run wait on it. Their contexts must
// still end them, and Queue.Close must not wait for Redis, as their docs
// say: the caller's deadline is its budget. Before, the go-redis client
// (ContextTimeoutEnabled off, its default) ignored ctx on the wire: a
// WaitUntilFinished under a 1 s context returned after 15.5 s, a cancelled
// Run after 10.1 s, and a Close behind a waiting call 8.8 s later.
func TestWaitsWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	added, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)

	qe, err := drover.NewQueueEvents(rdb, "q", nil)
	require.NoError(t, err)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	runDone := make(chan error, 1)
	go func() { runDone <- qe.Run(runCtx, func(drover.Event) error { return nil }) }()
	// A second Queue value has a wait of its own in flight when it closes.
	q2, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	wait2 := make(chan error, 1)
	go func() { _, err := q2.WaitUntilFinished(ctx, added.Job.ID); wait2 <- err }()
	waitCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	waitDone := make(chan error, 1)
	go func() { _, err := q.WaitUntilFinished(waitCtx, added.Job.ID); waitDone <- err }()

	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	// Each bound is well under what the client's timeouts take (10 s and
	// more), well over what the call's own deadline or Close take.
	const bound = 7 * time.Second
	select {
	case err := <-waitDone:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(bound):
		t.Fatal("WaitUntilFinished outlived its context while Redis was paused")
	}
	stopRun()
	select {
	case err := <-runDone:
		require.NoError(t, err)
	case <-time.After(bound):
		t.Fatal("QueueEvents.Run did not return when its context ended while Redis was paused")
	}
	closed := make(chan error, 1)
	go func() { closed <- q2.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(bound):
		t.Fatal("Queue.Close waited for a paused Redis")
	}
	select {
	case err := <-wait2:
		require.ErrorIs(t, err, drover.ErrClosed)
	case <-time.After(bound):
		t.Fatal("Close did not end the waiting call")
	}

	// Redis answers again: a new wait gets the job's end.
	requireDoneOnceAnswering(t, srv, rdb, q, added.Job.ID, nil)
}

// requireDoneOnceAnswering lets the paused srv answer again and runs a
// worker with opts on q (whose client is rdb) until job id completed, with
// "done".
func requireDoneOnceAnswering(t *testing.T, srv *redistest.Server, rdb redis.UniversalClient, q *drover.Queue, id string, opts *drover.WorkerOptions) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, srv.Signal(syscall.SIGCONT))
	w, err := drover.NewWorker(rdb, q.Name(), drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return "done", nil }), opts)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	defer func() { require.NoError(t, w.Close(ctx)) }()
	v, err := q.WaitUntilFinished(ctx, id)
	require.NoError(t, err)
	require.JSONEq(t, `"done"`, string(v))
}

// TestWorkerCloseWhileRedisIsPaused: Redis stops answering (SIGSTOP) while
// a worker runs a job. Close(1 s) must return the give-up error within
// ctx, the 5 s write grace and the client's read timeout of the result
// write in flight (sent inline: see writeResults), and the job must not be
// lost: once Redis answers, it completes.
// Before, Close took 45 s: the wake-up, the result write and its
// settlement, the lock renewal, the stalled check and the presence ping
// each waited out the client's timeouts (go-redis ignores ctx without
// ContextTimeoutEnabled).
func TestWorkerCloseWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	started := make(chan struct{})
	release := make(chan struct{})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		close(started)
		<-release
		return "done", nil
	}), &drover.WorkerOptions{LockDuration: 2 * time.Second, StalledInterval: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	added, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	<-started

	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	close(release)
	closed := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		closed <- w.Close(cctx)
	}()
	select {
	case err := <-closed:
		require.ErrorContains(t, err, "results were not written")
	case <-time.After(30 * time.Second): // 15-20 s here (the write's read timeout); before, 45 s
		t.Fatal("Close waited for a paused Redis")
	}

	// Redis answers again: the job is completed, by the write Close gave
	// up on or, its lock lost, by another worker once it is stalled.
	requireDoneOnceAnswering(t, srv, rdb, q, added.Job.ID, &drover.WorkerOptions{LockDuration: 2 * time.Second, StalledInterval: time.Second})
}

// TestWorkerCloseWhenRedisIsGone: Redis is killed under an idle worker
// (connections refused from then on), then the worker is closed, as
// `drover demo` is by a Ctrl-C. Close must not wait out the wake-up of a
// fetcher that has stopped already and then, one after the other, the
// delete of the wake key: the two share one 2 s budget. Before, Close
// took about 3.5 s (each write's dial retries run out its 2 s bound), now
// about 2 s (measured; the test bounds only a hang).
func TestWorkerCloseWhenRedisIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }), nil)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	require.NoError(t, srv.Signal(syscall.SIGKILL))
	time.Sleep(1500 * time.Millisecond) // the fetcher's wait fails and is retried

	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, w.Close(cctx))
	took := time.Since(start)
	t.Logf("Close took %s", took)
	// A hang guard, not a timing check: the gain (3.5 s to 2 s) was
	// measured, and a bound near it would fail on a loaded machine.
	require.Less(t, took, 10*time.Second, "Close waited on a Redis that is gone")
}
