package drover_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// aheadClock is the wall clock moved by a fixed skew, as on a machine whose
// clock is wrong.
type aheadClock struct{ skew time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.skew) }

// TestWorkerClockSkew: a worker whose machine clock is 30 s ahead of
// Redis's. A job delayed by 10 s must not run early: the worker measures its
// offset to Redis TIME, warns, and schedules by the corrected clock. With
// the correction off it runs the job at once (BullMQ's behaviour).
func TestWorkerClockSkew(t *testing.T) {
	t.Parallel()

	type bundle struct {
		*testBundle
		started chan string
		logs    *testkit.SyncBuffer
	}
	setup := func(t *testing.T, opts drover.WorkerOptions) *bundle {
		t.Helper()
		b := &bundle{testBundle: setupQueue(t), started: make(chan string, 10), logs: &testkit.SyncBuffer{}}
		opts.Prefix = b.prefix
		opts.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		opts.Concurrency = 4
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			b.started <- job.Name
			return nil, nil
		}), &opts)
		require.NoError(t, err)
		drover.SetWorkerBaseClock(w, aheadClock{skew: 30 * time.Second})
		ctx := context.Background()
		_, err = b.queue.Add(ctx, "in-10s", nil, &drover.JobOptions{Delay: 10 * time.Second})
		require.NoError(t, err)
		_, err = b.queue.Add(ctx, "in-500ms", nil, &drover.JobOptions{Delay: 500 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			require.NoError(t, w.Close(cctx))
		})
		return b
	}

	t.Run("CorrectedByRedisTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t, drover.WorkerOptions{})
		require.Contains(t, b.logs.String(), "clock differs from Redis TIME", "the skew is logged at Start")
		require.Regexp(t, `offset=-(29\.9|30)`, b.logs.String(), "about 30 s behind, as Redis sees it")
		select {
		case name := <-b.started:
			require.Equal(t, "in-500ms", name, "the job due first runs first, when due")
		case <-time.After(10 * time.Second):
			t.Fatal("the job delayed by 500ms did not run")
		}
		// A few fetch rounds later the 10 s job still waits for its time.
		time.Sleep(time.Second)
		require.Empty(t, b.started, "the job delayed by 10s must not run early")
		st, err := b.queue.GetJobCounts(context.Background(), drover.StateDelayed)
		require.NoError(t, err)
		require.Equal(t, int64(1), st[drover.StateDelayed])
	})

	t.Run("UncorrectedRunsEarly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, drover.WorkerOptions{ClockCheckInterval: -1})
		got := map[string]bool{}
		testkit.WaitFor(t, 5*time.Second, "both jobs to run", func() bool {
			select {
			case n := <-b.started:
				got[n] = true
			default:
			}
			return len(got) == 2
		})
	})
}

// timeCounter counts the TIME commands a client sends.
type timeCounter struct{ n atomic.Int64 }

