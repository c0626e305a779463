package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("WaitingForBackoffAfterTwoFailures", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		var healthy atomic.Bool
		b.startWorker(t, "pay", func(ctx context.Context, job *drover.Job) (any, error) {
			_, _ = job.Log(ctx, fmt.Sprintf("attempt %d", job.AttemptsStarted))
			if !healthy.Load() {
				return nil, fmt.Errorf("upstream timeout %d", job.AttemptsStarted)
			}
			return "paid", nil
		}, &drover.WorkerOptions{Name: "w1"})
		id := b.add(t, "pay", "charge", testRetry)
		testkit.WaitFor(t, 10*time.Second, "two failures", func() bool {
			d, err := b.ins.Job(ctx, "pay", id)
			require.NoError(t, err)
			return d.Budget.Made == 2
		})

		d, err := b.ins.Job(ctx, "pay", id)
		require.NoError(t, err)
		require.Equal(t, drover.StateDelayed, d.State)
		require.Equal(t, inspect.RetryStateBackoff, d.RetryState)
		require.Equal(t, inspect.Budget{Made: 2, Started: 2, Allowed: 3, Left: 1, Used: 2.0 / 3}, d.Budget)
		require.WithinDuration(t, time.Now().Add(time.Hour), d.NextRun.Time, time.Minute)
		require.Equal(t, "upstream timeout 2", d.FailedReason)
		require.Equal(t, inspect.TimelineDrover, d.TimelineSource)
		require.Len(t, d.Timeline, 2)
		require.Equal(t, "retry-delayed", d.Timeline[0].Outcome)
		require.Equal(t, "upstream timeout 1", d.Timeline[0].Error)
		require.Equal(t, 10*time.Millisecond, d.Timeline[0].Backoff)
		require.Equal(t, time.Hour, d.Timeline[1].Backoff)
		require.Equal(t, d.NextRun.UnixMilli(), d.Timeline[1].NextRun.UnixMilli())
		require.Equal(t, "w1", d.Timeline[1].Worker)
		require.Len(t, d.Stacktrace, 2)
		require.Equal(t, []string{"attempt 1", "attempt 2"}, d.Logs)
		require.Equal(t, int64(2), d.LogCount)
		require.JSONEq(t, `{"k":"v"}`, string(d.Data))
		require.Equal(t, "test", d.Backoff.Type)

		healthy.Store(true)
		state, err := b.ins.RetryJob(ctx, "pay", id, true)
		require.NoError(t, err)
		require.Equal(t, drover.StateDelayed, state)
		b.waitState(t, "pay", id, drover.StateCompleted)
		d, err = b.ins.Job(ctx, "pay", id)
		require.NoError(t, err)
		require.Equal(t, inspect.RetryStateCompleted, d.RetryState)
		require.Equal(t, 1, d.Budget.Made, "fresh attempts: the budget restarted")
		require.Len(t, d.Timeline, 4, "two attempts, the fresh-attempts boundary, the new run's first attempt")
		require.Equal(t, inspect.OutcomeFreshAttempts, d.Timeline[2].Outcome)
		require.Equal(t, &inspect.FreshAttempts{From: drover.StateDelayed, Made: 2, Started: 2, ResetMade: true, ResetStarted: true}, d.Timeline[2].Fresh)
		require.Equal(t, "completed", d.Timeline[3].Outcome)
		require.Equal(t, 1, d.Timeline[3].N, "numbered from #1 again")
	})

	// A job that failed without an attempt ending it: the timeline says
	// so. Before, a job cancelled while queued showed "no attempt yet" and
	// one cancelled in its backoff ended with "retry-delayed", as if it
	// would run again.
	t.Run("CancelledWhileQueued", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		id := b.add(t, "q", "charge", nil)
		require.NoError(t, b.ins.CancelJob(ctx, "q", id, "customer left", false))
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, d.State)
		require.Len(t, d.Timeline, 1)
		require.Equal(t, inspect.OutcomeFailedUnrun, d.Timeline[0].Outcome)
		require.Contains(t, d.Timeline[0].Error, "customer left")
		require.False(t, d.Timeline[0].End.IsZero())
	})

	t.Run("CancelledInBackoff", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("upstream down")
		}, nil)
		id := b.add(t, "q", "charge", &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}})
		b.waitState(t, "q", id, drover.StateDelayed)
		require.NoError(t, b.ins.CancelJob(ctx, "q", id, "given up by hand", false))
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, d.State)
		require.Len(t, d.Timeline, 2)
		require.Equal(t, "retry-delayed", d.Timeline[0].Outcome)
		require.Equal(t, "failed", d.Timeline[1].Outcome)
		require.Contains(t, d.Timeline[1].Error, "given up by hand")
	})

	t.Run("PermanentlyFailedAndRetriedByHand", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, drover.Unrecoverable(errors.New("card declined"))
		}, nil)
		id := b.add(t, "q", "charge", &drover.JobOptions{Attempts: 5})
		b.waitState(t, "q", id, drover.StateFailed)
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, inspect.RetryStateFailed, d.RetryState)
		require.Equal(t, "failed-unrecoverable", d.Timeline[0].Outcome)
		require.Equal(t, 4, d.Budget.Left)

		require.NoError(t, b.ins.Pause(ctx, "q"))
		state, err := b.ins.RetryJob(ctx, "q", id, false)
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, state)
		d, err = b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, inspect.RetryStateRetrying, d.RetryState)
		require.Equal(t, 1, d.Budget.Made)

		_, err = b.ins.RetryJob(ctx, "q", id, false)
		require.ErrorIs(t, err, drover.ErrNotInState, "a waiting job cannot be retried")
		_, err = b.ins.RetryJob(ctx, "q", "missing", false)
		require.ErrorIs(t, err, drover.ErrJobNotFound)
		_, err = b.ins.Job(ctx, "q", "missing")
		require.ErrorIs(t, err, drover.ErrJobNotFound)
	})

	t.Run("ActiveJobShowsLockAndRunningAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		started := make(chan struct{})
		release := make(chan struct{})
		b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			close(started)
			<-release
			return nil, nil
		}, &drover.WorkerOptions{LockDuration: 10 * time.Second})
		id := b.add(t, "q", "x", nil)
		<-started
		defer close(release)
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, inspect.RetryStateActive, d.RetryState)
		require.NotNil(t, d.Lock)
		require.True(t, d.Lock.Held)
		require.Greater(t, d.Lock.TTL, 5*time.Second)
		require.Equal(t, []inspect.Attempt{{N: 1, Start: d.ProcessedOn, Outcome: "active"}}, d.Timeline)
	})

	t.Run("DerivedTimelineForNodeProcessedJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":node:"
		// What a Node BullMQ worker leaves after three failed attempts.
		require.NoError(t, b.rdb.HSet(ctx, k+"7", "name", "n", "data", "{}", "opts", `{"attempts":3}`,
			"timestamp", 1000, "atm", 3, "ats", 3, "processedOn", 5000, "finishedOn", 6000,
			"failedReason", "third", "stacktrace", `["Error: first\n    at x","Error: second\n    at y","Error: third\n    at z"]`).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(6000, "7")).Err())
		d, err := b.ins.Job(ctx, "node", "7")
		require.NoError(t, err)
		require.Equal(t, inspect.TimelineDerived, d.TimelineSource)
		require.Equal(t, []inspect.Attempt{
			{N: 1, Outcome: "retried", Error: "Error: first"},
			{N: 2, Outcome: "retried", Error: "Error: second"},
			{N: 3, Outcome: "retries-exhausted", Error: "third", Start: inspect.InstantOf(time.UnixMilli(5000)), End: inspect.InstantOf(time.UnixMilli(6000))},
		}, d.Timeline)
	})

	// A job a Node worker failed twice, then completed: each failure shows
	// its own error. The completion leaves no trace, so the newest trace is
	// the second attempt's; the timeline gave it to the third and showed
	// the first failure without an error and the second with the first's.
	t.Run("DerivedTimelineOfARetriedJobThatCompleted", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":node:"
		require.NoError(t, b.rdb.HSet(ctx, k+"8", "name", "n", "data", "{}", "opts", `{"attempts":3}`,
			"timestamp", 1000, "atm", 3, "ats", 3, "processedOn", 5000, "finishedOn", 6000, "returnvalue", `"ok"`,
			"failedReason", "second", "stacktrace", `["Error: first\n    at x","Error: second\n    at y"]`).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(6000, "8")).Err())
		d, err := b.ins.Job(ctx, "node", "8")
		require.NoError(t, err)
		require.Equal(t, inspect.TimelineDerived, d.TimelineSource)
		require.Equal(t, []inspect.Attempt{
			{N: 1, Outcome: "retried", Error: "Error: first"},
			{N: 2, Outcome: "retried", Error: "Error: second"},
			{N: 3, Outcome: "completed", Start: inspect.InstantOf(time.UnixMilli(5000)), End: inspect.InstantOf(time.UnixMilli(6000))},
		}, d.Timeline)

		// The same from a real Node worker: both failures show their error.
		o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
		id, err := o.Add(ctx, b.prefix, "node", "flaky", nil, map[string]any{"attempts": 3})
		require.NoError(t, err)
		require.NoError(t, o.StartWorker(ctx, b.prefix, "node", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FailTimes(2, "flaky", "ok")}))
		t.Cleanup(func() { _ = o.StopWorker(context.Background(), "w", true) })
		res, err := o.WaitUntilFinished(ctx, b.prefix, "node", id, 20*time.Second)
		require.NoError(t, err)
		require.Equal(t, "completed", res.State)
		d, err = b.ins.Job(ctx, "node", id)
		require.NoError(t, err)
		var got []string
		for _, a := range d.Timeline {
			got = append(got, fmt.Sprintf("%d:%s:%s", a.N, a.Outcome, a.Error))
		}
		require.Equal(t, []string{"1:retried:Error: flaky", "2:retried:Error: flaky", "3:completed:"}, got)
	})

	// A job that stalled more often than maxStalledCount is failed by the
	// next worker that takes it, Node's and drover's alike, through an
	// unrecoverable error carrying the deferred failure. It failed because
	// its workers died, not because retrying cannot help: it reads "stalled
	// too often", and a bulk retry includes it. It read "unrecoverable" ("a
	// retry is likely to fail the same way") and bulk retries left it out.
	t.Run("StalledTooOftenIsNotUnrecoverable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":node:"
		// As Node's worker leaves it.
		require.NoError(t, b.rdb.HSet(ctx, k+"9", "name", "n", "data", "{}", "opts", `{"attempts":3}`,
			"timestamp", 1000, "atm", 1, "ats", 2, "stc", 1, "processedOn", 5000, "finishedOn", 6000,
			"failedReason", "job stalled more than allowable limit",
			"stacktrace", `["UnrecoverableError: job stalled more than allowable limit\n    at Worker.processJob"]`).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(6000, "9")).Err())
		// As a drover worker leaves it: the stalled checker deferred the
		// failure, the worker that took the job next failed it.
		id := b.add(t, "node", "d", &drover.JobOptions{Attempts: 3})
		require.NoError(t, b.rdb.HSet(ctx, k+id, "defa", "job stalled more than allowable limit").Err())
		b.startWorker(t, "node", func(ctx context.Context, job *drover.Job) (any, error) { return "ran", nil }, nil)
		b.waitState(t, "node", id, drover.StateFailed)
		for _, id := range []string{"9", id} {
			d, err := b.ins.Job(ctx, "node", id)
			require.NoError(t, err)
			require.Equal(t, inspect.FailedStalled, d.FailedFor, id)
		}
		res, err := b.ins.RetryJobs(ctx, "node", &inspect.RetryOptions{DryRun: true})
		require.NoError(t, err)
		require.Equal(t, 2, res.Matched)
		require.Equal(t, 0, res.Excluded)
	})

	// A job cancelled before any worker took it (Queue.CancelJob of a
	// queued job) has no attempt, no trace and attempts left: it read
	// "stopped early"; it failed because it was cancelled.
	t.Run("CancelledBeforeItRan", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		id := b.add(t, "node", "d", &drover.JobOptions{Attempts: 3})
		q, err := drover.NewQueue(b.rdb, "node", &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		require.NoError(t, q.CancelJob(ctx, id, "not needed", nil))
		d, err := b.ins.Job(ctx, "node", id)
		require.NoError(t, err)
		require.Equal(t, inspect.FailedCancelled, d.FailedFor)
	})

	// A Node processor that moves its own job (to delayed here) spends no
	// attempt, but it ran: the timeline shows that run, as the budget's
	// "1 started" does. It said "No attempt yet".
	t.Run("DerivedTimelineShowsARunThatMovedItsJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
		id, err := o.Add(ctx, b.prefix, "node", "n", nil, map[string]any{"attempts": 3})
		require.NoError(t, err)
		require.NoError(t, o.StartWorker(ctx, b.prefix, "node", bullmqoracle.WorkerOptions{ID: "w", Name: "node-w", Behavior: bullmqoracle.MoveToDelayed(time.Hour, 1, nil)}))
		t.Cleanup(func() { _ = o.StopWorker(context.Background(), "w", true) })
		var d *inspect.JobDetail
		testkit.WaitFor(t, 20*time.Second, "the job to delay itself", func() bool {
			var err error
			d, err = b.ins.Job(ctx, "node", id)
			require.NoError(t, err)
			return d.State == drover.StateDelayed
		})
		require.Equal(t, inspect.Budget{Made: 0, Started: 1, Allowed: 3, Left: 3, Used: 0}, d.Budget)
		require.Len(t, d.Timeline, 1)
		a := d.Timeline[0]
		require.Equal(t, 1, a.N)
		require.Equal(t, "delayed", a.Outcome)
		require.Equal(t, d.ProcessedOn, a.Start)
		require.Equal(t, "node-w", a.Worker)
		require.Equal(t, d.NextRun, a.NextRun)

		// Written as Node leaves it: a parent whose processor moved it to
		// waiting-children.
		k := b.prefix + ":node:"
		require.NoError(t, b.rdb.HSet(ctx, k+"p", "name", "p", "data", "{}", "opts", `{}`,
			"timestamp", 1000, "atm", 0, "ats", 1, "processedOn", 5000).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"waiting-children", redisZ(1000, "p")).Err())
		d, err = b.ins.Job(ctx, "node", "p")
		require.NoError(t, err)
		require.Equal(t, []inspect.Attempt{{N: 1, Outcome: "waiting-children", Start: inspect.InstantOf(time.UnixMilli(5000))}}, d.Timeline)
	})

	// A Node worker leaves no record of the attempts: the derived timeline
	// says which failures waited for their backoff, and for how long the
	// job's option says, instead of "retried" (back to wait at once) for
	// all of them.
	t.Run("DerivedTimelineSaysWhichFailuresWaitedForBackoff", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
		fixed, err := o.Add(ctx, b.prefix, "node", "fixed", nil, map[string]any{"attempts": 3, "backoff": map[string]any{"type": "fixed", "delay": 20}})
		require.NoError(t, err)
		expo, err := o.Add(ctx, b.prefix, "node", "expo", nil, map[string]any{"attempts": 3, "backoff": map[string]any{"type": "exponential", "delay": 10, "jitter": 0.5}})
		require.NoError(t, err)
		none, err := o.Add(ctx, b.prefix, "node", "none", nil, map[string]any{"attempts": 3})
		require.NoError(t, err)
		require.NoError(t, o.StartWorker(ctx, b.prefix, "node", bullmqoracle.WorkerOptions{ID: "w", Name: "node-w", Behavior: bullmqoracle.Fail("boom")}))
		t.Cleanup(func() { _ = o.StopWorker(context.Background(), "w", true) })
		outcomes := func(id string) []string {
			res, err := o.WaitUntilFinished(ctx, b.prefix, "node", id, 20*time.Second)
			require.NoError(t, err)
			require.Equal(t, "failed", res.State)
			d, err := b.ins.Job(ctx, "node", id)
			require.NoError(t, err)
			require.Equal(t, inspect.TimelineDerived, d.TimelineSource)
			var out []string
			for _, a := range d.Timeline {
				out = append(out, fmt.Sprintf("%d:%s:%s", a.N, a.Outcome, a.Backoff))
			}
			return out
		}
		require.Equal(t, []string{"1:retry-delayed:20ms", "2:retry-delayed:20ms", "3:retries-exhausted:0s"}, outcomes(fixed))
		require.Equal(t, []string{"1:retry-delayed:10ms", "2:retry-delayed:20ms", "3:retries-exhausted:0s"}, outcomes(expo), "the nominal delays, without jitter")
		require.Equal(t, []string{"1:retried:0s", "2:retried:0s", "3:retries-exhausted:0s"}, outcomes(none))
	})

	// A job a Node worker failed twice, then a drover worker completed
	// after a manual retry: drover's record starts at attempt 3, and the
	// two before it were never recorded (not dropped past drover's 25).
	t.Run("AttemptsNodeRanBeforeTheRecordAreNotCalledDropped", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
		id, err := o.Add(ctx, b.prefix, "mix", "m", nil, map[string]any{"attempts": 2})
		require.NoError(t, err)
		require.NoError(t, o.StartWorker(ctx, b.prefix, "mix", bullmqoracle.WorkerOptions{ID: "w", Name: "node-w", Behavior: bullmqoracle.Fail("node says no")}))
		res, err := o.WaitUntilFinished(ctx, b.prefix, "mix", id, 20*time.Second)
		require.NoError(t, err)
		require.Equal(t, "failed", res.State)
		require.NoError(t, o.StopWorker(ctx, "w", false))
		_, err = b.ins.RetryJob(ctx, "mix", id, false)
		require.NoError(t, err)
		b.startWorker(t, "mix", func(ctx context.Context, job *drover.Job) (any, error) { return "ok", nil }, &drover.WorkerOptions{Name: "drover-w"})
		b.waitState(t, "mix", id, drover.StateCompleted)
		d, err := b.ins.Job(ctx, "mix", id)
		require.NoError(t, err)
		require.Equal(t, inspect.TimelineDrover, d.TimelineSource)
		require.Zero(t, d.TimelineOmitted, "nothing was dropped")
		var got []string
		for _, a := range d.Timeline {
			got = append(got, fmt.Sprintf("%d:%s:%v:%s", a.N, a.Outcome, a.Recorded, a.Worker))
		}
		require.Equal(t, []string{"1:unknown:false:", "2:unknown:false:", "3:completed:true:drover-w"}, got)
	})

	t.Run("StallGapsAreFilledIn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":q:"
		// Attempt 1 stalled (no record), attempt 2 completed on a drover worker.
		require.NoError(t, b.rdb.HSet(ctx, k+"j", "name", "n", "data", "{}", "opts", `{}`, "timestamp", 1000,
			"atm", 1, "ats", 2, "stc", 1, "finishedOn", 9000,
			"drover.attempts", `[{"n":2,"start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z","outcome":"completed"}]`).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(9000, "j")).Err())
		d, err := b.ins.Job(ctx, "q", "j")
		require.NoError(t, err)
		require.Len(t, d.Timeline, 2)
		require.Equal(t, inspect.Attempt{N: 1, Outcome: "stalled"}, d.Timeline[0])
		require.Equal(t, "completed", d.Timeline[1].Outcome)
	})
}

func TestJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// setupFailed leaves 30 failed jobs: names alternate a/b, reasons
	// "timeout N" or "refused N", budgets 1, 2 or 3 attempts made of 3.
	setupFailed := func(t *testing.T) *testBundle {
		t.Helper()
		b := setup(t, nil)
		k := b.prefix + ":f:"
		for n := range 30 {
			id := "j" + strconv.Itoa(n)
			name := []string{"a", "b"}[n%2]
			reason := fmt.Sprintf("%s %d", []string{"timeout", "refused"}[n%3%2], n)
			require.NoError(t, b.rdb.HSet(ctx, k+id, "name", name, "data", "{}", "opts", `{"attempts":3}`,
				"timestamp", 1000+n, "atm", 1+n%3, "ats", 1+n%3, "failedReason", reason, "finishedOn", 2000+n).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(2000+n), id)).Err())
		}
		return b
	}
	ids := func(p *inspect.JobPage) []string {
		var out []string
		for _, j := range p.Jobs {
			out = append(out, j.ID)
		}
		return out
	}

	t.Run("PagesNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		p, err := b.ins.Jobs(ctx, "f", &inspect.ListOptions{State: drover.StateFailed, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, int64(30), p.Total)
		require.Equal(t, []string{"j29", "j28", "j27", "j26", "j25", "j24", "j23", "j22", "j21", "j20"}, ids(p))
		require.True(t, p.More)
		require.Equal(t, inspect.RetryStateFailed, p.Jobs[0].RetryState)
		p, err = b.ins.Jobs(ctx, "f", &inspect.ListOptions{State: drover.StateFailed, Limit: 10, Offset: 25})
		require.NoError(t, err)
		require.Equal(t, []string{"j4", "j3", "j2", "j1", "j0"}, ids(p))
		require.False(t, p.More)
		p, err = b.ins.Jobs(ctx, "f", &inspect.ListOptions{State: drover.StateFailed, Limit: 3, Asc: true})
		require.NoError(t, err)
		require.Equal(t, []string{"j0", "j1", "j2"}, ids(p))
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		list := func(f string, limit, offset int) *inspect.JobPage {
			filter, err := inspect.ParseFilter(f)
			require.NoError(t, err)
			p, err := b.ins.Jobs(ctx, "f", &inspect.ListOptions{State: drover.StateFailed, Filter: filter, Limit: limit, Offset: offset})
			require.NoError(t, err)
			return p
		}
		// n%2==0 (a) and n%3==1 (refused) and made 2 (n%3==1): n = 4, 10, 16, 22, 28.
		p := list("name=a reason=REFUSED left<=1", 50, 0)
		require.Equal(t, []string{"j28", "j22", "j16", "j10", "j4"}, ids(p))
		require.False(t, p.More)
		require.Equal(t, 30, p.Scanned)
		// Paging a filtered list resumes where the last page stopped.
		p = list("name=a reason=refused", 2, 0)
		require.Equal(t, []string{"j28", "j22"}, ids(p))
		require.True(t, p.More)
		p = list("name=a reason=refused", 2, p.NextOffset)
		require.Equal(t, []string{"j16", "j10"}, ids(p))
		p = list("left<=0", 50, 0)
		require.Len(t, p.Jobs, 10)
	})

	// Jobs leave and enter the failed set between two page turns: the
	// cursors go on right after (or before) the job at the page's edge,
	// where the offsets skipped jobs or showed them twice, and Moved says
	// the set changed.
	t.Run("CursorsSurviveMoves", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		k := b.prefix + ":f:"
		list := func(o inspect.ListOptions) *inspect.JobPage {
			o.State, o.Limit = drover.StateFailed, 10
			p, err := b.ins.Jobs(ctx, "f", &o)
			require.NoError(t, err)
			return p
		}
		p1 := list(inspect.ListOptions{})
		require.Equal(t, []string{"j29", "j28", "j27", "j26", "j25", "j24", "j23", "j22", "j21", "j20"}, ids(p1))
		require.False(t, p1.Prev)
		require.Empty(t, p1.PrevCursor)
		require.NotEmpty(t, p1.NextCursor)
		// Two jobs of page 1 leave the set (retried) while the operator reads it.
		require.NoError(t, b.rdb.ZRem(ctx, k+"failed", "j27", "j25").Err())
		byOffset := list(inspect.ListOptions{Offset: p1.NextOffset})
		require.Equal(t, "j17", byOffset.Jobs[0].ID, "the offset page skips j19 and j18: why pages turn by cursor")
		p2 := list(inspect.ListOptions{After: p1.NextCursor})
		require.Equal(t, []string{"j19", "j18", "j17", "j16", "j15", "j14", "j13", "j12", "j11", "j10"}, ids(p2))
		require.Equal(t, &inspect.Moved{ID: "j20", From: 9, To: 7}, p2.Moved)
		require.True(t, p2.Prev)
		require.Equal(t, 8, p2.Offset)
		// Three new failures arrive on top; back to page 1: it ends right
		// before j19, and shows j20 onwards, none of page 2 again.
		for n := 30; n < 33; n++ {
			require.NoError(t, b.rdb.HSet(ctx, k+"j"+strconv.Itoa(n), "name", []string{"a", "b"}[n%2], "data", "{}", "opts", `{"attempts":3}`,
				"timestamp", 1000+n, "atm", 1, "failedReason", "new", "finishedOn", 2000+n).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(2000+n), "j"+strconv.Itoa(n))).Err())
		}
		back := list(inspect.ListOptions{Before: p2.PrevCursor})
		require.Equal(t, []string{"j31", "j30", "j29", "j28", "j26", "j24", "j23", "j22", "j21", "j20"}, ids(back))
		require.Equal(t, &inspect.Moved{ID: "j19", From: 8, To: 11}, back.Moved)
		require.True(t, back.Prev, "j32 is still before")
		require.True(t, back.More)
		require.Equal(t, 1, back.Offset)
		// Forward again from there: page 2 as it was.
		require.Equal(t, ids(p2), ids(list(inspect.ListOptions{After: back.NextCursor})))
		// The edge job itself fails again (a new score): the page starts
		// where its old score puts it, and says it is gone from there.
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(3000, "j10")).Err())
		p3 := list(inspect.ListOptions{After: p2.NextCursor})
		require.Equal(t, []string{"j9", "j8", "j7", "j6", "j5", "j4", "j3", "j2", "j1", "j0"}, ids(p3))
		require.True(t, p3.Moved.Gone)
		require.False(t, p3.More)
		// A filtered list pages back the same way: the page before ends at
		// the job before the cursor's, scanning back through non-matches.
		f, err := inspect.ParseFilter("name=b")
		require.NoError(t, err)
		fp := list(inspect.ListOptions{Filter: f, After: p2.NextCursor})
		require.Equal(t, []string{"j9", "j7", "j5", "j3", "j1"}, ids(fp))
		fb := list(inspect.ListOptions{Filter: f, Before: fp.PrevCursor})
		require.Equal(t, []string{"j31", "j29", "j23", "j21", "j19", "j17", "j15", "j13", "j11"}, ids(fb))
		require.False(t, fb.Prev)
		// A cursor a client made up is refused, naming it.
		_, err = b.ins.Jobs(ctx, "f", &inspect.ListOptions{State: drover.StateFailed, After: "x:y"})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, `cursor "x:y"`)
	})

	// Oldest first (the delayed tab: soonest due first) turns the same way.
	t.Run("CursorsAscending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":d:"
		for n := 1; n <= 12; n++ {
			id := fmt.Sprintf("d%02d", n)
			require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", `{}`, "timestamp", 1000).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"delayed", redisZ(float64(n<<12), id)).Err())
		}
		list := func(o inspect.ListOptions) *inspect.JobPage {
			o.State, o.Limit, o.Asc = drover.StateDelayed, 5, true
			p, err := b.ins.Jobs(ctx, "d", &o)
			require.NoError(t, err)
			return p
		}
		p1 := list(inspect.ListOptions{})
		require.Equal(t, []string{"d01", "d02", "d03", "d04", "d05"}, ids(p1))
		require.NoError(t, b.rdb.ZRem(ctx, k+"delayed", "d03").Err()) // promoted
		p2 := list(inspect.ListOptions{After: p1.NextCursor})
		require.Equal(t, []string{"d06", "d07", "d08", "d09", "d10"}, ids(p2))
		back := list(inspect.ListOptions{Before: p2.PrevCursor})
		require.Equal(t, []string{"d01", "d02", "d04", "d05"}, ids(back))
		require.False(t, back.Prev)
		require.Equal(t, 0, back.Offset)
	})

	// In a list (waiting) the same: producers push new jobs on top, a worker
	// takes the oldest; Next and Previous show each job once.
	t.Run("CursorsInAList", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		var added []string
		for n := range 12 {
			added = append(added, b.add(t, "w", "n"+strconv.Itoa(n), nil))
		}
		list := func(o inspect.ListOptions) *inspect.JobPage {
			o.State, o.Limit = drover.StateWaiting, 5
			p, err := b.ins.Jobs(ctx, "w", &o)
			require.NoError(t, err)
			return p
		}
		names := func(p *inspect.JobPage) []string {
			var out []string
			for _, j := range p.Jobs {
				out = append(out, j.Name)
			}
			return out
		}
		p1 := list(inspect.ListOptions{})
		require.Equal(t, []string{"n11", "n10", "n9", "n8", "n7"}, names(p1))
		for n := 12; n < 15; n++ {
			b.add(t, "w", "n"+strconv.Itoa(n), nil)
		}
		p2 := list(inspect.ListOptions{After: p1.NextCursor})
		require.Equal(t, []string{"n6", "n5", "n4", "n3", "n2"}, names(p2))
		require.Equal(t, &inspect.Moved{ID: added[7], From: 4, To: 7}, p2.Moved)
		back := list(inspect.ListOptions{Before: p2.PrevCursor})
		require.Equal(t, []string{"n11", "n10", "n9", "n8", "n7"}, names(back))
		require.True(t, back.Prev)
		require.Nil(t, back.Moved)
		// The oldest job leaves the list (a worker took it): the page after
		// page 2 starts where that job was, and says it is gone.
		require.NoError(t, b.rdb.LRem(ctx, b.prefix+":w:wait", 1, added[2]).Err())
		p3 := list(inspect.ListOptions{After: p2.NextCursor})
		require.Equal(t, []string{"n1", "n0"}, names(p3))
		require.True(t, p3.Moved.Gone)
	})

	// The job at a list page's edge leaves before the page turns (a worker
	// took it, an operator removed it), while new jobs arrive on top: the
	// page goes on next to the nearest of its neighbours still there, so
	// no job shows twice and none is skipped, whichever way it turns.
	t.Run("ListCursorsWhenTheEdgeJobLeft", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		ids := map[string]string{}
		var last *inspect.JobPage // the page list read last
		add := func(from, to int) {
			for n := from; n < to; n++ {
				ids["n"+strconv.Itoa(n)] = b.add(t, "w", "n"+strconv.Itoa(n), nil)
			}
		}
		remove := func(names ...string) {
			for _, n := range names {
				require.NoError(t, b.rdb.LRem(ctx, b.prefix+":w:wait", 1, ids[n]).Err())
			}
		}
		list := func(o inspect.ListOptions) []string {
			o.State, o.Limit = drover.StateWaiting, 5
			p, err := b.ins.Jobs(ctx, "w", &o)
			require.NoError(t, err)
			var out []string
			for _, j := range p.Jobs {
				out = append(out, j.Name)
			}
			last = p
			return out
		}
		add(0, 15)
		p1 := list(inspect.ListOptions{})
		require.Equal(t, []string{"n14", "n13", "n12", "n11", "n10"}, p1)
		p1Page := last
		// The edge job leaves and three jobs arrive on top.
		add(15, 18)
		remove("n10")
		require.Equal(t, []string{"n9", "n8", "n7", "n6", "n5"}, list(inspect.ListOptions{After: p1Page.NextCursor}))
		require.True(t, last.Moved.Gone)
		p2Page := last
		// The whole page leaves (a bulk removal), and the first job of the
		// next page too: the page goes on at the job after those.
		remove("n9", "n8", "n7", "n6", "n5", "n4")
		require.Equal(t, []string{"n3", "n2", "n1", "n0"}, list(inspect.ListOptions{After: p2Page.NextCursor}))
		p3Page := last
		// Back from there after its first job left and two more arrived:
		// the page ends right before n2, where n3 was.
		add(18, 20)
		remove("n3")
		require.Equal(t, []string{"n15", "n14", "n13", "n12", "n11"}, list(inspect.ListOptions{Before: p3Page.PrevCursor}))
		require.True(t, last.Moved.Gone)
		require.True(t, last.More)

		// Oldest first (a worker takes the oldest job, the listed first).
		asc := func(o inspect.ListOptions) []string {
			o.Asc = true
			return list(o)
		}
		a1 := asc(inspect.ListOptions{})
		require.Equal(t, []string{"n0", "n1", "n2", "n11", "n12"}, a1)
		a1Page := last
		remove("n0", "n12")
		require.Equal(t, []string{"n13", "n14", "n15", "n16", "n17"}, asc(inspect.ListOptions{After: a1Page.NextCursor}))
		a2Page := last
		remove("n13")
		require.Equal(t, []string{"n1", "n2", "n11"}, asc(inspect.ListOptions{Before: a2Page.PrevCursor}))
		require.False(t, last.Prev)
		require.False(t, last.Moved.Approximate)
		// The edge job and every neighbour its cursor names leave: the page
		// starts at the old position, and says it may be off.
		add(20, 23)
		require.Equal(t, []string{"n1", "n2", "n11", "n14", "n15"}, asc(inspect.ListOptions{}))
		a3Page := last
		remove("n1", "n2", "n11", "n14", "n15", "n16", "n17", "n18", "n19")
		asc(inspect.ListOptions{After: a3Page.NextCursor})
		require.True(t, last.Moved.Gone)
		require.True(t, last.Moved.Approximate)
	})

	t.Run("ScanLimitTruncates", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		ins, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix, ScanLimit: 5})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ins.Close(ctx)) })
		p, err := ins.Jobs(ctx, "f", &inspect.ListOptions{State: drover.StateFailed, Filter: inspect.Filter{Name: "nobody"}})
		require.NoError(t, err)
		require.True(t, p.Truncated)
		require.Empty(t, p.Jobs)
	})

	t.Run("DelayedJobsHaveNextRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.add(t, "d", "later", &drover.JobOptions{Delay: time.Hour})
		b.add(t, "d", "sooner", &drover.JobOptions{Delay: time.Minute})
		p, err := b.ins.Jobs(ctx, "d", &inspect.ListOptions{State: drover.StateDelayed, Asc: true})
		require.NoError(t, err)
		require.Len(t, p.Jobs, 2)
		require.Equal(t, "sooner", p.Jobs[0].Name)
		require.Equal(t, inspect.RetryStateScheduled, p.Jobs[0].RetryState)
		require.WithinDuration(t, time.Now().Add(time.Minute), p.Jobs[0].NextRun.Time, 5*time.Second)
		require.WithinDuration(t, time.Now().Add(time.Hour), p.Jobs[1].NextRun.Time, 5*time.Second)

		_, err = b.ins.Jobs(ctx, "d", &inspect.ListOptions{})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	})
}

