package drover

// Running one attempt and deciding, as BullMQ does, what happens to the job
// after it: completed, retried now, retried after a backoff, or failed.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// The frames below a processor are kept few and small: the stack a
// processor starts on is what it parks on while it works, and a job
// goroutine whose frames outgrow it has its stack doubled, which copies it
// and leaves the old one to the garbage collector (10,000 jobs in flight
// with a json.Unmarshal processor: 4 KB stacks or 8 KB ones, 40 MB more).
// So runJobs runs the attempt in three calls, and only call's frame is
// under the processor: begin's work is done and its frame gone before the
// processor runs, and end's comes after it.

// begin prepares an attempt: it returns the timer that stops it at its
// time limit (nil: no limit), or the error the attempt fails with without
// running (see refusal).
func (w *Worker) begin(rj *runningJob) (timer *time.Timer, refused error) {
	if rj.stored.schedulerRun != nil {
		// Before anything else, as Node does: the scheduler goes on even
		// when this run fails or its worker dies.
		w.advanceSchedulerRetrying(rj.ctx, rj.stored.schedulerRun)
	}
	if err := w.refusal(rj); err != nil {
		return nil, err
	}
	rj.ran = true
	w.logStarted(rj.ctx, rj.job)
	if limit, from := w.timeout(rj); limit > 0 {
		return w.armTimeout(rj, limit, from), nil
	}
	return nil, nil
}

// end settles an attempt the processor ran: an attempt cancelled or timed
// out before the processor returned ends with that, whatever it returned.
// It returns the job this goroutine runs next (see settle), or nil.
func (w *Worker) end(rj *runningJob, timer *time.Timer, result any, err error) *runningJob {
	if timer != nil {
		timer.Stop()
	}
	if stop := rj.returned(); stop != nil {
		result, err = nil, stop
	} else if err != nil {
		err = sanitizeError(err)
	}
	return w.settle(rj, result, err, time.Since(rj.began))
}

// sanitizeError is err, or, when err's Error method panics (a typed nil
// pointer returned as an error is the usual way), an error saying so: the
// attempt's outcome is decided outside the processor's recover, and a
// panic there would end the whole process, leaving every job it ran
// active until the stalled checker handed them to the next worker, to
// crash it too.
func sanitizeError(err error) error {
	if p := errorPanics(err); p != nil {
		return fmt.Errorf("processor returned a %T error whose Error method panics (a typed nil?): %v", err, p)
	}
	return err
}

// errorPanics is what err.Error() panics with, or nil when it returns. The
// worker's result path (sanitizeError) and Job.Fail (checkFailCause) both
// read the reason from an error a caller handed them, outside any recover.
func errorPanics(err error) (p any) {
	defer func() { p = recover() }()
	_ = err.Error()
	return nil
}

// encodeResult is jobcodec.EncodeData, with a panic in the value's
// MarshalJSON (run outside the processor's recover) turned into an error.
func encodeResult(v any) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while encoding: %v", p)
		}
	}()
	return jobcodec.EncodeData(v)
}

// refusal is the error an attempt fails with without running: the job
// cannot be decoded, a child failure deferred its failure, or it started
// too often. nil: run it.
func (w *Worker) refusal(rj *runningJob) error {
	job := rj.job
	switch {
	case rj.decodeErr != nil:
		return Unrecoverable(fmt.Errorf("cannot decode job: %w", rj.decodeErr))
	case job.DeferredFailure != "":
		return Unrecoverable(errors.New(job.DeferredFailure))
	case w.opts.MaxStartedAttempts > 0 && job.AttemptsStarted > w.opts.MaxStartedAttempts:
		return Unrecoverable(errors.New("job started more than allowable limit"))
	}
	return nil
}

// armTimeout stops the attempt at its deadline.
func (w *Worker) armTimeout(rj *runningJob, limit time.Duration, from string) *time.Timer {
	return time.AfterFunc(limit, func() { rj.stop(timedOutError(limit, from)) })
}

// settle hands the attempt's outcome in, or ends an attempt whose result
// must not be written. It returns the job this goroutine runs next (see
// deliver), or nil.
func (w *Worker) settle(rj *runningJob, result any, err error, took time.Duration) *runningJob {
	ctx, job := rj.ctx, rj.job
	rj.settled.Store(true)
	if rj.written.Load() { // Job.MoveToWaitingChildren parked the job: nothing to write
		w.parkedAttempt(rj, err, took)
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrLockLost) {
		why, _ := rj.lostWhy.Load().(string)
		w.log.LogAttrs(ctx, slog.LevelWarn, msgLockLost, append(w.jobAttrs(job),
			slog.String(logkey.Reason, why), slog.String(logkey.ErrorClass, "lock_lost"), slog.Duration(logkey.Duration, took))...)
		w.finished(rj, Finish{Err: fmt.Errorf("%w: %s", ErrLockLost, why), Took: took})
		w.jobs.finish([]*runningJob{rj}, 0, nil)
		return nil
	}
	return w.deliver(w.outcome(ctx, rj, result, err, took))
}

