package drover_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/embedredis"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestEmbeddedEngineSmoke runs the core scenarios on the embedded engine that
// `drover demo` uses, so the demo cannot drift from what real Redis does.
func TestEmbeddedEngineSmoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := embedredis.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })

	setup := func(t *testing.T, name string) *testBundle {
		t.Helper()
		q, err := drover.NewQueue(rdb, name, nil)
		require.NoError(t, err)
		return &testBundle{rdb: rdb, prefix: drover.PrefixDefault, name: name, queue: q}
	}

	t.Run("AddProcessComplete", func(t *testing.T) {
		b := setup(t, "smoke-basic")
		res, err := b.queue.Add(ctx, "x", map[string]int{"n": 1}, nil)
		require.NoError(t, err)
		dup, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "custom"})
		require.NoError(t, err)
		require.Equal(t, drover.AddCreated, dup.Outcome)
		dup, err = b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "custom"})
		require.NoError(t, err)
		require.Equal(t, drover.AddDuplicate, dup.Outcome)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return job.ID, nil }, nil)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		b.waitState(t, "custom", drover.StateCompleted)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, `"1"`, string(job.ReturnValue))
		require.Equal(t, 1, job.AttemptsMade)
		require.Greater(t, job.FinishedOn.UnixMilli(), int64(1e12), "times must be stored as plain ms")
	})

	t.Run("DelayedPrioritizedRetry", func(t *testing.T) {
		b := setup(t, "smoke-retry")
		var runs atomic.Int32
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			if job.Name == "flaky" && runs.Add(1) < 3 {
				return nil, errors.New("not yet")
			}
			return nil, nil
		}, nil)
		d, err := b.queue.Add(ctx, "later", nil, &drover.JobOptions{Delay: 200 * time.Millisecond})
		require.NoError(t, err)
		p, err := b.queue.Add(ctx, "prio", nil, &drover.JobOptions{Priority: 3})
		require.NoError(t, err)
		f, err := b.queue.Add(ctx, "flaky", nil, &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 50 * time.Millisecond}})
		require.NoError(t, err)
		b.waitState(t, d.Job.ID, drover.StateCompleted)
		b.waitState(t, p.Job.ID, drover.StateCompleted)
		b.waitState(t, f.Job.ID, drover.StateCompleted)
		job, err := b.queue.GetJob(ctx, f.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 3, job.AttemptsMade)
		require.Len(t, job.Timeline, 3)
	})

	// The calls added since the engine was last checked: a processor's
	// ErrRateLimited (finishJobs reads the limiter's PTTL), manual
	// processing, pausing one worker, the queue's meta and orphans.
	// RunAt and the cancel of a queued job (the demo's dashboard offers it).
	t.Run("RunAtCancelQueued", func(t *testing.T) {
		b := setup(t, "smoke-cancel")
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		res, err := b.queue.Add(ctx, "later", nil, &drover.JobOptions{RunAt: at, Deduplication: &drover.Deduplication{ID: "d"},
			RemoveOnFail: &drover.Retention{Count: 5}})
		require.NoError(t, err)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, at, job.Timestamp.Add(job.Delay))
		require.NoError(t, b.queue.CancelJob(ctx, res.Job.ID, "smoke", nil))
		b.waitState(t, res.Job.ID, drover.StateFailed)
		job, err = b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, "cancelled: smoke", job.FailedReason)
		owner, err := b.queue.GetDeduplicationJobID(ctx, "d")
		require.NoError(t, err)
		require.Empty(t, owner, "released")
	})

	t.Run("RateLimitManualPauseMeta", func(t *testing.T) {
		b := setup(t, "smoke-new")
		var first atomic.Bool
		var w atomic.Pointer[drover.Worker]
		w.Store(b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			if first.CompareAndSwap(false, true) {
				if err := w.Load().RateLimit(ctx, 100*time.Millisecond); err != nil {
					return nil, err
				}
				return nil, drover.ErrRateLimited
			}
			return "done", nil
		}, nil))
		res, err := b.queue.Add(ctx, "limited", nil, nil)
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		require.NoError(t, w.Load().Pause(ctx, nil))
		held, err := b.queue.Add(ctx, "held", nil, nil)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		b.waitState(t, held.Job.ID, drover.StateWaiting)

		manual, err := drover.NewWorker(rdb, b.name, nil, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = manual.Close(ctx) })
		job, err := manual.NextJob(ctx, "by-hand", time.Second)
		require.NoError(t, err)
		require.NotNil(t, job)
		require.Equal(t, held.Job.ID, job.ID)
		require.NoError(t, job.Complete(ctx, "by-hand", "manual"))
		b.waitState(t, held.Job.ID, drover.StateCompleted)
		require.NoError(t, w.Load().Resume())

		require.NoError(t, b.queue.SetGlobalConcurrency(ctx, 2))
		meta, err := b.queue.GetMeta(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, meta.Concurrency)
		maxed, err := b.queue.IsMaxed(ctx)
		require.NoError(t, err)
		require.False(t, maxed)
		require.NoError(t, rdb.HSet(ctx, drover.PrefixDefault+":"+b.name+":lost", "name", "lost").Err())
		n, err := b.queue.RemoveOrphanedJobs(ctx, 0, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})

	t.Run("PauseResumeCounts", func(t *testing.T) {
		b := setup(t, "smoke-pause")
		require.NoError(t, b.queue.Pause(ctx))
		_, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		counts, err := b.queue.GetJobCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), counts[drover.StateWaiting])
		require.NoError(t, b.queue.Resume(ctx))
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return nil, nil }, nil)
		testkit.WaitFor(t, 5*time.Second, "completed", func() bool {
			c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
			require.NoError(t, err)
			return c[drover.StateCompleted] == 1
		})
		evs := eventNames(b.events(t))
		require.Contains(t, evs, "paused")
		require.Contains(t, evs, "resumed")
	})

	// A job left active without a lock whose stc and ats are no numbers:
	// the stalled check and the fetch count both from 0 on this engine's
	// Lua too (TestDifferentialOddStalledCounter and
	// TestDifferentialOddNumericHashFields on Redis).
	t.Run("OddStalledCounterAndStarts", func(t *testing.T) {
		b := setup(t, "smoke-odd")
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		k := b.prefix + ":" + b.name + ":"
		require.NoError(t, rdb.LMove(ctx, k+"wait", k+"active", "RIGHT", "LEFT").Err())
		require.NoError(t, rdb.HSet(ctx, k+res.Job.ID, "stc", "abc", "ats", "abc").Err())
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return job.AttemptsStarted, nil },
			&drover.WorkerOptions{StalledInterval: 200 * time.Millisecond})
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		h, err := rdb.HGetAll(ctx, k+res.Job.ID).Result()
		require.NoError(t, err)
		require.Equal(t, "1", h["stc"])
		require.Equal(t, "1", h["ats"])
		require.Equal(t, "1", h["returnvalue"], "the processor saw the same count")
	})
	// The dashboard's lists read jobs through a script of their own
	// (readSummaries) that cuts long failures: the demo's dashboard runs it
	// on this engine.
	t.Run("ListsCutLongFailures", func(t *testing.T) {
		b := setup(t, "smoke-lists")
		huge := "boom: " + strings.Repeat("é", 20000)
		failed, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return nil, errors.New(huge) }, nil)
		b.waitState(t, failed.Job.ID, drover.StateFailed)
		later, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		ins, err := inspect.New(rdb, &inspect.Options{DiscoveryInterval: -1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = ins.Close(ctx) })
		page, err := ins.Jobs(ctx, b.name, &inspect.ListOptions{State: drover.StateFailed})
		require.NoError(t, err)
		require.Len(t, page.Jobs, 1)
		require.Equal(t, inspect.FailedExhausted, page.Jobs[0].FailedFor)
		require.Less(t, len(page.Jobs[0].FailedReason), len(huge))
		require.True(t, strings.HasPrefix(page.Jobs[0].FailedReason, "boom: éé"))
		page, err = ins.Jobs(ctx, b.name, &inspect.ListOptions{State: drover.StateDelayed})
		require.NoError(t, err)
		require.Len(t, page.Jobs, 1)
		require.Equal(t, later.Job.ID, page.Jobs[0].ID)
		require.WithinDuration(t, time.Now().Add(time.Hour), page.Jobs[0].NextRun.Time, time.Minute)
	})
}