// TestUnreadableJobs: a job hash that does not decode (another tool wrote
// it, or it is damaged) is named apart; the queue's other jobs are still
// listed, grouped, retried and cleaned. Before, the one hash failed every
// one of these reads whole.
func TestUnreadableJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	k := b.prefix + ":q:"
	for n, id := range []string{"a", "b", "bad"} {
		opts := `{"attempts":1}`
		if id == "bad" {
			opts = `{"attempts":"many"}`
		}
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "n", "data", "{}", "opts", opts, "timestamp", 1000+n,
			"atm", 1, "ats", 1, "failedReason", "gateway timeout", "finishedOn", 2000+n).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(2000+n), id)).Err())
	}
	require.NoError(t, b.rdb.HSet(ctx, k+"done", "name", "n", "data", "{}", "opts", `{"attempts":1}`, "timestamp", 1000, "atm", 1, "finishedOn", 3000).Err())
	require.NoError(t, b.rdb.HSet(ctx, k+"odd", "name", "n", "data", "{}", "opts", `[]`, "timestamp", 1000, "atm", 1, "finishedOn", 3001).Err())
	require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(3000, "done"), redisZ(3001, "odd")).Err())

	for _, st := range []drover.JobState{drover.StateFailed, drover.StateCompleted} {
		p, err := b.ins.Jobs(ctx, "q", &inspect.ListOptions{State: st})
		require.NoError(t, err, st)
		require.Len(t, p.Unreadable, 1, st)
		require.Len(t, p.Jobs, 1+map[drover.JobState]int{drover.StateFailed: 1}[st], st)
	}
	p, err := b.ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateFailed})
	require.NoError(t, err)
	require.Equal(t, "bad", p.Unreadable[0].ID)
	require.Contains(t, p.Unreadable[0].Error, `opts.attempts: not a number: "many"`)

	rep, err := b.ins.FailureGroups(ctx, "q")
	require.NoError(t, err)
	require.Len(t, rep.Groups, 1)
	require.Equal(t, 2, rep.Groups[0].Count)
	res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 2, res.Matched, "the readable failed jobs")
	// Clean removes by age whatever a hash holds, and its candidates say
	// so: the unreadable one too, oldest first.
	gone, err := b.ins.CleanCandidates(ctx, "q", drover.StateCompleted, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"done", "odd"}, gone)
	_, err = b.ins.Stalled(ctx, "q")
	require.NoError(t, err)
}

