package drover_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// pausedCallTimeout is the context of each call of callWhilePaused. It was
// 1 s, and on a loaded CI machine (-race, load 38) a call's goroutine
// reached Redis only after its context had ended: the write was never
// sent, so its error rightly did not say the outcome was unknown, and
// TestWritesWhileRedisIsPaused failed ("drain queue: context deadline
// exceeded" without ErrOutcomeUnknown).
const pausedCallTimeout = 3 * time.Second

// pausedCallBound is how long callWhilePaused waits for the calls to
// return: well past pausedCallTimeout, well before the client's own 15 s
// read timeout, which a call that ignored its context would wait out.
const pausedCallBound = 12 * time.Second

// errWriteUnknown is what a write that got no answer before its ctx ended
// must wrap, besides ctx.Err().
var errWriteUnknown = drover.ErrOutcomeUnknown

// TestWritesWhileRedisIsPaused: Redis stops answering without closing its
// connections (SIGSTOP) while adds and admin writes run under a 3 s
// context (callWhilePaused). Each must return when its context ends, with an error that
// wraps ctx.Err() and says the write's outcome is unknown (the adds:
// ErrAddInDoubt). Once Redis answers again, adding with the same job id
// stores the job once. Before, each call waited out the client's read
// timeout (15 s here) and returned a bare i/o timeout.
func TestWritesWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	_, err = q.Add(ctx, "warm-up", nil, &drover.JobOptions{JobID: "a"})
	require.NoError(t, err)
	flows, err := drover.NewFlowProducer(rdb, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, flows.Close()) }()

	calls := map[string]func(context.Context) error{
		"Add": func(ctx context.Context) error {
			_, err := q.Add(ctx, "x", nil, &drover.JobOptions{JobID: "x"})
			return err
		},
		"AddBulk": func(ctx context.Context) error {
			_, err := q.AddBulk(ctx, []drover.BulkJob{{Name: "b", Opts: &drover.JobOptions{JobID: "b"}}})
			return err
		},
		"FlowProducer.Add": func(ctx context.Context) error {
			_, err := flows.Add(ctx, drover.FlowJob{Name: "p", QueueName: "q", Opts: &drover.JobOptions{JobID: "p"},
				Children: []drover.FlowJob{{Name: "c", QueueName: "q"}}})
			return err
		},
		"Job.Retry":       func(ctx context.Context) error { return q.Job("a").Retry(ctx, drover.StateFailed, nil) },
		"Job.Promote":     func(ctx context.Context) error { return q.Job("a").Promote(ctx) },
		"Job.Remove":      func(ctx context.Context) error { return q.Job("a").Remove(ctx, nil) },
		"Job.RetryNow":    func(ctx context.Context) error { return q.Job("a").RetryNow(ctx, nil) },
		"Queue.Pause":     func(ctx context.Context) error { return q.Pause(ctx) },
		"Queue.Resume":    func(ctx context.Context) error { return q.Resume(ctx) },
		"Queue.RateLimit": func(ctx context.Context) error { return q.RateLimit(ctx, time.Second) },
		"Queue.RetryJobs": func(ctx context.Context) error { _, err := q.RetryJobs(ctx, nil); return err },
		"Queue.Drain":     func(ctx context.Context) error { _, err := q.Drain(ctx, false); return err },
		"Queue.Clean": func(ctx context.Context) error {
			_, err := q.Clean(ctx, 0, 10, drover.StateCompleted)
			return err
		},
		"Queue.SetGlobalConcurrency": func(ctx context.Context) error { return q.SetGlobalConcurrency(ctx, 3) },
	}

	errs := callWhilePaused(t, srv, calls)
	for name, err := range errs {
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.ErrorIs(t, err, errWriteUnknown, name)
		require.ErrorContains(t, err, "outcome unknown", name)
	}
	for _, name := range []string{"Add", "AddBulk", "FlowProducer.Add"} {
		require.ErrorIs(t, errs[name], drover.ErrAddInDoubt, name)
	}
	var bulkErr *drover.AddBulkError
	require.ErrorAs(t, errs["AddBulk"], &bulkErr)
	require.Equal(t, 1, bulkErr.Unknown)

	// Redis answers again: an add with the same id stores the job once,
	// whether or not the abandoned one ran.
	require.NoError(t, srv.Signal(syscall.SIGCONT))
	res, err := q.Add(ctx, "x", nil, &drover.JobOptions{JobID: "x"})
	require.NoError(t, err)
	require.Contains(t, []drover.AddOutcome{drover.AddCreated, drover.AddDuplicate}, res.Outcome)
	n, err := rdb.Exists(ctx, "bull:q:x").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// TestJobWritesWhileRedisIsPaused: as TestWritesWhileRedisIsPaused, for