// call runs the processor inside its middleware, turning a panic into an
// error with its stack. A processor that calls runtime.Goexit never
// returns: see goexited.
func (w *Worker) call(rj *runningJob) (result any, err error) {
	returned := false
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, stack: string(debug.Stack())}
		} else if !returned {
			w.goexited(rj)
		}
	}()
	result, err = w.chain(rj.ctx, rj.job)
	returned = true
	return result, err
}

// errGoexit is the error an attempt fails with when its processor called
// runtime.Goexit.
var errGoexit = errors.New("processor called runtime.Goexit (t.FailNow or require in a processor?)")

// goexited ends the attempt of a processor that called runtime.Goexit (as
// testing's t.FailNow does, and so testify's require): its goroutine ends
// without returning to runJobs, which left the job in flight for good, its
// lock renewed, neither failed nor ever recovered as stalled, and Close
// waiting for it forever. The attempt fails here instead, and this
// goroutine does the rest of runJobs' part before it ends: the job the
// write hands back goes to another goroutine, and it counts itself out.
func (w *Worker) goexited(rj *runningJob) {
	next := w.end(rj, nil, nil, errGoexit)
	rj.cancel(nil)
	if next != nil {
		w.launch([]*runningJob{next})
	}
	w.runners.wg.Done()
}

type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// stackOf is the trace stored for a failure: the panic stack, or the error's
// %+v rendering (which includes stacks for errors that carry one).
func stackOf(err error) string {
	var p *panicError
	if errors.As(err, &p) {
		return p.Error() + "\n\n" + p.stack
	}
	return fmt.Sprintf("%+v", err)
}

// outcome decides what happens to the job after its attempt, following
// BullMQ's rules (spec §8.1), and builds the record the result write carries.
func (w *Worker) outcome(ctx context.Context, rj *runningJob, result any, err error, took time.Duration) *finishItem {
	job, stored := rj.job, &rj.stored
	now := w.q.clock.Now()
	item := &finishItem{rj: rj, err: err, took: took}
	fr := &item.rec
	fr.ID, fr.Token = job.ID, rj.token
	fr.Attempts = int(stored.attempts)
	fr.DedupID = stored.dedupID
	fr.HasParent = stored.parentKey != ""
	// A job with a custom id may become a flow child while it runs: a flow
	// naming it as a child attaches it (BullMQ's updateExistingJobsParent
	// writes its parentKey and parent fields), and its finish must then
	// update that parent, as BullMQ's moveToFinished reads the fields when
	// it finishes. A counter id cannot be named by a flow (custom ids are
	// never integer-looking), so counter-id jobs are not looked at.
	fr.MayBeAdopted = stored.parentKey == "" && !keys.IntegerLooking(job.ID)
	entry := Attempt{N: job.AttemptsStarted, Start: rj.started, End: now, Worker: w.workerLabel()}
	// settle records the outcome and the finishJobs kind that writes it.
	settle := func(o Outcome) *finishItem { //nolint:contextcheck // failureTelemetry hands each middleware its own context (mwContext), as Finished gets it
		item.outcome, entry.Outcome, fr.Kind = o, o, o.info().kind
		// A first try that completes costs no record; any other attempt
		// is recorded, a completion after a stall too (AttemptsStarted
		// counts the earlier activations), so the record says which
		// worker finished a recovered job.
		if o != OutcomeCompleted || len(job.Timeline) > 0 || job.AttemptsStarted > 1 {
			fr.Timeline = timelineWith(job, entry)
		}
		if o.Failed() || o.Retried() {
			fr.Telemetry = w.failureTelemetry(rj, o)
		}
		return item
	}

	if err == nil {
		b, merr := encodeResult(result)
		if merr != nil {
			err = fmt.Errorf("return value of job %s is not JSON-serialisable: %w", job.ID, merr)
			item.err = err
		} else {
			if result == nil {
				b = []byte("null")
			}
			fr.Value = string(b)
			fr.AttemptsMade = int(stored.attemptsMade) + 1
			fr.Keep = w.keepSpec(stored.removeOnComplete, w.opts.RemoveOnComplete)
			return settle(OutcomeCompleted)
		}
	}

	var de *delayError
	var stop *stopError
	isStop := errors.As(err, &stop)
	if !isStop && errors.As(err, &de) {
		fr.Delay = de.delay
		entry.Backoff = time.Duration(de.delay) * time.Millisecond
		entry.NextRun = now.Add(entry.Backoff)
		fr.Due = entry.NextRun.UnixMilli()
		return settle(OutcomeDelayed)
	}
	if !isStop && errors.Is(err, ErrRateLimited) {
		entry.Error = err.Error()
		return settle(OutcomeRateLimited)
	}
	if errors.Is(err, errMovedToWait) { // Job.MoveToWait
		entry.Error = err.Error()
		return settle(OutcomeRequeued)
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrWorkerClosing) {
		entry.Error = "worker closing"
		fr.Value = scripts.RequeueShutdown // wake a worker for it, prioritized or not
		return settle(OutcomeRequeued)
	}

	fr.Value = err.Error()
	entry.Error = fr.Value
	fr.Stacktrace = w.stacktrace(job, stored.stackTraceLimit, err)
	fr.AttemptsMade = int(stored.attemptsMade) + 1
	retry := fr.AttemptsMade < int(stored.attempts) && !IsUnrecoverable(err) && (!isStop || stop.retry) &&
		!(w.opts.MaxStartedAttempts > 0 && job.AttemptsStarted >= w.opts.MaxStartedAttempts)
	var delay time.Duration
	if retry {
		var berr error
		delay, berr = w.backoff(job, fr.AttemptsMade, err)
		if berr != nil {
			w.log.LogAttrs(ctx, slog.LevelError, "backoff failed: job fails for good", append(w.jobAttrs(job), slog.Any(logkey.Error, berr))...)
			fr.Value = berr.Error()
			entry.Error = fr.Value
			retry = false
		} else if delay == BackoffStop {
			retry = false
		}
	}
	switch {
	case retry && delay == 0:
		fr.LIFO = stored.lifo
		return settle(OutcomeRetried)
	case retry:
		// A negative delay other than BackoffStop goes through delayed, due
		// now, keeping the negative delay in the job's delay field: BullMQ's
		// moveToDelayed does that with any delay but 0 and -1.
		fr.Delay = delay.Milliseconds()
		entry.Backoff = max(delay, 0)
		entry.NextRun = now.Add(entry.Backoff)
		fr.Due = entry.NextRun.UnixMilli()
		return settle(OutcomeRetryDelayed)
	}
	fr.Keep = w.keepSpec(stored.removeOnFail, w.opts.RemoveOnFail)
	switch {
	case isStop && stop.timedOut:
		return settle(OutcomeTimedOut)
	case isStop:
		return settle(OutcomeCancelled)
	case IsUnrecoverable(err):
		return settle(OutcomeFailedUnrecoverable)
	case fr.AttemptsMade >= fr.Attempts: // as finishJobs.lua decides on retries-exhausted
		return settle(OutcomeRetriesExhausted)
	}
	return settle(OutcomeFailed)
}