// TestReadsNoJobData: the failed list, the failure groups, a bulk retry's
// dry run and the stalled view read a job's summary fields (a failed job's
// stack traces and timeline too), never its data: with ten failed jobs of 1 MB each, the three
// calls send well under 1 MB from Redis. They read every failed job whole
// (HGETALL), 10 MB per call here, and a refreshing failed tab read up to
// ScanLimit payloads every 10 seconds.
func TestReadsNoJobData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: "bull"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(ctx)) })
	blob := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	for n := range 10 {
		id := "big" + strconv.Itoa(n)
		require.NoError(t, rdb.HSet(ctx, "bull:q:"+id, "name", "huge", "data", blob, "opts", `{"attempts":2}`, "timestamp", 1000+n,
			"atm", 2, "ats", 2, "failedReason", "boom "+strconv.Itoa(n), "finishedOn", 2000+n,
			"stacktrace", `["Error: boom\n    at x","UnrecoverableError: boom\n    at y"]`).Err())
		require.NoError(t, rdb.ZAdd(ctx, "bull:q:failed", redisZ(float64(2000+n), id)).Err())
	}
	sent := func() int64 {
		info, err := rdb.Info(ctx, "stats").Result()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatal("no total_net_output_bytes in INFO stats")
		return 0
	}
	before := sent()
	page, err := ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateFailed})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 10)
	require.Equal(t, inspect.FailedUnrecoverable, page.Jobs[0].FailedFor, "the stack traces were read")
	groups, err := ins.FailureGroups(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, 10, groups.Groups[0].Count)
	require.Equal(t, 10, groups.Groups[0].Unrecoverable)
	dry, err := ins.RetryJobs(ctx, "q", &inspect.RetryOptions{DryRun: true, IncludeUnrecoverable: true})
	require.NoError(t, err)
	require.Equal(t, 10, dry.Matched)
	require.Less(t, sent()-before, int64(1<<20), "bytes Redis sent for the three calls")

	// The stalled view, refreshed every 3 seconds, reads the active jobs.
	for n := range 10 {
		id := "run" + strconv.Itoa(n)
		require.NoError(t, rdb.HSet(ctx, "bull:q:"+id, "name", "huge", "data", blob, "opts", `{"attempts":2}`, "timestamp", 1000+n,
			"ats", 1, "processedOn", 3000+n).Err())
		require.NoError(t, rdb.LPush(ctx, "bull:q:active", id).Err())
	}
	before = sent()
	st, err := ins.Stalled(ctx, "q")
	require.NoError(t, err)
	require.Len(t, st.Active, 10)
	require.Less(t, sent()-before, int64(1<<20), "bytes Redis sent for the stalled view")
}

