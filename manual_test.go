package drover_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// manualWorker is a worker without a Processor on b's queue, closed at
// test end; Start is the caller's choice.
func (b *testBundle) manualWorker(t *testing.T, opts *drover.WorkerOptions) *drover.Worker {
	t.Helper()
	o := drover.WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = b.prefix
	w, err := drover.NewWorker(b.rdb, b.name, nil, &o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })
	return w
}

// TestManualProcessing: a worker without a Processor hands jobs to its
// caller, who ends each attempt under its own token; the worker's options
// (retention, backoff) apply as they do to a processor's attempts, and the
// attempt timeline records the outcomes.
func TestManualProcessing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Loop", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w := b.manualWorker(t, &drover.WorkerOptions{Name: "hand", RemoveOnComplete: &drover.Retention{Count: 1}})
		for i := range 3 {
			_, err := b.queue.Add(ctx, "n", map[string]int{"i": i}, &drover.JobOptions{Attempts: 2})
			require.NoError(t, err)
		}
		job, err := w.NextJob(ctx, "tok-1", 0)
		require.NoError(t, err)
		require.Equal(t, "1", job.ID)
		require.Equal(t, 1, job.AttemptsStarted)
		require.Equal(t, "hand", job.ProcessedBy)
		lock, err := b.rdb.Get(ctx, b.prefix+":q:1:lock").Result()
		require.NoError(t, err)
		require.Equal(t, "tok-1", lock, "the caller's token is the lock value")
		require.NoError(t, job.ExtendLock(ctx, "tok-1", time.Minute))
		require.NoError(t, job.Complete(ctx, "tok-1", map[string]string{"done": "yes"}))
		got, err := b.queue.GetJob(ctx, "1")
		require.NoError(t, err)
		require.JSONEq(t, `{"done":"yes"}`, string(got.ReturnValue))
		require.Equal(t, 1, got.AttemptsMade)

		// A failure with an attempt left goes back to wait, recorded.
		job, err = w.NextJob(ctx, "tok-2", 0)
		require.NoError(t, err)
		require.Equal(t, "2", job.ID)
		require.NoError(t, job.Fail(ctx, "tok-2", errors.New("flaky")))
		b.waitState(t, "2", drover.StateWaiting)
		got, err = b.queue.GetJob(ctx, "2")
		require.NoError(t, err)
		require.Equal(t, "flaky", got.FailedReason)
		require.Len(t, got.Timeline, 1)
		require.Equal(t, drover.OutcomeRetried, got.Timeline[0].Outcome)
		require.Equal(t, "hand", got.Timeline[0].Worker)

		// Moved to delayed and back to wait: no attempt spent.
		job, err = w.NextJob(ctx, "tok-3", 0)
		require.NoError(t, err)
		require.Equal(t, "3", job.ID)
		require.NoError(t, job.MoveToDelayed(ctx, "tok-3", time.Now().Add(time.Hour)))
		b.waitState(t, "3", drover.StateDelayed)
		job, err = w.NextJob(ctx, "tok-4", 0)
		require.NoError(t, err)
		require.Equal(t, "2", job.ID)
		require.NoError(t, job.MoveToWait(ctx, "tok-4"))
		job, err = w.NextJob(ctx, "tok-5", 0)
		require.NoError(t, err)
		require.Equal(t, "2", job.ID, "moved back to the end of wait that is read first")
		require.NoError(t, job.Complete(ctx, "tok-5", nil))
		got, err = b.queue.GetJob(ctx, "2")
		require.NoError(t, err)
		require.Equal(t, "null", string(got.ReturnValue))
		require.Equal(t, 2, got.AttemptsMade)
		outcomes := make([]drover.Outcome, len(got.Timeline))
		for i, a := range got.Timeline {
			outcomes[i] = a.Outcome
		}
		require.Equal(t, []drover.Outcome{drover.OutcomeRetried, drover.OutcomeRequeued, drover.OutcomeCompleted}, outcomes)
		// RemoveOnComplete: keep 1, so job 1 went when job 2 completed.
		_, err = b.queue.GetJob(ctx, "1")
		require.ErrorIs(t, err, drover.ErrJobNotFound)

		none, err := w.NextJob(ctx, "tok-6", 0)
		require.NoError(t, err)
		require.Nil(t, none, "only a delayed job is left")
	})

	t.Run("FailForGoodAndBackoff", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w := b.manualWorker(t, &drover.WorkerOptions{RemoveOnFail: &drover.Retention{Remove: true},
			BackoffStrategies: map[string]drover.BackoffFunc{
				"slow": func(int, string, error, *drover.Job) time.Duration { return time.Hour },
			}})
		q, err := drover.NewQueue(b.rdb, b.name, &drover.QueueOptions{Prefix: b.prefix, BackoffTypes: []string{"slow"}})
		require.NoError(t, err)
		_, err = q.Add(ctx, "a", nil, &drover.JobOptions{JobID: "backoff", Attempts: 3, Backoff: &drover.Backoff{Type: "slow"}})
		require.NoError(t, err)
		_, err = b.queue.Add(ctx, "b", nil, &drover.JobOptions{JobID: "hopeless", Attempts: 3})
		require.NoError(t, err)
		job, err := w.NextJob(ctx, "t1", 0)
		require.NoError(t, err)
		require.NoError(t, job.Fail(ctx, "t1", errors.New("later")))
		b.waitState(t, "backoff", drover.StateDelayed)
		got, err := b.queue.GetJob(ctx, "backoff")
		require.NoError(t, err)
		require.Equal(t, time.Hour, got.Delay, "the worker's backoff strategy")
		job, err = w.NextJob(ctx, "t2", 0)
		require.NoError(t, err)
		require.Equal(t, "hopeless", job.ID)
		require.NoError(t, job.Fail(ctx, "t2", drover.Unrecoverable(errors.New("never"))))
		_, err = b.queue.GetJob(ctx, "hopeless")
		require.ErrorIs(t, err, drover.ErrJobNotFound, "the worker's RemoveOnFail")
		names := eventNames(b.events(t))
		require.Contains(t, names, "failed:hopeless:active")
	})

	t.Run("PendingChildren", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w := b.manualWorker(t, nil)
		_, err := b.queue.Add(ctx, "parent", nil, &drover.JobOptions{JobID: "p"})
		require.NoError(t, err)
		job, err := w.NextJob(ctx, "pt", 0)
		require.NoError(t, err)
		fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		ref := job.Ref()
		_, err = fp.Add(ctx, drover.FlowJob{Name: "child", QueueName: "q", Parent: &ref})
		require.NoError(t, err)
		err = job.Complete(ctx, "pt", "early")
		require.ErrorIs(t, err, drover.ErrPendingDependencies)
		require.Equal(t, drover.StateActive, mustJobState(t, b, "p"), "the job stays active and locked")
		require.NoError(t, job.Fail(ctx, "pt", errors.New("gave up")), "a failure is not refused")
		require.Equal(t, drover.StateFailed, mustJobState(t, b, "p"))

		// p's child is still waiting: take it out of the way.
		orphan, err := w.NextJob(ctx, "c1", 0)
		require.NoError(t, err)
		require.Equal(t, "child", orphan.Name)
		require.NoError(t, orphan.Complete(ctx, "c1", nil))

		// A job taken by hand may wait for the children it added.
		_, err = b.queue.Add(ctx, "parent", nil, &drover.JobOptions{JobID: "p2"})
		require.NoError(t, err)
		job, err = w.NextJob(ctx, "p2t", 0)
		require.NoError(t, err)
		require.Equal(t, "p2", job.ID)
		ref = job.Ref()
		_, err = fp.Add(ctx, drover.FlowJob{Name: "child", QueueName: "q", Opts: &drover.JobOptions{JobID: "kid"}, Parent: &ref})
		require.NoError(t, err)
		moved, err := job.MoveToWaitingChildren(ctx, nil)
		require.NoError(t, err)
		require.True(t, moved)
		require.Equal(t, drover.StateWaitingChildren, mustJobState(t, b, "p2"))
		kid, err := w.NextJob(ctx, "kt", 0)
		require.NoError(t, err)
		require.Equal(t, "kid", kid.ID)
		require.NoError(t, kid.Complete(ctx, "kt", "kid done"))
		again, err := w.NextJob(ctx, "p2t-2", 0)
		require.NoError(t, err)
		require.Equal(t, "p2", again.ID, "released by its last child")
		require.NoError(t, again.Complete(ctx, "p2t-2", "all done"))
	})
}