// backoff is the delay before the retry of job after its attemptsMade-th
// attempt failed with err: by the job's own Backoff, else by its kind's
// KindOptions.Backoff, else none (at once). A strategy that panics is an
// error (the job then fails for good), not the end of the process: it runs
// outside the processor's recover.
func (w *Worker) backoff(job *Job, attemptsMade int, err error) (d time.Duration, berr error) {
	defer func() {
		if p := recover(); p != nil {
			d, berr = 0, fmt.Errorf("backoff strategy panicked: %v", p)
		}
	}()
	if job.Opts.Backoff == nil {
		if ko := w.kindOptions(job); ko != nil && ko.Backoff != nil {
			if d := ko.Backoff(attemptsMade, "", err, job); d != -time.Millisecond {
				return d, nil
			}
			return BackoffStop, nil
		}
	}
	return ComputeBackoff(job.Opts.Backoff, attemptsMade, err, job, w.opts.BackoffStrategies, w.rand)
}

func (w *Worker) keepSpec(job *jobcodec.Keep, worker *Retention) string {
	if job != nil && job.Set {
		return job.Spec()
	}
	return retentionKeep(worker).Spec()
}

// stacktrace appends this failure's trace to the job's, bounded by its
// stackTraceLimit (StackTraceLimitDefault when unset).
func (w *Worker) stacktrace(job *Job, storedLimit *int64, err error) string {
	limit := StackTraceLimitDefault
	if storedLimit != nil {
		limit = int(*storedLimit)
	}
	st := append(append([]string(nil), job.Stacktrace...), stackOf(err))
	if limit <= 0 {
		st = nil
	} else if len(st) > limit {
		st = st[len(st)-limit:]
	}
	return jobcodec.EncodeStack(st)
}

// timelineWith is job's attempt timeline with entry appended, as stored
// (the oldest attempts dropped beyond TimelineLimit).
func timelineWith(job *Job, entry Attempt) string {
	tl := append(append([]Attempt(nil), job.Timeline...), entry)
	if len(tl) > TimelineLimit {
		tl = tl[len(tl)-TimelineLimit:]
	}
	return encodeTimeline(tl)
}