// TestJobsCursorsWithTies pages a failed set whose jobs share few scores
// (jobs finished in the same millisecond) while jobs leave it between page
// turns, the page's edge job among them, and new ones arrive: every job
// that stayed in the set throughout is shown exactly once, none twice.
// Before, a cursor whose job had left placed the next page before every
// job of its score, so those already shown came again.
func TestJobsCursorsWithTies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	for trial := range 40 {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		queue := "t" + strconv.Itoa(trial)
		k := b.prefix + ":" + queue + ":"
		add := func(id string) {
			require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000, "finishedOn", 2000).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(2000+rng.IntN(4)), id)).Err())
		}
		stayed := map[string]bool{}
		for n := range 40 {
			id := fmt.Sprintf("j%02d", n)
			add(id)
			stayed[id] = true
		}
		asc := trial%2 == 1
		shown := map[string]int{}
		var cursor inspect.Cursor
		var walk []string
		for turn := 0; ; turn++ {
			require.Less(t, turn, 50, "trial %d: the walk does not end", trial)
			p, err := b.ins.Jobs(ctx, queue, &inspect.ListOptions{State: drover.StateFailed, Limit: 6, Asc: asc, After: cursor})
			require.NoError(t, err)
			for _, j := range p.Jobs {
				shown[j.ID]++
				walk = append(walk, j.ID)
			}
			if !p.More {
				break
			}
			cursor = p.NextCursor
			// Between turns: the page's last job leaves half the time,
			// another job (shown or not) now and then, a new one arrives.
			if len(p.Jobs) > 0 && rng.IntN(2) == 0 {
				gone := p.Jobs[len(p.Jobs)-1].ID
				require.NoError(t, b.rdb.ZRem(ctx, k+"failed", gone).Err())
				delete(stayed, gone)
			}
			if rng.IntN(3) == 0 {
				gone := fmt.Sprintf("j%02d", rng.IntN(40))
				require.NoError(t, b.rdb.ZRem(ctx, k+"failed", gone).Err())
				delete(stayed, gone)
			}
			if rng.IntN(3) == 0 {
				add(fmt.Sprintf("n%02d", turn))
			}
		}
		for id, n := range shown {
			require.Equal(t, 1, n, "trial %d (asc %t): %s shown %d times in %v", trial, asc, id, n, walk)
		}
		for id := range stayed {
			require.Contains(t, shown, id, "trial %d (asc %t): %s stayed in the set and was never shown: %v", trial, asc, id, walk)
		}
	}
}