// TestManualNextJobRefusesDeferredFailures: a job with a deferred failure
// (defa) is failed by NextJob without being handed out, as the processing
// worker fails it without running it, and the next job is taken.
func TestManualNextJobRefusesDeferredFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	w := b.manualWorker(t, nil)
	for _, id := range []string{"doomed", "fine"} {
		_, err := b.queue.Add(ctx, id, nil, &drover.JobOptions{JobID: id, Attempts: 3})
		require.NoError(t, err)
	}
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":q:doomed", "defa", "job stalled more than allowable limit").Err())
	job, err := w.NextJob(ctx, "t", 0)
	require.NoError(t, err)
	require.Equal(t, "fine", job.ID)
	got, err := b.queue.GetJob(ctx, "doomed")
	require.NoError(t, err)
	require.Equal(t, "job stalled more than allowable limit", got.FailedReason)
	require.Equal(t, drover.StateFailed, mustJobState(t, b, "doomed"))
	require.Empty(t, got.DeferredFailure)
}

func mustJobState(t *testing.T, b *testBundle, id string) drover.JobState {
	t.Helper()
	s, err := b.queue.GetJobState(context.Background(), id)
	require.NoError(t, err)
	return s
}

// TestManualProcessingRefusals: bad input and refused moves answer a clear
// error naming the problem and leave Redis exactly as it was.
func TestManualProcessingRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	w := b.manualWorker(t, nil)
	for _, id := range []string{"j-active", "j-waiting", "j-done"} {
		_, err := b.queue.Add(ctx, id, nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	active, err := w.NextJob(ctx, "mine", 0)
	require.NoError(t, err)
	require.Equal(t, "j-active", active.ID)
	done, err := w.NextJob(ctx, "done-tok", 0)
	require.NoError(t, err)
	require.Equal(t, "j-waiting", done.ID)
	require.NoError(t, done.MoveToWait(ctx, "done-tok")) // back to the front
	done, err = w.NextJob(ctx, "done-tok", 0)
	require.NoError(t, err)
	done2, err := w.NextJob(ctx, "done-tok-2", 0)
	require.NoError(t, err)
	require.Equal(t, "j-done", done2.ID)
	require.NoError(t, done2.Complete(ctx, "done-tok-2", 1))
	require.NoError(t, done.MoveToWait(ctx, "done-tok")) // j-waiting waits again
	waiting, err := b.queue.GetJob(ctx, "j-waiting")
	require.NoError(t, err)

	processorWorker, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)

	before, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		call func() error
		want error
		text string
	}{
		{"wrong token", func() error { return active.Complete(ctx, "theirs", 1) }, drover.ErrJobLocked, "another token holds the lock"},
		{"wrong token fail", func() error { return active.Fail(ctx, "theirs", errors.New("x")) }, drover.ErrJobLocked, ""},
		{"wrong token delay", func() error { return active.MoveToDelayed(ctx, "theirs", time.Now().Add(time.Hour)) }, drover.ErrJobLocked, ""},
		{"wrong token wait", func() error { return active.MoveToWait(ctx, "theirs") }, drover.ErrJobLocked, ""},
		{"wrong token extend", func() error { return active.ExtendLock(ctx, "theirs", time.Minute) }, drover.ErrJobLocked, ""},
		{"empty token", func() error { return active.Complete(ctx, "", 1) }, drover.ErrInvalidOption, "must not be empty"},
		{"token 0", func() error { return active.Fail(ctx, "0", errors.New("x")) }, drover.ErrInvalidOption, `"0"`},
		{"empty token extend", func() error { return active.ExtendLock(ctx, "", time.Minute) }, drover.ErrInvalidOption, ""},
		{"short extend", func() error { return active.ExtendLock(ctx, "mine", 0) }, drover.ErrInvalidOption, "at least 1ms"},
		{"value not JSON", func() error { return active.Complete(ctx, "mine", make(chan int)) }, drover.ErrInvalidData, "return value"},
		{"nil error", func() error { return active.Fail(ctx, "mine", nil) }, drover.ErrInvalidOption, "needs an error"},
		{"typed nil error", func() error { return active.Fail(ctx, "mine", (*derefError)(nil)) }, drover.ErrInvalidOption, "a typed nil?"},
		{"typed nil unrecoverable", func() error { return active.Fail(ctx, "mine", drover.Unrecoverable((*derefError)(nil))) }, drover.ErrInvalidOption, "panicked"},
		{"typed nil error and next", func() error { _, err := active.FailAndNext(ctx, "mine", (*derefError)(nil)); return err }, drover.ErrInvalidOption, "FailAndNext"},
		{"zero time", func() error { return active.MoveToDelayed(ctx, "mine", time.Time{}) }, drover.ErrInvalidOption, "zero time"},
		{"completed twice", func() error { return done2.Complete(ctx, "done-tok-2", 2) }, drover.ErrLockLost, "completed"},
		{"finished job extend", func() error { return done2.ExtendLock(ctx, "done-tok-2", time.Minute) }, drover.ErrLockLost, ""},
		{"not active", func() error { return waiting.Complete(ctx, "mine", 1) }, drover.ErrLockLost, "the job is waiting"},
		{"old attempt's token", func() error { return done.Complete(ctx, "done-tok", 1) }, drover.ErrLockLost, "waiting"},
		{"missing job", func() error { return b.queue.Job("gone").Complete(ctx, "mine", 1) }, drover.ErrJobNotFound, ""},
		{"no queue", func() error { return (&drover.Job{ID: "x"}).Complete(ctx, "mine", 1) }, drover.ErrNoQueue, ""},
		{"negative wait", func() error { _, err := w.NextJob(ctx, "t", -time.Second); return err }, drover.ErrInvalidOption, "wait"},
		{"next with empty token", func() error { _, err := w.NextJob(ctx, "", 0); return err }, drover.ErrInvalidOption, ""},
		{"next on a processing worker", func() error { _, err := processorWorker.NextJob(ctx, "t", 0); return err }, nil, "without a Processor"},
	} {
		err := tc.call()
		require.Error(t, err, tc.name)
		if tc.want != nil {
			require.ErrorIs(t, err, tc.want, tc.name)
		}
		require.Contains(t, err.Error(), tc.text, tc.name)
		t.Logf("%s: %v", tc.name, err)
	}
	after, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	require.Empty(t, statedump.Diff(before, after), "refusals leave Redis untouched")
	require.NoError(t, active.Complete(ctx, "mine", "finally"), "the right token still works")

	// A job a Processor runs is ended by its processor, not by hand.
	var inside atomic.Value
	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		inside.Store(job.Complete(ctx, "x", 1))
		return "ok", nil
	}, nil)
	_, err = b.queue.Add(ctx, "p", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "the processor ran", func() bool { return inside.Load() != nil })
	require.ErrorContains(t, inside.Load().(error), "run by a Processor")
}

