package drover_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// causes is a processor that records the cancellation cause of each
// attempt's context; it blocks until the context ends, unless ok says the
// attempt should succeed at once.
type causes struct {
	mu      sync.Mutex
	list    []error
	started chan string // job id, once per attempt
	ok      func(job *drover.Job) bool
}

func newCauses() *causes { return &causes{started: make(chan string, 100)} }

func (c *causes) process(ctx context.Context, job *drover.Job) (any, error) {
	c.started <- job.ID
	if c.ok != nil && c.ok(job) {
		return "done", nil
	}
	<-ctx.Done()
	c.mu.Lock()
	c.list = append(c.list, context.Cause(ctx))
	c.mu.Unlock()
	return nil, ctx.Err()
}

func (c *causes) all() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

func outcomesOf(j *drover.Job) []string {
	out := make([]string, len(j.Timeline))
	for i, a := range j.Timeline {
		out[i] = a.Outcome.String()
	}
	return out
}

func (b *testBundle) job(t *testing.T, id string) *drover.Job {
	t.Helper()
	j, err := b.queue.GetJob(context.Background(), id)
	require.NoError(t, err)
	return j
}

func TestJobTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("FailsAndRetriesPerPolicy", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond})
		res, err := b.queue.Add(ctx, "slow", nil, &drover.JobOptions{Attempts: 3, Timeout: 50 * time.Millisecond})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateFailed)

		j := b.job(t, res.Job.ID)
		require.Equal(t, 3, j.AttemptsMade)
		require.Equal(t, "timed out after 50ms (job timeout)", j.FailedReason)
		require.Equal(t, []string{"retried", "retried", "timed-out"}, outcomesOf(j))
		require.Equal(t, "timed out after 50ms (job timeout)", j.Timeline[0].Error)
		require.Equal(t, 50*time.Millisecond, j.Opts.Timeout)
		require.Len(t, c.all(), 3)
		for _, cause := range c.all() {
			require.ErrorIs(t, cause, drover.ErrJobTimedOut)
		}
	})

	t.Run("BackoffAppliesToTimeouts", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		c.ok = func(j *drover.Job) bool { return j.AttemptsStarted == 2 }
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond})
		res, err := b.queue.Add(ctx, "slow", nil, &drover.JobOptions{Attempts: 2, Timeout: 30 * time.Millisecond,
			Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 10 * time.Millisecond}})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		require.Equal(t, []string{"retry-delayed", "completed"}, outcomesOf(b.job(t, res.Job.ID)))
	})

	t.Run("WorkerDefaultAndJobOverride", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond, JobTimeout: 40 * time.Millisecond, Concurrency: 2})
		byWorker, err := b.queue.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		byJob, err := b.queue.Add(ctx, "b", nil, &drover.JobOptions{Timeout: 20 * time.Millisecond})
		require.NoError(t, err)
		b.waitState(t, byWorker.Job.ID, drover.StateFailed)
		b.waitState(t, byJob.Job.ID, drover.StateFailed)
		require.Equal(t, "timed out after 40ms (WorkerOptions.JobTimeout)", b.job(t, byWorker.Job.ID).FailedReason)
		require.Equal(t, "timed out after 20ms (job timeout)", b.job(t, byJob.Job.ID).FailedReason)
		require.Equal(t, []string{"timed-out"}, outcomesOf(b.job(t, byJob.Job.ID)))
	})

	t.Run("LateResultIsDiscarded", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		b.startWorker(t, func(ctx context.Context, _ *drover.Job) (any, error) {
			<-ctx.Done() // ignores the cancel and returns a value anyway
			return "too late", nil
		}, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond})
		res, err := b.queue.Add(ctx, "a", nil, &drover.JobOptions{Timeout: 20 * time.Millisecond})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		require.Equal(t, []string{"timed-out"}, outcomesOf(b.job(t, res.Job.ID)))
	})

	t.Run("StoredAsTimeout", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "a", nil, &drover.JobOptions{Timeout: 1500 * time.Millisecond})
		require.NoError(t, err)
		opts, err := b.rdb.HGet(ctx, b.prefix+":q:"+res.Job.ID, "opts").Result()
		require.NoError(t, err)
		require.Contains(t, opts, `"timeout":1500`)
		parsed, err := drover.ParseJobOptions([]byte(`{"timeout":2500}`))
		require.NoError(t, err)
		require.Equal(t, 2500*time.Millisecond, parsed.Timeout)
	})

	t.Run("BadValues", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		_, err := b.queue.Add(ctx, "a", nil, &drover.JobOptions{Timeout: -time.Second})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, "JobOptions.Timeout must not be negative, got -1s")
		_, err = b.queue.Add(ctx, "a", nil, &drover.JobOptions{Timeout: time.Microsecond})
		require.ErrorContains(t, err, "JobOptions.Timeout must be at least 1ms")
		_, err = drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
			&drover.WorkerOptions{JobTimeout: -time.Second})
		require.ErrorContains(t, err, "WorkerOptions.JobTimeout must not be negative, got -1s")
		_, err = drover.ParseJobOptions([]byte(`{"timeout":"soon"}`))
		require.ErrorContains(t, err, `job option "timeout"`)
		n, err := b.rdb.DBSize(ctx).Result()
		require.NoError(t, err)
		keys, err := b.rdb.Keys(ctx, b.prefix+":*").Result()
		require.NoError(t, err)
		require.Empty(t, keys, "nothing written (db has %d keys)", n)
	})
}

func TestCancelJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// other is a second connection, as another process would have.
	other := func(t *testing.T, b *testBundle) *drover.Queue {
		t.Helper()
		rdb := redis.NewClient(&redis.Options{Addr: b.rdb.Options().Addr})
		t.Cleanup(func() { _ = rdb.Close() })
		q, err := drover.NewQueue(rdb, b.name, &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		return q
	}

	t.Run("FromAnotherConnectionFailsForGood", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond})
		res, err := b.queue.Add(ctx, "long", nil, &drover.JobOptions{Attempts: 5})
		require.NoError(t, err)
		<-c.started
		require.NoError(t, other(t, b).CancelJob(ctx, res.Job.ID, "operator: wrong input", nil))
		b.waitState(t, res.Job.ID, drover.StateFailed)

		j := b.job(t, res.Job.ID)
		require.Equal(t, "cancelled: operator: wrong input", j.FailedReason)
		require.Equal(t, 1, j.AttemptsMade)
		require.Equal(t, []string{"cancelled"}, outcomesOf(j))
		require.Len(t, c.all(), 1)
		require.ErrorIs(t, c.all()[0], drover.ErrJobCancelled)
		require.Equal(t, "cancelled: operator: wrong input", c.all()[0].Error())
	})

	t.Run("AfterTheWorkersConnectionsWereReset", func(t *testing.T) {
		t.Parallel()
		// The worker reaches Redis through a proxy that resets every
		// connection (a network blip): its subscription to cancel requests
		// must come back, so a cancel sent afterwards still stops the job.
		b := setupQueue(t)
		proxy, viaProxy := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{})
		c := newCauses()
		w, err := drover.NewWorker(viaProxy, b.name, drover.ProcessorFunc(c.process),
			&drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { _ = w.Close(context.Background()) })
		res, err := b.queue.Add(ctx, "long", nil, &drover.JobOptions{Attempts: 5})
		require.NoError(t, err)
		<-c.started
		proxy.ResetAll()
		// CancelJob says ErrCancelNotDelivered while no worker listens: try
		// until the worker's subscription is back.
		testkit.WaitFor(t, 20*time.Second, "the cancel to reach the worker", func() bool {
			err := other(t, b).CancelJob(ctx, res.Job.ID, "after a blip", nil)
			require.True(t, err == nil || errors.Is(err, drover.ErrCancelNotDelivered), "%v", err)
			return err == nil
		})
		b.waitState(t, res.Job.ID, drover.StateFailed)
		require.Equal(t, "cancelled: after a blip", b.job(t, res.Job.ID).FailedReason)
	})

	t.Run("RetryOption", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		c.ok = func(j *drover.Job) bool { return j.AttemptsStarted == 2 }
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond})
		res, err := b.queue.Add(ctx, "long", nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		<-c.started
		require.NoError(t, other(t, b).CancelJob(ctx, res.Job.ID, "try again", &drover.CancelOptions{Retry: true}))
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		j := b.job(t, res.Job.ID)
		require.Equal(t, []string{"retried", "completed"}, outcomesOf(j))
		require.Equal(t, "cancelled: try again", j.Timeline[0].Error)
	})

	t.Run("HooksSeeTheCause", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		type finished struct {
			outcome drover.Outcome
			err     error
		}
		got := make(chan finished, 1)
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond, Hooks: &drover.WorkerHooks{
			JobFinished: func(_ *drover.Job, o drover.Outcome, _ time.Duration, err error) { got <- finished{o, err} },
		}})
		res, err := b.queue.Add(ctx, "long", nil, nil)
		require.NoError(t, err)
		<-c.started
		require.NoError(t, b.queue.CancelJob(ctx, res.Job.ID, "", nil))
		f := <-got
		require.Equal(t, drover.OutcomeCancelled, f.outcome)
		require.ErrorIs(t, f.err, drover.ErrJobCancelled)
		require.Equal(t, "cancelled", f.err.Error())
	})

	t.Run("NotRunning", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		err := b.queue.CancelJob(ctx, "404", "x", nil)
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		res, err := b.queue.Add(ctx, "waits", nil, nil)
		require.NoError(t, err)
		// Retry cancels a running attempt; a waiting job has none.
		err = b.queue.CancelJob(ctx, res.Job.ID, "x", &drover.CancelOptions{Retry: true})
		require.ErrorIs(t, err, drover.ErrNotInState)
		require.ErrorContains(t, err, "it is waiting, not running (active with a live lock): CancelOptions.Retry")
		require.ErrorContains(t, err, fmt.Sprintf("cancel job %q in queue %q", res.Job.ID, "q"))
		err = b.queue.CancelJob(ctx, "", "x", nil)
		require.ErrorContains(t, err, "needs a job id")
		err = b.queue.CancelJob(ctx, res.Job.ID, strings.Repeat("x", 2000), nil)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		b.waitState(t, res.Job.ID, drover.StateWaiting) // untouched
	})

	t.Run("NobodyListening", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		lock := b.prefix + ":q:" + res.Job.ID + ":lock"
		// A Node BullMQ worker's token is a UUID.
		require.NoError(t, b.rdb.Set(ctx, lock, "7d0f3b8e-0c5a-4f7e-9a43-3f6c1f3b9e21", time.Minute).Err())
		err = b.queue.CancelJob(ctx, res.Job.ID, "x", nil)
		require.ErrorIs(t, err, drover.ErrCancelNotDelivered)
		require.ErrorContains(t, err, "Node BullMQ")
		// A drover token whose worker is gone.
		require.NoError(t, b.rdb.Set(ctx, lock, "0123456789abcdef:1:"+res.Job.ID, time.Minute).Err())
		err = b.queue.CancelJob(ctx, res.Job.ID, "x", nil)
		require.ErrorIs(t, err, drover.ErrCancelNotDelivered)
		require.ErrorContains(t, err, "not subscribed")
	})

	t.Run("OnlyTheNamedJob", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := newCauses()
		b.startWorker(t, c.process, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond, Concurrency: 2})
		a, err := b.queue.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		other, err := b.queue.Add(ctx, "b", nil, nil)
		require.NoError(t, err)
		<-c.started
		<-c.started
		require.NoError(t, b.queue.CancelJob(ctx, a.Job.ID, "only a", nil))
		b.waitState(t, a.Job.ID, drover.StateFailed)
		s, err := b.queue.GetJobState(ctx, other.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateActive, s)
		require.Len(t, c.all(), 1)
	})
}