// TestQueueInfoPausedSince: a paused queue says since when (its paused
// event's time); pausing it again keeps that time, and resuming clears it.
func TestQueueInfoPausedSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.add(t, "q", "x", nil)
	info, err := b.ins.QueueInfo(ctx, "q")
	require.NoError(t, err)
	require.False(t, info.Paused)
	require.True(t, info.PausedSince.IsZero())

	before := time.Now()
	require.NoError(t, b.ins.Pause(ctx, "q"))
	info, err = b.ins.QueueInfo(ctx, "q")
	require.NoError(t, err)
	require.True(t, info.Paused)
	require.WithinDuration(t, before, info.PausedSince.Time, time.Second)
	first := info.PausedSince

	time.Sleep(20 * time.Millisecond)
	require.NoError(t, b.ins.Pause(ctx, "q"))
	info, err = b.ins.QueueInfo(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, first.UnixMilli(), info.PausedSince.UnixMilli(), "a second pause does not move the time")

	require.NoError(t, b.ins.Resume(ctx, "q"))
	info, err = b.ins.QueueInfo(ctx, "q")
	require.NoError(t, err)
	require.False(t, info.Paused)
	require.True(t, info.PausedSince.IsZero())
}

// eventReads counts the stream entries a client's XRANGE and XREVRANGE
// answered.
type eventReads struct{ n atomic.Int64 }