// TestManualNextJobWaits: NextJob blocks for up to its wait, returns as
// soon as a job is added or a delayed one falls due, and ends sub-second
// waits on time.
func TestManualNextJobWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	w := b.manualWorker(t, nil)

	start := time.Now()
	job, err := w.NextJob(ctx, "t0", 300*time.Millisecond)
	require.NoError(t, err)
	require.Nil(t, job)
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 300*time.Millisecond)
	require.Less(t, took, 900*time.Millisecond, "a sub-second wait ends on time, not at BZPOPMIN's whole second")

	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = b.queue.Add(context.Background(), "late", nil, nil)
	}()
	start = time.Now()
	job, err = w.NextJob(ctx, "t1", 10*time.Second)
	require.NoError(t, err)
	require.NotNil(t, job, "the job added while NextJob waited")
	require.Less(t, time.Since(start), 3*time.Second)
	require.NoError(t, job.Complete(ctx, "t1", nil))

	_, err = b.queue.Add(ctx, "soon", nil, &drover.JobOptions{Delay: 400 * time.Millisecond})
	require.NoError(t, err)
	start = time.Now()
	job, err = w.NextJob(ctx, "t2", 10*time.Second)
	require.NoError(t, err)
	require.NotNil(t, job, "the delayed job once due")
	require.Equal(t, "soon", job.Name)
	took = time.Since(start)
	require.GreaterOrEqual(t, took, 300*time.Millisecond)
	require.Less(t, took, 3*time.Second)

	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = w.NextJob(cctx, "t3", 10*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second, "the wait ends with ctx, though go-redis does not end a blocking read then")
	keys, err := b.rdb.Keys(ctx, b.prefix+":q:marker:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "no wake key is left behind")

	// Close ends a wait in progress.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = w.Close(context.Background())
	}()
	start = time.Now()
	_, err = w.NextJob(ctx, "t4", 10*time.Second)
	require.ErrorIs(t, err, drover.ErrClosed)
	require.Less(t, time.Since(start), 2*time.Second)
	_, err = w.NextJob(ctx, "t5", 0)
	require.ErrorIs(t, err, drover.ErrClosed)
}

