package drover_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// TestWorkerLostReplies: a proxy between a worker and a real redis-server
// lets the worker's fetch or finish script run and then loses its reply
// (reset connection), or holds the call while Redis cannot be reached and
// delivers it late, or loses the reply to (or resets) its blocking wait
// for jobs, when a job added meanwhile must still run. The worker must learn what the call did instead of
// sending it again: the result it wrote is reported written, and the jobs
// it took run now. Before, a resent finish call found its job done and
// reported "job result not written: the worker no longer owns the job",
// and the jobs the first run took sat in active, locked by nobody, until
// the stalled checker moved them back (LockDuration and more later, and
// counted as a stall).
func TestWorkerLostReplies(t *testing.T) {
	t.Parallel()

	type finish struct {
		name    string
		outcome drover.Outcome
		err     error
	}
	type testBundle struct {
		proxy    *faultproxy.Proxy
		direct   *redis.Client
		prefix   string
		queue    *drover.Queue
		logs     *testkit.SyncBuffer
		started  chan string
		finished chan finish
		release  chan struct{}
	}
	ctx := context.Background()

	// setup starts a worker (concurrency 1, through the proxy) that has
	// run a first job, so its scripts are loaded and the next dropped
	// reply is the one the test means. A job named "hold" runs until
	// release is closed.
	setup := func(t *testing.T, readTimeout time.Duration) *testBundle {
		t.Helper()
		srv := redistest.Shared(t)
		proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: readTimeout, MaxRetries: 1})
		direct, prefix := redistest.Client(t)
		q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		b := &testBundle{proxy: proxy, direct: direct, prefix: prefix, queue: q, logs: &testkit.SyncBuffer{},
			started: make(chan string, 10), finished: make(chan finish, 10), release: make(chan struct{})}
		w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			b.started <- job.Name
			switch {
			case job.Name == "hold":
				<-b.release
			case job.Name == "flaky" && job.AttemptsMade == 0:
				<-b.release
				return nil, errors.New("first attempt fails")
			}
			return "ok", nil
		}), &drover.WorkerOptions{
			Prefix: prefix, Concurrency: 1, DrainDelay: time.Second,
			// Far beyond the test's waits: only the worker itself can
			// run a job a lost reply left in active.
			LockDuration: time.Minute, StalledInterval: time.Minute,
			Logger: slog.New(slog.NewTextHandler(b.logs, nil)),
			Hooks: &drover.WorkerHooks{JobFinished: func(job *drover.Job, o drover.Outcome, _ time.Duration, err error) {
				b.finished <- finish{job.Name, o, err}
			}},
		})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		})
		_, err = q.Add(ctx, "warm-up", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "warm-up", recv(t, b.started))
		require.Equal(t, finish{"warm-up", drover.OutcomeCompleted, nil}, recv(t, b.finished))
		return b
	}

	// done checks that every job named ran once and completed, that
	// nothing is left in active, and that no result was reported unwritten.
	done := func(t *testing.T, b *testBundle, names ...string) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, "the jobs to complete", func() bool {
			return b.direct.ZCard(ctx, b.prefix+":q:completed").Val() == int64(len(names)+1)
		})
		require.Empty(t, b.direct.LRange(ctx, b.prefix+":q:active", 0, -1).Val(), "nothing left in active")
		for _, id := range b.direct.ZRange(ctx, b.prefix+":q:completed", 0, -1).Val() {
			job, err := b.queue.GetJob(ctx, id)
			require.NoError(t, err)
			require.Equal(t, 1, job.AttemptsStarted, "job %s (%s) started once", id, job.Name)
			require.Zero(t, job.StalledCount, "job %s (%s) never stalled", id, job.Name)
		}
		require.NotContains(t, b.logs.String(), "result not written", "no result reported unwritten")
	}

	// waitForWait waits until the worker blocks on BZPOPMIN, on its named
	// connection (workers.go).
	waitForWait := func(t *testing.T, b *testBundle) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, "the worker to wait for jobs", func() bool {
			for _, c := range strings.Split(b.direct.ClientList(ctx).Val(), "\n") {
				if strings.Contains(c, " name="+b.prefix+":") && strings.Contains(c, " flags=b ") && strings.Contains(c, " cmd=bzpopmin ") {
					return true
				}
			}
			return false
		})
	}

	t.Run("FinishReplyLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0)
		_, err := b.queue.Add(ctx, "hold", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "hold", recv(t, b.started))
		_, err = b.queue.Add(ctx, "next", nil, nil)
		require.NoError(t, err)
		// The next script call is hold's finish, which also takes "next".
		b.proxy.DropReplyTo("evalsha")
		close(b.release)
		require.Equal(t, finish{"hold", drover.OutcomeCompleted, nil}, recv(t, b.finished, "logs:\n%s", b.logs.String()))
		require.Equal(t, "next", recv(t, b.started, "the job the finish call took runs now; logs:\n%s", b.logs.String()))
		require.Equal(t, int64(1), b.proxy.Dropped())
		done(t, b, "hold", "next")
	})

	t.Run("RetryReplyLostAfterTheCallTookTheJobAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0)
		_, err := b.queue.Add(ctx, "flaky", nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		require.Equal(t, "flaky", recv(t, b.started))
		// The failure's write puts the job back to wait and takes it again
		// in the same call; its reply is lost.
		b.proxy.DropReplyTo("evalsha")
		close(b.release)
		got := recv(t, b.finished, "logs:\n%s", b.logs.String())
		require.Equal(t, drover.OutcomeRetried, got.outcome, "logs:\n%s", b.logs.String())
		require.Equal(t, "flaky", recv(t, b.started, "the second attempt; logs:\n%s", b.logs.String()))
		require.Equal(t, finish{"flaky", drover.OutcomeCompleted, nil}, recv(t, b.finished))
		require.Equal(t, int64(1), b.proxy.Dropped())
		require.NotContains(t, b.logs.String(), "result not written")
	})

	t.Run("FetchReplyLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0)
		// Once the worker waits for jobs, the next script call is its fetch.
		waitForWait(t, b)
		b.proxy.DropReplyTo("evalsha")
		_, err := b.queue.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "a", recv(t, b.started, "the job the fetch took runs now; logs:\n%s", b.logs.String()))
		require.Equal(t, int64(1), b.proxy.Dropped())
		done(t, b, "a")
	})

	t.Run("BlockingWaitReplyLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0)
		waitForWait(t, b)
		// The rule takes the next wait sent: reset the one in flight.
		b.proxy.DropReplyTo("bzpopmin")
		b.proxy.ResetAll()
		waitForWait(t, b)
		// The add's marker wakes the blocked wait; that reply is lost, so
		// the worker learns of the job only by fetching after the error.
		_, err := b.queue.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "a", recv(t, b.started, "the job runs though the wake-up was lost; logs:\n%s", b.logs.String()))
		require.Equal(t, int64(1), b.proxy.Dropped())
		done(t, b, "a")
	})

	t.Run("BlockingWaitReset", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 0)
		waitForWait(t, b)
		b.proxy.ResetAll()
		_, err := b.queue.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "a", recv(t, b.started, "logs:\n%s", b.logs.String()))
		done(t, b, "a")
	})

	t.Run("FinishHeldUpUntilAfterItsSettlement", func(t *testing.T) {
		t.Parallel()
		// A black hole, as when Redis is paused: the finish call and the
		// client's reads time out, and every call sent meanwhile reaches
		// Redis together once it is back, in no set order.
		b := setup(t, 300*time.Millisecond)
		_, err := b.queue.Add(ctx, "hold", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "hold", recv(t, b.started))
		_, err = b.queue.Add(ctx, "next", nil, nil)
		require.NoError(t, err)
		b.proxy.SetBlackhole(true)
		close(b.release)
		time.Sleep(2 * time.Second)
		b.proxy.SetBlackhole(false)
		require.Equal(t, finish{"hold", drover.OutcomeCompleted, nil}, recv(t, b.finished, "logs:\n%s", b.logs.String()))
		require.Equal(t, "next", recv(t, b.started, "logs:\n%s", b.logs.String()))
		done(t, b, "hold", "next")
	})
}

// recv receives from c, failing the test after 10 s.
func recv[T any](t *testing.T, c <-chan T, msgAndArgs ...any) T {
	t.Helper()
	return recvWithin(t, c, 10*time.Second, msgAndArgs...)
}

// recvWithin receives from c, failing the test after d.
func recvWithin[T any](t *testing.T, c <-chan T, d time.Duration, msgAndArgs ...any) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(d):
		require.FailNow(t, fmt.Sprintf("nothing received in %s", d), msgAndArgs...)
		panic("unreachable")
	}
}