func (h *eventReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *eventReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(cmd)
		return err
	}
}

func (h *eventReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.count(c)
		}
		return err
	}
}

func (h *eventReads) count(cmd redis.Cmder) {
	if c, ok := cmd.(*redis.XMessageSliceCmd); ok {
		h.n.Add(int64(len(c.Val())))
	}
}

// take returns the entries counted since the last take.
func (h *eventReads) take() int64 { return h.n.Swap(0) }

// TestQueueInfoPausedSinceReadsFewEvents: a paused queue with a long
// events stream costs QueueInfo the events since its pause the first time
// (it read the newest 1,000 on every call), and only the events added
// since on the next calls, which every refresh of the overview makes.
func TestQueueInfoPausedSinceReadsFewEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	reads := &eventReads{}
	counted := redistest.Shared(t).Client(t)
	counted.AddHook(reads)
	ins, err := inspect.New(counted, &inspect.Options{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(ctx) })
	fill := func(queue string, n int) {
		_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for range n {
				p.XAdd(ctx, &redis.XAddArgs{Stream: b.prefix + ":" + queue + ":events", Values: []any{"event", "waiting", "jobId", "1"}})
			}
			return nil
		})
		require.NoError(t, err)
	}
	info := func(queue string) *inspect.QueueInfo {
		i, err := ins.QueueInfo(ctx, queue)
		require.NoError(t, err)
		require.True(t, i.Paused)
		return i
	}

	b.add(t, "q", "x", nil)
	fill("q", 3000)
	require.NoError(t, b.ins.Pause(ctx, "q"))
	require.NoError(t, b.ins.Resume(ctx, "q"))
	time.Sleep(5 * time.Millisecond)
	before := time.Now()
	require.NoError(t, b.ins.Pause(ctx, "q"))
	fill("q", 150)
	since := info("q").PausedSince
	require.WithinDuration(t, before, since.Time, time.Second)
	require.LessOrEqual(t, reads.take(), int64(200), "the 150 events since the pause and a page's rest, not 1,000")
	require.Equal(t, since, info("q").PausedSince)
	require.Zero(t, reads.take(), "nothing new: nothing read")
	fill("q", 10)
	require.Equal(t, since, info("q").PausedSince)
	require.Equal(t, int64(10), reads.take())
	// Resumed and paused again between two calls: the answer moves.
	require.NoError(t, b.ins.Resume(ctx, "q"))
	time.Sleep(5 * time.Millisecond)
	again := time.Now()
	require.NoError(t, b.ins.Pause(ctx, "q"))
	require.WithinDuration(t, again, info("q").PausedSince.Time, time.Second)
	require.Greater(t, info("q").PausedSince.UnixMilli(), since.UnixMilli())
	require.LessOrEqual(t, reads.take(), int64(3))
	// Resumed: not paused, and a later pause is found anew.
	require.NoError(t, b.ins.Resume(ctx, "q"))
	i, err := ins.QueueInfo(ctx, "q")
	require.NoError(t, err)
	require.False(t, i.Paused)
	require.True(t, i.PausedSince.IsZero())

	// Paused once, never resumed, then 3,000 events: the first call reads
	// its window, the next ones what came since.
	b.add(t, "long", "x", nil)
	require.NoError(t, b.ins.Pause(ctx, "long"))
	fill("long", 3000)
	reads.take()
	require.True(t, info("long").PausedSince.IsZero(), "the pause is older than the newest 1,000 events")
	require.Equal(t, int64(1000), reads.take())
	info("long")
	require.Zero(t, reads.take())
}

