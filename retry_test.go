package drover_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestAutomaticRetry covers retry path A end to end with a manual clock, so
// delayed scores are exact and nothing sleeps for a backoff.
func TestAutomaticRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.UnixMilli(1_800_000_000_000)

	type bundle struct {
		*testBundle
		clock *clock.Manual
	}
	setup := func(t *testing.T, proc drover.ProcessorFunc, opts *drover.WorkerOptions) *bundle {
		t.Helper()
		b := setupQueue(t)
		c := clock.NewManual(t0)
		drover.SetQueueClock(b.queue, c)
		o := drover.WorkerOptions{DrainDelay: 20 * time.Millisecond}
		if opts != nil {
			o = *opts
			o.DrainDelay = 20 * time.Millisecond
		}
		o.Prefix = b.prefix
		w, err := drover.NewWorker(b.rdb, b.name, proc, &o)
		require.NoError(t, err)
		drover.SetWorkerClock(w, c)
		drover.SetWorkerRand(w, func() float64 { return 0.5 })
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
		return &bundle{testBundle: b, clock: c}
	}
	delayedScore := func(t *testing.T, b *bundle, id string) float64 {
		t.Helper()
		s, err := b.rdb.ZScore(ctx, b.prefix+":q:delayed", id).Result()
		require.NoError(t, err)
		return s
	}
	job := func(t *testing.T, b *bundle, id string) *drover.Job {
		t.Helper()
		j, err := b.queue.GetJob(ctx, id)
		require.NoError(t, err)
		return j
	}

	t.Run("ExponentialBackoffThroughDelayedSet", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		b := setup(t, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, fmt.Errorf("try %d", runs.Add(1))
		}, nil)
		res, err := b.queue.Add(ctx, "pay", nil, &drover.JobOptions{Attempts: 3,
			Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: time.Second}})
		require.NoError(t, err)
		id := res.Job.ID

		b.waitState(t, id, drover.StateDelayed)
		require.Equal(t, float64(keys.DelayedScore(t0.UnixMilli()+1000, 0)), delayedScore(t, b, id))
		j := job(t, b, id)
		require.Equal(t, 1, j.AttemptsMade)
		require.Equal(t, 1, j.AttemptsStarted)
		require.Equal(t, "try 1", j.FailedReason)
		require.Equal(t, time.Second, j.Delay)
		require.Equal(t, drover.OutcomeRetryDelayed, j.Timeline[0].Outcome)
		require.Equal(t, t0.Add(time.Second).UnixMilli(), j.Timeline[0].NextRun.UnixMilli())

		b.clock.Advance(999 * time.Millisecond)
		time.Sleep(60 * time.Millisecond) // several fetches: none may promote early
		require.Equal(t, int32(1), runs.Load())
		b.clock.Advance(time.Millisecond)
		testkit.WaitFor(t, 5*time.Second, "second run", func() bool { return runs.Load() == 2 })
		b.waitState(t, id, drover.StateDelayed)
		require.Equal(t, float64(keys.DelayedScore(t0.UnixMilli()+1000+2000, 0)), delayedScore(t, b, id))

		b.clock.Advance(2 * time.Second)
		b.waitState(t, id, drover.StateFailed)
		j = job(t, b, id)
		require.Equal(t, 3, j.AttemptsMade)
		require.Equal(t, 3, j.AttemptsStarted)
		require.Equal(t, []string{"try 1", "try 2", "try 3"}, j.Stacktrace)
		require.Equal(t, t0.Add(3*time.Second).UnixMilli(), j.FinishedOn.UnixMilli())

		evs := b.events(t)
		require.Equal(t, []string{
			"added:" + id, "waiting:" + id, "active:" + id + ":waiting", "delayed:" + id,
			"waiting:" + id + ":delayed", "active:" + id + ":waiting", "delayed:" + id,
			"waiting:" + id + ":delayed", "active:" + id + ":waiting", "failed:" + id + ":active",
			"retries-exhausted:" + id, "drained",
		}, eventNames(evs))
		require.Equal(t, t0.Add(time.Second).UnixMilli(), evs[3].DelayUntil.UnixMilli())
		require.Equal(t, "try 3", evs[9].FailedReason)
		require.Equal(t, 3, evs[10].AttemptsMade)
	})

	t.Run("NoBackoffRetriesThroughWait", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		b := setup(t, func(ctx context.Context, job *drover.Job) (any, error) {
			if runs.Add(1) < 3 {
				return nil, errors.New("flaky")
			}
			return "ok", nil
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 3})
		require.NoError(t, err)
		id := res.Job.ID
		b.waitState(t, id, drover.StateCompleted)
		j := job(t, b, id)
		require.Equal(t, 3, j.AttemptsMade)
		require.Equal(t, "flaky", j.FailedReason, "BullMQ keeps the last failure reason on a completed job")
		require.Equal(t, []string{
			"added:" + id, "waiting:" + id, "active:" + id + ":waiting", "waiting:" + id + ":active",
			"active:" + id + ":waiting", "waiting:" + id + ":active", "active:" + id + ":waiting",
			"completed:" + id + ":active", "drained",
		}, eventNames(b.events(t)))
		require.Len(t, j.Timeline, 3)
		require.Equal(t, []drover.Outcome{drover.OutcomeRetried, drover.OutcomeRetried, drover.OutcomeCompleted}, []drover.Outcome{j.Timeline[0].Outcome, j.Timeline[1].Outcome, j.Timeline[2].Outcome})
	})

	t.Run("JitterSpreadsFixedBackoff", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("no")
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 2,
			Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second, Jitter: 0.5}})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateDelayed)
		// rand 0.5: 0.5*1000*0.5 + 1000*0.5 = 750 ms.
		require.Equal(t, float64(keys.DelayedScore(t0.UnixMilli()+750, 0)), delayedScore(t, b, res.Job.ID))
	})

	t.Run("CustomStrategyAndStop", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("no")
		}, &drover.WorkerOptions{BackoffStrategies: map[string]drover.BackoffFunc{
			"linear": func(attemptsMade int, _ string, _ error, job *drover.Job) time.Duration {
				if attemptsMade >= 2 {
					return drover.BackoffStop
				}
				return time.Duration(attemptsMade) * 300 * time.Millisecond
			},
		}})
		q, err := drover.NewQueue(b.rdb, b.name, &drover.QueueOptions{Prefix: b.prefix, BackoffTypes: []string{"linear"}})
		require.NoError(t, err)
		drover.SetQueueClock(q, b.clock)
		res, err := q.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 10, Backoff: &drover.Backoff{Type: "linear"}})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateDelayed)
		require.Equal(t, float64(keys.DelayedScore(t0.UnixMilli()+300, 0)), delayedScore(t, b, res.Job.ID))
		b.clock.Advance(300 * time.Millisecond)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		j := job(t, b, res.Job.ID)
		require.Equal(t, 2, j.AttemptsMade)
		require.NotContains(t, eventNames(b.events(t)), "retries-exhausted:"+res.Job.ID, "a stopped strategy is not an exhausted budget")
	})

	t.Run("ProcessorDelaysWithoutSpendingAttempt", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		b := setup(t, func(ctx context.Context, job *drover.Job) (any, error) {
			if runs.Add(1) == 1 {
				return nil, drover.Delay(5 * time.Second)
			}
			return "later", nil
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 1})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateDelayed)
		require.Equal(t, float64(keys.DelayedScore(t0.UnixMilli()+5000, 0)), delayedScore(t, b, res.Job.ID))
		j := job(t, b, res.Job.ID)
		require.Equal(t, 0, j.AttemptsMade)
		require.Empty(t, j.FailedReason)
		b.clock.Advance(5 * time.Second)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		j = job(t, b, res.Job.ID)
		require.Equal(t, 1, j.AttemptsMade)
		require.Equal(t, 2, j.AttemptsStarted)
	})

	t.Run("LIFORetryGoesToFront", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		// A paused queue keeps the retried job where the retry put it.
		var runs atomic.Int32
		rec := &recorder{}
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			rec.add(job.ID)
			if job.ID == "first" && runs.Add(1) == 1 {
				_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "second"})
				require.NoError(t, err)
				return nil, errors.New("again")
			}
			return nil, nil
		}, nil)
		_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "first", LIFO: true, Attempts: 2})
		require.NoError(t, err)
		testkit.WaitFor(t, 5*time.Second, "3 runs", func() bool { return len(rec.list()) == 3 })
		require.Equal(t, []string{"first", "first", "second"}, rec.list())
	})
}

func TestRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(t *testing.T, b *testBundle, n int, opts *drover.JobOptions, fail bool) []string {
		t.Helper()
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			if fail {
				return nil, errors.New("no")
			}
			return nil, nil
		}, nil)
		var ids []string
		for range n {
			res, err := b.queue.Add(ctx, "x", nil, opts)
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		testkit.WaitFor(t, 5*time.Second, "all finished", func() bool {
			c, err := b.queue.GetJobCounts(ctx, drover.StateWaiting, drover.StateActive)
			require.NoError(t, err)
			return c[drover.StateWaiting]+c[drover.StateActive] == 0
		})
		return ids
	}
	exists := func(t *testing.T, b *testBundle, id string) bool {
		n, err := b.rdb.Exists(ctx, b.prefix+":q:"+id).Result()
		require.NoError(t, err)
		return n == 1
	}

	t.Run("RemoveOnCompleteTrue", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		ids := run(t, b, 3, &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}, false)
		for _, id := range ids {
			require.False(t, exists(t, b, id))
		}
		c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		require.Zero(t, c[drover.StateCompleted])
		require.Contains(t, eventNames(b.events(t)), "completed:"+ids[0]+":active")
	})

	t.Run("RemoveOnCompleteCount", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		ids := run(t, b, 5, &drover.JobOptions{RemoveOnComplete: &drover.Retention{Count: 2}}, false)
		kept, err := b.rdb.ZRange(ctx, b.prefix+":q:completed", 0, -1).Result()
		require.NoError(t, err)
		require.Equal(t, ids[3:], kept)
		for _, id := range ids[:3] {
			require.False(t, exists(t, b, id))
		}
	})

	t.Run("RemoveOnFailAge", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		c := clock.NewManual(time.UnixMilli(1_800_000_000_000))
		drover.SetQueueClock(b.queue, c)
		// Two old failures, stamped an hour ago by hand.
		for _, id := range []string{"old1", "old2"} {
			b.rdb.HSet(ctx, b.prefix+":q:"+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", 1, "delay", 0, "priority", 0)
			b.rdb.ZAdd(ctx, b.prefix+":q:failed", redisZ(float64(time.Now().Add(-time.Hour).UnixMilli()), id))
		}
		ids := run(t, b, 2, &drover.JobOptions{RemoveOnFail: &drover.Retention{Age: time.Minute}}, true)
		require.False(t, exists(t, b, "old1"))
		require.False(t, exists(t, b, "old2"))
		for _, id := range ids {
			require.True(t, exists(t, b, id))
		}
	})

	t.Run("WorkerDefaultApplies", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return nil, nil },
			&drover.WorkerOptions{RemoveOnComplete: &drover.Retention{Remove: true}})
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		testkit.WaitFor(t, 5*time.Second, "job removed", func() bool { return !exists(t, b, res.Job.ID) })
	})
}

func TestManualRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	failJobs := func(t *testing.T, b *testBundle, n int, attempts int) []string {
		t.Helper()
		w := b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			if job.Name == "fail" {
				return nil, errors.New("boom")
			}
			return "ok", nil
		}, nil)
		_ = w
		var ids []string
		for range n {
			res, err := b.queue.Add(ctx, "fail", nil, &drover.JobOptions{Attempts: attempts})
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		for _, id := range ids {
			b.waitState(t, id, drover.StateFailed)
		}
		return ids
	}

	t.Run("RetryKeepsOrResetsAttempts", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		require.NoError(t, b.queue.Pause(ctx)) // keep retried jobs in wait
		ids := []string{}
		for i := range 2 {
			id := "j" + strconv.Itoa(i)
			b.rdb.HSet(ctx, b.prefix+":q:"+id, "name", "x", "data", "{}", "opts", `{"attempts":3}`, "timestamp", 1,
				"delay", 0, "priority", 0, "atm", 3, "ats", 3, "failedReason", "boom", "finishedOn", 5, "processedOn", 4, "stacktrace", `["boom"]`)
			b.rdb.ZAdd(ctx, b.prefix+":q:failed", redisZ(5, id))
			ids = append(ids, id)
		}
		require.NoError(t, b.queue.Job(ids[0]).Retry(ctx, drover.StateFailed, nil))
		require.NoError(t, b.queue.Job(ids[1]).Retry(ctx, drover.StateFailed, &drover.RetryOptions{ResetAttemptsMade: true, ResetAttemptsStarted: true}))
		for i, id := range ids {
			j, err := b.queue.GetJob(ctx, id)
			require.NoError(t, err)
			state, err := j.GetState(ctx)
			require.NoError(t, err)
			require.Equal(t, drover.StateWaiting, state)
			require.Empty(t, j.FailedReason)
			require.True(t, j.FinishedOn.IsZero())
			require.Equal(t, []string{"boom"}, j.Stacktrace, "the stacktrace survives a retry")
			if i == 0 {
				require.Equal(t, 3, j.AttemptsMade)
			} else {
				require.Equal(t, 0, j.AttemptsMade)
				require.Equal(t, 0, j.AttemptsStarted)
			}
		}
		require.Equal(t, []string{"paused", "waiting:j0:failed", "waiting:j1:failed"}, eventNames(b.events(t)))
	})

	t.Run("RefusalsAreTypedAndTouchNothing", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		started := make(chan struct{})
		release := make(chan struct{})
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			close(started)
			<-release
			return nil, nil
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		<-started
		before := b.events(t)
		err = res.Job.Retry(ctx, drover.StateFailed, nil)
		require.ErrorIs(t, err, drover.ErrJobLocked)
		require.True(t, drover.IsRefusal(err))
		err = b.queue.Job("missing").Retry(ctx, drover.StateFailed, nil)
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		err = res.Job.Retry(ctx, drover.StateActive, nil)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		close(release)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		err = res.Job.Retry(ctx, drover.StateFailed, nil)
		require.ErrorIs(t, err, drover.ErrNotInState)
		require.ErrorContains(t, err, `retry job "`+res.Job.ID+`"`)
		after := b.events(t)
		require.Equal(t, len(before)+2, len(after), "only the completion's events were added")
	})

	t.Run("BulkRetryInChunksWithReset", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		ids := failJobs(t, b, 25, 1)
		require.NoError(t, b.queue.Pause(ctx))
		var chunks []int
		n, err := b.queue.RetryJobs(ctx, &drover.RetryJobsOptions{Count: 10, ResetAttemptsMade: true,
			Progress: func(moved int) { chunks = append(chunks, moved) }})
		require.NoError(t, err)
		require.Equal(t, 25, n)
		require.Equal(t, []int{10, 20, 25}, chunks)
		c, err := b.queue.GetJobCounts(ctx, drover.StateWaiting, drover.StateFailed)
		require.NoError(t, err)
		require.Equal(t, int64(25), c[drover.StateWaiting])
		require.Zero(t, c[drover.StateFailed])
		j, err := b.queue.GetJob(ctx, ids[0])
		require.NoError(t, err)
		require.Zero(t, j.AttemptsMade)
	})

	t.Run("PromoteChangeDelayPriorityRemove", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		require.NoError(t, d.Job.ChangeDelay(ctx, 2*time.Hour))
		job, err := b.queue.GetJob(ctx, d.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 2*time.Hour, job.Delay)
		require.NoError(t, d.Job.Promote(ctx))
		require.ErrorIs(t, d.Job.Promote(ctx), drover.ErrNotInState)
		state, err := d.Job.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
		require.NoError(t, d.Job.ChangePriority(ctx, 7, false))
		state, err = d.Job.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StatePrioritized, state)
		require.NoError(t, d.Job.Remove(ctx, nil))
		state, err = d.Job.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StateUnknown, state)
		require.ErrorIs(t, d.Job.Remove(ctx, nil), drover.ErrJobNotFound)
		require.Contains(t, eventNames(b.events(t)), "removed:"+d.Job.ID+":prioritized")

		for range 3 {
			_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
			require.NoError(t, err)
		}
		n, err := b.queue.PromoteJobs(ctx, 2)
		require.NoError(t, err)
		require.Equal(t, 3, n)
	})

	t.Run("CleanOldFinished", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		ids := failJobs(t, b, 3, 1)
		removed, err := b.queue.Clean(ctx, time.Hour, 0, drover.StateFailed)
		require.NoError(t, err)
		require.Empty(t, removed)
		removed, err = b.queue.Clean(ctx, 0, 2, drover.StateFailed)
		require.NoError(t, err)
		require.Len(t, removed, 2)
		require.Subset(t, ids, removed)
		require.Contains(t, eventNames(b.events(t)), "cleaned")
	})
}