// TestManualStalledCheck: a started manual worker runs the stalled
// checker, which gives back a job whose lock its caller let expire (the
// late completion is then refused), while a job whose lock is extended
// stays with its caller.
func TestManualStalledCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	w := b.manualWorker(t, &drover.WorkerOptions{LockDuration: 200 * time.Millisecond, StalledInterval: 100 * time.Millisecond,
		MaxStalledCount: 5})
	require.NoError(t, w.Start(ctx))
	for _, id := range []string{"kept", "lost"} {
		_, err := b.queue.Add(ctx, id, nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	kept, err := w.NextJob(ctx, "k", 0)
	require.NoError(t, err)
	// kept's lock is renewed for far longer than the worker's 200 ms, so a
	// loaded machine pausing this test for a few hundred ms does not let it
	// lapse (it did, and the stalled check took kept too).
	require.NoError(t, kept.ExtendLock(ctx, "k", 10*time.Second))
	lost, err := w.NextJob(ctx, "l", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"kept", "lost"}, []string{kept.ID, lost.ID})
	stop := make(chan struct{})
	renewed := make(chan error, 1)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				renewed <- nil
				return
			case <-t.C:
				if err := kept.ExtendLock(ctx, "k", 10*time.Second); err != nil {
					renewed <- err
					return
				}
			}
		}
	}()
	b.waitState(t, "lost", drover.StateWaiting)
	close(stop)
	require.NoError(t, <-renewed)
	require.Equal(t, drover.StateActive, mustJobState(t, b, "kept"))
	require.NoError(t, kept.Complete(ctx, "k", "kept"))
	err = lost.Complete(ctx, "l", "late")
	require.ErrorIs(t, err, drover.ErrLockLost)
	require.ErrorContains(t, err, "waiting")
}