// TestFailedByChild: a flow parent failed by a child with FailParent says
// so (FailedChild, not "unrecoverable"), and a bulk retry of the failed
// jobs leaves it alone unless told otherwise, as it does unrecoverable
// ones: running the parent again does not bring its child back.
func TestFailedByChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	tree, err := flows.Add(ctx, drover.FlowJob{Name: "order", QueueName: "q", Children: []drover.FlowJob{
		{Name: "charge", QueueName: "q", Opts: &drover.JobOptions{ParentPolicy: drover.FailParent}},
	}})
	require.NoError(t, err)
	parent := tree.Job.ID
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "charge" {
			return nil, errors.New("card declined")
		}
		return "shipped", nil
	}, nil)
	b.waitState(t, "q", parent, drover.StateFailed)

	d, err := b.ins.Job(ctx, "q", parent)
	require.NoError(t, err)
	require.Equal(t, inspect.FailedChild, d.FailedFor, "reason %q", d.FailedReason)
	require.Equal(t, "failed for good: a child failed", d.FailedFor.Label())

	res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, res.Excluded, "the parent is left alone")
	require.Equal(t, 1, res.Matched, "the child is retried")
	res, err = b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{DryRun: true, IncludeUnrecoverable: true})
	require.NoError(t, err)
	require.Equal(t, 0, res.Excluded)
	require.Equal(t, 2, res.Matched)
}