func (c *timeCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *timeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *timeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "time" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// TestQueueClockSkew: a producer whose machine clock is 30 s ahead of
// Redis's. Before, Add stamped the job's timestamp (and so a delayed job's
// due time) with that clock: the job looked 30 s younger and a delayed job
// ran 30 s late. The queue measures its offset to Redis TIME on its first
// call and once per ClockCheckInterval after, not per add.
func TestQueueClockSkew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const skew = 30 * time.Second

	setup := func(t *testing.T, opts drover.QueueOptions) (*drover.Queue, *timeCounter, *testkit.SyncBuffer, func() time.Time) {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		counter := &timeCounter{}
		rdb.AddHook(counter)
		logs := &testkit.SyncBuffer{}
		opts.Prefix = prefix
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		q, err := drover.NewQueue(rdb, "q", &opts)
		require.NoError(t, err)
		drover.SetQueueBaseClock(q, aheadClock{skew: skew})
		redisNow := func() time.Time {
			now, err := rdb.Time(ctx).Result()
			require.NoError(t, err)
			return now
		}
		return q, counter, logs, redisNow
	}
	// stamped adds jobs and returns how far their timestamps are from Redis
	// TIME read after each add.
	stamped := func(t *testing.T, q *drover.Queue, redisNow func() time.Time, n int) []time.Duration {
		var off []time.Duration
		for range n {
			res, err := q.Add(ctx, "j", nil, nil)
			require.NoError(t, err)
			off = append(off, res.Job.Timestamp.Sub(redisNow()))
		}
		bulk, err := q.AddBulk(ctx, []drover.BulkJob{{Name: "b"}, {Name: "b"}})
		require.NoError(t, err)
		for _, r := range bulk {
			off = append(off, r.Job.Timestamp.Sub(redisNow()))
		}
		return off
	}

	t.Run("CorrectedByRedisTime", func(t *testing.T) {
		t.Parallel()
		q, counter, logs, redisNow := setup(t, drover.QueueOptions{})
		for i, off := range stamped(t, q, redisNow, 50) {
			require.Less(t, off.Abs(), skew/3, "job %d's timestamp is %s from Redis TIME", i, off)
		}
		require.EqualValues(t, 3, counter.n.Load()-52, "one measurement (3 TIME) for 52 adds, besides the test's own 52 reads")
		require.Contains(t, logs.String(), "clock differs from Redis TIME")
	})

	t.Run("UncorrectedStampsByTheMachineClock", func(t *testing.T) {
		t.Parallel()
		q, _, _, redisNow := setup(t, drover.QueueOptions{ClockCheckInterval: -1})
		for i, off := range stamped(t, q, redisNow, 3) {
			require.Greater(t, off, skew*2/3, "job %d's timestamp is %s from Redis TIME", i, off)
		}
	})
}

// steppingClock is the wall clock moved by a step that a test sets, as a
// machine whose clock an NTP daemon or an operator steps. The monotonic
// clock does not move with it.
type steppingClock struct{ step atomic.Int64 }

func (c *steppingClock) Now() time.Time { return time.Now().Add(time.Duration(c.step.Load())) }

func (c *steppingClock) set(d time.Duration) { c.step.Store(int64(d)) }

// TestClockStep: the host's clock steps while a queue and a worker run.
// Before, a queue measured its offset again only once its base clock
// passed a wall-clock deadline, so after a step back by an hour it stamped
// jobs an hour in the past for an hour; and a worker kept base + offset
// until its next periodic measurement (a minute), running a job delayed by
// 5 s at once after a step forward by an hour.
func TestClockStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("QueueStampsByRedisAfterAStepBack", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := redistest.Client(t)
		q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		host := &steppingClock{}
		drover.SetQueueBaseClock(q, host)
		stampOff := func() time.Duration {
			res, err := q.Add(ctx, "j", nil, nil)
			require.NoError(t, err)
			now, err := rdb.Time(ctx).Result()
			require.NoError(t, err)
			return res.Job.Timestamp.Sub(now)
		}
		require.Less(t, stampOff().Abs(), time.Second)
		host.set(time.Hour)
		require.Less(t, stampOff().Abs(), time.Second, "after a step forward")
		host.set(0)
		require.Less(t, stampOff().Abs(), time.Second, "after a step back")
		host.set(-time.Hour)
		require.Less(t, stampOff().Abs(), time.Second, "after a second step back")
	})

	t.Run("WorkerDoesNotRunADelayedJobEarly", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		started := make(chan string, 10)
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			started <- job.Name
			return nil, nil
		}), &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		host := &steppingClock{}
		drover.SetWorkerBaseClock(w, host)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			require.NoError(t, w.Close(cctx))
		})
		_, err = b.queue.Add(ctx, "now", nil, nil)
		require.NoError(t, err)
		require.Equal(t, "now", <-started)

		host.set(time.Hour)
		added := time.Now()
		_, err = b.queue.Add(ctx, "in-3s", nil, &drover.JobOptions{Delay: 3 * time.Second})
		require.NoError(t, err)
		_, err = b.queue.Add(ctx, "now-2", nil, nil) // the worker reads its clock to fetch it
		require.NoError(t, err)
		require.Equal(t, "now-2", <-started)
		select {
		case name := <-started:
			require.Equal(t, "in-3s", name)
			require.GreaterOrEqual(t, time.Since(added), 2900*time.Millisecond, "the delayed job ran early")
		case <-time.After(15 * time.Second):
			t.Fatal("the delayed job did not run")
		}
	})
}
