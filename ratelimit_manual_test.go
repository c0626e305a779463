package drover_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestManualRateLimit: a processor that calls Worker.RateLimit and returns
// ErrRateLimited puts its job back without spending an attempt, its worker
// (which has no Limiter) takes no job until the limit ends, and the attempt
// is reported as OutcomeRateLimited.
func TestManualRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	const limit = 600 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Time
	var outcomes []drover.Outcome
	var w atomic.Pointer[drover.Worker]
	w.Store(b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		n := len(starts)
		mu.Unlock()
		if n == 1 {
			require.NoError(t, w.Load().RateLimit(ctx, limit))
			return nil, drover.ErrRateLimited
		}
		return "ok", nil
	}, &drover.WorkerOptions{Concurrency: 4, Hooks: &drover.WorkerHooks{
		JobFinished: func(job *drover.Job, o drover.Outcome, _ time.Duration, _ error) {
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		},
	}}))
	added, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 1})
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "job completed", func() bool {
		s, err := b.queue.GetJobState(ctx, added.Job.ID)
		require.NoError(t, err)
		return s == drover.StateCompleted
	})
	// JobFinished runs once the result is written: wait for it too.
	testkit.WaitFor(t, 10*time.Second, "both outcomes reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes) == 2
	})
	got, err := b.queue.GetJob(ctx, added.Job.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.AttemptsMade, "the rate-limited start spent no attempt (Attempts: 1, yet it completed)")
	require.Equal(t, 2, got.AttemptsStarted)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, starts, 2)
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), limit-50*time.Millisecond, "the worker fetched before the limit ended")
	require.Equal(t, []drover.Outcome{drover.OutcomeRateLimited, drover.OutcomeCompleted}, outcomes)
	require.Equal(t, drover.OutcomeRateLimited, got.Timeline[0].Outcome, "the attempt timeline names it")
}

// TestManualRateLimitBadInput: a duration under 1ms or a negative maxJobs
// is refused with an error naming the problem, and Redis is not touched.
func TestManualRateLimitBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	keys := func() []string {
		k, err := b.rdb.Keys(ctx, b.prefix+"*").Result()
		require.NoError(t, err)
		return k
	}
	before := keys()
	for _, d := range []time.Duration{0, -time.Second, 500 * time.Microsecond} {
		err := b.queue.RateLimit(ctx, d)
		require.ErrorIs(t, err, drover.ErrInvalidOption, "%s", d)
		require.ErrorContains(t, err, "rate limit duration must be at least 1ms, got "+d.String())
	}
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.ErrorIs(t, w.RateLimit(ctx, -time.Millisecond), drover.ErrInvalidOption)
	_, err = b.queue.GetRateLimitTTL(ctx, -1)
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, "maxJobs >= 0")
	require.Equal(t, before, keys(), "refused calls wrote nothing")
}

// commandCounter counts, per command name, what a client sends (pipelines
// included): what the client itself asks, as opposed to what the server's
// scripts run.
type commandCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.note(cmd)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.note(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *commandCounter) note(cmd redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[cmd.Name()]++
}

func (c *commandCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}

// TestManualRateLimitWaitReadInTheMoveBack: the limiter's remaining time a
// worker waits after ErrRateLimited comes from the script that moved the
// job back, in the same atomic step, not from a PTTL the client sends
// afterwards (by then the key may be gone or set anew).
func TestManualRateLimitWaitReadInTheMoveBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	counter := &commandCounter{}
	rdb := redis.NewClient(b.rdb.Options())
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(counter)
	const limit = 500 * time.Millisecond
	var starts []time.Time
	var mu sync.Mutex
	var w *drover.Worker
	w, err := drover.NewWorker(rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		n := len(starts)
		mu.Unlock()
		if n == 1 {
			if err := w.RateLimit(ctx, limit); err != nil {
				return nil, err
			}
			return nil, drover.ErrRateLimited
		}
		return "ok", nil
	}), &drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })
	added, err := b.queue.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "job completed", func() bool {
		s, err := b.queue.GetJobState(ctx, added.Job.ID)
		require.NoError(t, err)
		return s == drover.StateCompleted
	})
	require.Zero(t, counter.count("pttl"), "the worker asked for the limiter's time in a command of its own")
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), limit-50*time.Millisecond, "the worker fetched before the limit ended")
}

// TestMaxRateLimitWait: WorkerOptions.MaxRateLimitWait bounds one wait for
// the limiter (BullMQ's maximumRateLimitDelay). A worker without a Limiter
// does not read the key when it fetches, so after a processor's
// ErrRateLimited under a 20s limit it takes the job again after the bound,
// not after 20s; a bound under 1ms is refused.
func TestMaxRateLimitWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	var starts atomic.Int32
	var w atomic.Pointer[drover.Worker]
	w.Store(b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		if starts.Add(1) == 1 {
			require.NoError(t, w.Load().RateLimit(ctx, 20*time.Second))
			return nil, drover.ErrRateLimited
		}
		return "ok", nil
	}, &drover.WorkerOptions{MaxRateLimitWait: 200 * time.Millisecond}))
	added, err := b.queue.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "job completed well before the 20s limit ended", func() bool {
		s, err := b.queue.GetJobState(ctx, added.Job.ID)
		require.NoError(t, err)
		return s == drover.StateCompleted
	})
	ttl, err := b.queue.GetRateLimitTTL(ctx, 0)
	require.NoError(t, err)
	require.Greater(t, ttl, 5*time.Second, "the limit itself still stands")

	_, err = drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Prefix: b.prefix, MaxRateLimitWait: -time.Second})
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, "WorkerOptions.MaxRateLimitWait must be at least 1ms, got -1s")
}

// TestMaxRateLimitWaitWithLimiter: a worker with a Limiter reads the
// limiter key when it fetches, and a fetch refused under a long limit
// (Queue.RateLimit, Node's queue.rateLimit) waits at most
// MaxRateLimitWait before it asks again, as BullMQ's waitForRateLimit
// bounds it by maximumRateLimitDelay: a limit lifted early
// (RemoveRateLimitKey) then frees the worker. It slept the whole limit.
func TestMaxRateLimitWaitWithLimiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return "ok", nil },
		&drover.WorkerOptions{MaxRateLimitWait: 200 * time.Millisecond, Limiter: &drover.RateLimit{Max: 10, Duration: time.Second}})
	require.NoError(t, b.queue.RateLimit(ctx, time.Minute))
	added, err := b.queue.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // the worker's fetch is refused
	s, err := b.queue.GetJobState(ctx, added.Job.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, s, "the limit holds the job")
	removed, err := b.queue.RemoveRateLimitKey(ctx)
	require.NoError(t, err)
	require.True(t, removed)
	testkit.WaitFor(t, 10*time.Second, "job completed well before the minute's limit would have ended", func() bool {
		s, err := b.queue.GetJobState(ctx, added.Job.ID)
		require.NoError(t, err)
		return s == drover.StateCompleted
	})
}