// BenchmarkCancelLatency measures how long a cancel takes to reach the
// processor: from the CancelJob call (on its own connection, as another
// process would make it) until the processor's context is done. Reported as
// p50-ms and p99-ms over b.N cancels (the goal is p99 under 100 ms).
func BenchmarkCancelLatency(b *testing.B) {
	bb := setupQueueTB(b)
	ctx := context.Background()
	started := make(chan struct{}, 1)
	done := make(chan time.Time, 1)
	w, err := drover.NewWorker(bb.rdb, bb.name, drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		done <- time.Now()
		return nil, ctx.Err()
	}), &drover.WorkerOptions{Prefix: bb.prefix, DrainDelay: 20 * time.Millisecond})
	require.NoError(b, err)
	require.NoError(b, w.Start(ctx))
	b.Cleanup(func() { _ = w.Close(ctx) })
	rdb := redis.NewClient(&redis.Options{Addr: bb.rdb.Options().Addr})
	b.Cleanup(func() { _ = rdb.Close() })
	canceller, err := drover.NewQueue(rdb, bb.name, &drover.QueueOptions{Prefix: bb.prefix})
	require.NoError(b, err)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		res, err := bb.queue.Add(ctx, "c", nil, &drover.JobOptions{RemoveOnFail: &drover.Retention{Remove: true}})
		require.NoError(b, err)
		<-started
		b.StartTimer()
		t0 := time.Now()
		if err := canceller.CancelJob(ctx, res.Job.ID, "bench", nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-done).Sub(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