// TestManualHooks: a worker without a Processor calls JobStarted when it
// hands a job out and JobFinished when a manual call wrote the outcome,
// as a processing worker does around its processor, so hooks made for
// metrics count manual attempts too. Middleware, which wraps a Processor,
// is refused for it.
func TestManualHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	type finished struct {
		id      string
		made    int
		outcome drover.Outcome
		err     string
	}
	var mu sync.Mutex
	var started []string
	var done []finished
	w := b.manualWorker(t, &drover.WorkerOptions{Hooks: &drover.WorkerHooks{
		JobStarted: func(job *drover.Job) {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, job.ID)
		},
		JobFinished: func(job *drover.Job, outcome drover.Outcome, took time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			f := finished{id: job.ID, made: job.AttemptsMade, outcome: outcome}
			if err != nil {
				f.err = err.Error()
			}
			done = append(done, f)
			require.GreaterOrEqual(t, took, time.Duration(0))
		},
	}})
	for _, attempts := range []int{1, 2, 1} {
		_, err := b.queue.Add(ctx, "n", nil, &drover.JobOptions{Attempts: attempts})
		require.NoError(t, err)
	}
	job, err := w.NextJob(ctx, "t1", 0)
	require.NoError(t, err)
	next, err := job.CompleteAndNext(ctx, "t1", "ok")
	require.NoError(t, err)
	require.Equal(t, "2", next.ID)
	require.NoError(t, next.Fail(ctx, "t1", errors.New("broke")))
	again, err := w.NextJob(ctx, "t2", 0)
	require.NoError(t, err)
	require.Equal(t, "3", again.ID)
	require.ErrorIs(t, again.Complete(ctx, "wrong", nil), drover.ErrJobLocked)
	require.NoError(t, again.MoveToWait(ctx, "t2"))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"1", "2", "3"}, started, "JobStarted for each job handed out")
	require.Equal(t, []finished{
		{id: "1", outcome: drover.OutcomeCompleted},
		{id: "2", outcome: drover.OutcomeRetried, err: "broke"},
		{id: "3", outcome: drover.OutcomeRequeued, err: "moved back to wait"},
	}, done, "JobFinished for each outcome written, not for the refused completion")

	_, err = drover.NewWorker(b.rdb, b.name, nil, &drover.WorkerOptions{Prefix: b.prefix,
		Middleware: []drover.WorkerMiddleware{{Finished: func(context.Context, *drover.Job, drover.Finish) {}}}})
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, "WorkerOptions.Middleware")
}