// the writes a processor or a manual worker makes on a job (progress,
// data, logs, lock extension, taking and finishing jobs by hand) under a
// 3 s context. Before, each waited out the client's read timeout.
func TestJobWritesWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close(ctx)) }()
	const token = "tok"
	taken := map[string]*drover.Job{}
	for _, id := range []string{"c", "cn", "f", "fn", "d", "w", "x"} {
		_, err := q.Add(ctx, "m", map[string]int{"n": 1}, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	for range 7 {
		job, err := w.NextJob(ctx, token, 0)
		require.NoError(t, err)
		require.NotNil(t, job)
		taken[job.ID] = job
	}
	_, err = q.Add(ctx, "m", nil, &drover.JobOptions{JobID: "next"})
	require.NoError(t, err)

	calls := map[string]func(context.Context) error{
		"Job.UpdateProgress": func(ctx context.Context) error { return taken["x"].UpdateProgress(ctx, 50) },
		"Job.UpdateData":     func(ctx context.Context) error { return taken["x"].UpdateData(ctx, map[string]int{"n": 2}) },
		"Job.Log":            func(ctx context.Context) error { _, err := taken["x"].Log(ctx, "line"); return err },
		"Job.ClearLogs":      func(ctx context.Context) error { return taken["x"].ClearLogs(ctx, 1) },
		"Job.ExtendLock":     func(ctx context.Context) error { return taken["x"].ExtendLock(ctx, token, time.Minute) },
		"Worker.NextJob":     func(ctx context.Context) error { _, err := w.NextJob(ctx, token, 0); return err },
		"Job.Complete":       func(ctx context.Context) error { return taken["c"].Complete(ctx, token, 1) },
		"Job.CompleteAndNext": func(ctx context.Context) error {
			_, err := taken["cn"].CompleteAndNext(ctx, token, 1)
			return err
		},
		"Job.Fail": func(ctx context.Context) error { return taken["f"].Fail(ctx, token, errors.New("boom")) },
		"Job.FailAndNext": func(ctx context.Context) error {
			_, err := taken["fn"].FailAndNext(ctx, token, errors.New("boom"))
			return err
		},
		"Job.MoveToDelayed": func(ctx context.Context) error {
			return taken["d"].MoveToDelayed(ctx, token, time.Now().Add(time.Hour))
		},
		"Job.MoveToWait": func(ctx context.Context) error { return taken["w"].MoveToWait(ctx, token) },
	}

	errs := callWhilePaused(t, srv, calls)
	require.NoError(t, srv.Signal(syscall.SIGCONT))
	for name, err := range errs {
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.ErrorIs(t, err, errWriteUnknown, name)
	}
}

// TestNextJobWaitWhileRedisIsPaused: a manual worker's NextJob waits for
// a job (blocking on the marker) under a 2 s context, and Redis stops
// answering during the wait. NextJob must return when its context ends,
// with an error wrapping ctx.Err().
func TestNextJobWaitWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	_, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", nil, nil)
	require.NoError(t, err)
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		require.NoError(t, w.Close(cctx))
	}()

	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	returned := make(chan error, 1)
	go func() {
		_, err := w.NextJob(cctx, "tok", 10*time.Second)
		returned <- err
	}()
	testkit.WaitFor(t, 5*time.Second, "NextJob to wait for a job", func() bool {
		return strings.Contains(rdb.ClientList(ctx).Val(), " cmd=bzpopmin ")
	})
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	defer func() { _ = srv.Signal(syscall.SIGCONT) }()
	select {
	case err := <-returned:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(6 * time.Second): // the wait's 10 s and the client's 15 s read timeout are far later
		require.NoError(t, srv.Signal(syscall.SIGCONT))
		t.Fatal("NextJob still waiting for a paused Redis 6 s after its 2 s context began")
	}
}

// callWhilePaused pauses srv (SIGSTOP), runs every call at once under a
// pausedCallTimeout context and returns their errors once all have
// returned; it fails the test, naming the calls still waiting, if any is
// after pausedCallBound (well under the client's 15 s read timeout). srv
// stays paused.
func callWhilePaused(t *testing.T, srv *redistest.Server, calls map[string]func(context.Context) error) map[string]error {
	t.Helper()
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	var wg sync.WaitGroup
	errs := make(map[string]error, len(calls))
	var mu sync.Mutex
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(context.Background(), pausedCallTimeout)
			defer cancel()
			err := call(cctx)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(pausedCallBound):
		mu.Lock()
		var late []string
		for name := range calls {
			if _, ok := errs[name]; !ok {
				late = append(late, name)
			}
		}
		mu.Unlock()
		require.NoError(t, srv.Signal(syscall.SIGCONT))
		t.Fatalf("still waiting for a paused Redis after %s: %v", pausedCallBound, late)
	}
	return errs
}

// TestJobWritesWithoutClientTimeoutsWhileRedisIsPaused: with the client's
// read and write timeouts switched off, nothing but the caller's deadline
// can end a job's write while Redis is paused. Before, such a client's
// UpdateProgress under a 1 s deadline waited for ever (the bound was
// skipped as if the client's timeouts came first).
func TestJobWritesWithoutClientTimeoutsWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: -1, WriteTimeout: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	res, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	errs := callWhilePaused(t, srv, map[string]func(context.Context) error{
		"Job.UpdateProgress": func(ctx context.Context) error { return res.Job.UpdateProgress(ctx, 1) },
	})
	require.NoError(t, srv.Signal(syscall.SIGCONT))
	require.ErrorIs(t, errs["Job.UpdateProgress"], context.DeadlineExceeded)
	require.ErrorIs(t, errs["Job.UpdateProgress"], errWriteUnknown)
}