// TestManualNextNeedsManualWorker: CompleteAndNext and FailAndNext take
// the next job for a worker without a Processor; on a job read through a
// processing worker's queue they are refused before anything is written,
// and the job stays active under its token.
func TestManualNextNeedsManualWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	manual := b.manualWorker(t, nil)
	proc, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	for range 2 {
		_, err := b.queue.Add(ctx, "n", nil, nil)
		require.NoError(t, err)
	}
	taken, err := manual.NextJob(ctx, "t1", 0)
	require.NoError(t, err)
	job, err := proc.Queue().GetJob(ctx, taken.ID)
	require.NoError(t, err)
	_, err = job.CompleteAndNext(ctx, "t1", "v")
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	_, err = job.FailAndNext(ctx, "t1", errors.New("x"))
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	state, err := b.queue.GetJobState(ctx, taken.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateActive, state)
	counts, err := b.queue.GetJobCounts(ctx, drover.StateWaiting)
	require.NoError(t, err)
	require.Equal(t, int64(1), counts[drover.StateWaiting], "nothing taken")
	next, err := taken.CompleteAndNext(ctx, "t1", "v")
	require.NoError(t, err)
	require.NotNil(t, next)
}

// TestFinishAndNextAdvancesScheduler: a finish by hand that takes a job
// scheduler's run next (CompleteAndNext, FailAndNext) creates the
// scheduler's next run, as NextJob and a processing worker do, so the
// scheduler goes on. (BullMQ 6.7's moveToCompleted/moveToFailed with
// fetchNext leave that to a Worker's own loop: a deliberate difference,
// difftest.Known.)
func TestFinishAndNextAdvancesScheduler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		finish func(job *drover.Job) (*drover.Job, error)
	}{
		{"CompleteAndNext", func(job *drover.Job) (*drover.Job, error) { return job.CompleteAndNext(ctx, "tok", "ok") }},
		{"FailAndNext", func(job *drover.Job) (*drover.Job, error) {
			return job.FailAndNext(ctx, "tok", errors.New("bad input"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := redistest.Client(t)
			q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
			require.NoError(t, err)
			_, err = q.Add(ctx, "plain", nil, &drover.JobOptions{JobID: "first"})
			require.NoError(t, err)
			_, err = q.UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, &drover.JobTemplate{Name: "tick"})
			require.NoError(t, err)
			w, err := drover.NewWorker(rdb, "q", nil, &drover.WorkerOptions{Prefix: prefix})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
			job, err := w.NextJob(ctx, "tok", 0)
			require.NoError(t, err)
			require.Equal(t, "first", job.ID)
			before, err := q.GetJobScheduler(ctx, "hourly")
			require.NoError(t, err)

			next, err := tc.finish(job)
			require.NoError(t, err)
			require.NotNil(t, next)
			require.Equal(t, "tick", next.Name, "the scheduler's run is taken next")
			after, err := q.GetJobScheduler(ctx, "hourly")
			require.NoError(t, err)
			require.True(t, after.Next.After(before.Next), "the scheduler's next run moved on: %s -> %s", before.Next, after.Next)
			n, err := q.GetJobCounts(ctx, drover.StateDelayed)
			require.NoError(t, err)
			require.Equal(t, int64(1), n[drover.StateDelayed], "the next run waits in delayed")
		})
	}
}

// derefError's Error reads its receiver: a nil *derefError passed as an
// error panics when its text is read.
type derefError struct{ msg string }

func (e *derefError) Error() string { return e.msg }
