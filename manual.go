package drover

// Manual processing (BullMQ's "manually processing jobs"): a Worker made
// without a Processor hands jobs to its caller (NextJob), who ends each
// attempt with the Job's Complete, Fail, MoveToDelayed or MoveToWait under
// the lock token it chose (CompleteAndNext and FailAndNext also take the
// next job in the same call), and keeps the lock with ExtendLock. Results are
// written by the worker's own finish script (finishJobs) with the outcome
// decided by Worker.outcome, so attempts, backoff, retention, deduplication
// and flow parents behave exactly as for a job a processor ran.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/scripts"
)

// NextJob takes the next ready job (wait first, then prioritized, promoting
// due delayed jobs) and moves it to active, locked with token for
// WorkerOptions.LockDuration, as BullMQ's worker.getNextJob(token) does.
// The worker must have been made with a nil Processor.
//
// token is the lock value itself, not a prefix: a Node process (or another
// drover process) that knows it can extend, complete or fail the job, and
// any other token is refused. Use a token unique to this attempt (for
// example the worker's ID and a counter); "" and "0" (BullMQ's "skip the
// lock check") are refused with ErrInvalidOption.
//
// With nothing ready, NextJob returns nil, nil at once when wait is 0, or
// after blocking on the queue's marker for up to wait (returning as soon as
// a job arrives or a delayed one falls due; Close ends the wait with
// ErrClosed, ctx with its error). The queue's rate limit, global
// or the worker's Limiter, is honoured: while it refuses jobs NextJob
// returns nil (after waiting out up to wait for it to end).
//
// The caller owns the job from here: it must renew the lock
// (Job.ExtendLock) before LockDuration passes, or the stalled checker of
// any worker of the queue gives the job back (Start runs this worker's),
// and end the attempt with Job.Complete, Job.Fail, Job.MoveToDelayed or
// Job.MoveToWait. The worker's JobStarted hook is called when a job is
// handed out, and JobFinished when a manual call wrote its outcome (no
// Middleware: a worker without a Processor refuses it). A job that must not run (its hash does not decode, a deferred
// failure waits on it, it started more than MaxStartedAttempts times) is
// failed here, as the processing worker fails it, and the next one taken;
// BullMQ's getNextJob hands such a job out. A job scheduler's run makes its scheduler's next run here, as the
// processing worker does when it takes one.
//
// The take is sent once: when its reply is lost (the error is not one Redis
// answered), what it did is asked of Redis instead, and the job it took, if
// any, is returned; only when Redis cannot be asked either is the error
// returned, and the job may then be active under token, coming back through
// the stalled checker once its lock expires.
func (w *Worker) NextJob(ctx context.Context, token string, wait time.Duration) (*Job, error) {
	if w == nil || w.q == nil {
		return nil, errZeroValue("Worker", "NewWorker")
	}
	if ctx == nil {
		return nil, errNilContext
	}
	if w.proc != nil {
		return nil, fmt.Errorf("worker for queue %q: NextJob is for a worker made without a Processor (this one runs its Processor)", w.q.name)
	}
	if err := checkLockToken(token); err != nil {
		return nil, fmt.Errorf("next job of queue %q: %w", w.q.name, err)
	}
	if wait < 0 {
		return nil, fmt.Errorf("next job of queue %q: %w", w.q.name, optionError("wait must not be negative, got %s", wait))
	}
	if w.closing.Load() {
		return nil, fmt.Errorf("worker for queue %q: %w", w.q.name, ErrClosed)
	}
	if w.clocker != nil && !w.clocker.measured.Load() {
		// As the processing worker measures at Start: the take and the
		// due times it compares use Redis's clock. A failed measurement
		// leaves the machine's clock in use; the take reports Redis errors.
		w.clocker.measure(ctx)
	}
	// Close ends a wait for a job, as closing a BullMQ worker ends its
	// blocking getNextJob.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(w.closed, func() { cancel(ErrClosed) })() //nolint:contextcheck // w.closed only signals Close; ctx stays the caller's
	deadline := time.Now().Add(wait)
	for {
		f, err := w.take(ctx, token)
		if err != nil {
			return nil, w.nextJobErr(ctx, err)
		}
		if len(f.Jobs) > 0 {
			job, err := w.handOut(ctx, f.Jobs[0], token)
			if job != nil || err != nil {
				return job, err
			}
			continue // failed without being handed out: take the next one
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if f.RateLimitTTL > 0 {
			if !sleepCtx(ctx, min(time.Duration(f.RateLimitTTL)*time.Millisecond, left)) {
				return nil, w.nextJobErr(ctx, ctx.Err())
			}
			continue
		}
		if due, ok := keys.ParseDueOfScore(f.NextDelayed); ok {
			left = min(left, max(time.Duration(due-w.q.nowMs())*time.Millisecond, time.Millisecond))
		}
		if err := w.waitMarker(ctx, left); err != nil {
			return nil, w.nextJobErr(ctx, err)
		}
	}
}

// take takes one ready job under token (scripts.TakeJob). The take is sent
// once: when its reply is lost it is settled instead (scripts.SettleManual),
// which hands out the job it took, if any, and keeps a late copy of it from
// taking one; a take that took nothing is sent again, under a new call
// token, up to manualSends times in all.
func (w *Worker) take(ctx context.Context, token string) (scripts.Fetch, error) {
	for send := 1; ; send++ {
		a := w.fetchArgs(1)
		a.Token = token
		call := w.manualCallArgs().Token
		f, err := scripts.TakeJob(ctx, w.q.jobWrites(), w.q.k, a, call)
		if err == nil {
			return f, nil
		}
		if !mayHaveRun(err) || ctx.Err() != nil || send == manualSends {
			return scripts.Fetch{}, err
		}
		st, serr := w.settleManual(ctx, call, nil, scripts.ExactTake{Lock: token, At: a.Now})
		if serr != nil {
			return scripts.Fetch{}, fmt.Errorf("%w (and learning whether it took a job failed: %w)", err, serr)
		}
		if len(st.Jobs) > 0 {
			return scripts.Fetch{Jobs: st.Jobs}, nil
		}
		// It took nothing, and a late copy of it takes nothing either.
	}
}

// manualSettles bounds the tries of settleManual: the connection that lost
// the call's reply is often not the last one to go (a failover, a flapping
// network), and a call left unsettled leaves its job to the stalled checker.
const manualSettles = 5

// settleManual settles the manual call with token (scripts.SettleManual),
// trying again, at the worker's retry pace, while its own reply is lost or
// Redis cannot be reached, up to manualSettles times or until ctx ends. A
// settlement may run twice: it marks the call again and reports the same.
func (w *Worker) settleManual(ctx context.Context, token string, recs []scripts.FinishRecord, took scripts.ExactTake) (scripts.Settled, error) {
	for attempt := 1; ; attempt++ {
		st, err := scripts.SettleManual(ctx, w.q.jobWrites(), w.q.k, token, settledCallTTL, recs, took)
		if err == nil || attempt == manualSettles || !(mayHaveRun(err) || outage.Is(err)) ||
			!sleepCtx(ctx, retryDelay(attempt)) {
			return st, err
		}
	}
}

// nextJobErr is NextJob's error for err: ErrClosed when Close ended the
// call.
func (w *Worker) nextJobErr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrClosed) {
		return fmt.Errorf("worker for queue %q: %w", w.q.name, ErrClosed)
	}
	return fmt.Errorf("next job of queue %q: %w", w.q.name, err)
}

// manualJob turns a job NextJob took into the Job handed to the caller,
// with the attempt that its Complete, Fail and moves end.
func (w *Worker) manualJob(ctx context.Context, f scripts.Fetched, token string) *Job {
	rec, _, err := jobcodec.Decode(f.ID, f.Hash)
	now := w.fetchedAt(&rec, f)
	rec.AttemptsStarted++
	job := w.q.fromRecord(&rec)
	// The fetch wrote pb when the worker has a name (the hash was read
	// before): a job another worker ran before names this one.
	if w.opts.Name != "" {
		job.ProcessedBy = w.opts.Name
	}
	rj := &runningJob{job: job, stored: storedOfFetched(&rec, f, err), token: token, started: now, w: w, began: time.Now(), decodeErr: err}
	rj.ctx, rj.cancel = context.Background(), func(error) {}
	job.token, job.run = token, rj
	if run := rj.stored.schedulerRun; run != nil {
		w.advanceSchedulerRetrying(ctx, run)
	}
	return job
}

// refuseManual fails, as the processing worker does without running it,
// a job just taken that must not run: its hash does not decode, a deferred
// failure waits on it (defa: it stalled too often, or a child failed), or
// it started more than MaxStartedAttempts times. It reports whether it did.
func (w *Worker) refuseManual(ctx context.Context, rj *runningJob) (bool, error) {
	cause := w.refusal(rj)
	if cause == nil {
		return false, nil
	}
	it := w.outcome(context.WithoutCancel(ctx), rj, nil, cause, 0)
	refused, _, err := w.writeManual(ctx, it.rec, "")
	if err != nil {
		return false, fmt.Errorf("fail job %s, which must not run (%w): %w", rj.job.ID, cause, err)
	}
	if refused == nil {
		w.manualFinished(ctx, it)
	}
	return true, nil
}

// manualStarted calls the JobStarted hook for a job handed to the caller:
// its attempt starts with the caller's work, as a processor's starts
// with the processor.
func (w *Worker) manualStarted(job *Job) {
	if h := w.opts.Hooks.JobStarted; h != nil {
		h(job)
	}
}

// manualFinished logs an attempt whose outcome a manual call wrote and
// calls the JobFinished hook, as the processing worker does for its own.
func (w *Worker) manualFinished(ctx context.Context, it *finishItem) {
	w.logFinished(ctx, it)
	if run := it.rj.stored.schedulerRun; run != nil {
		w.checkAdvanced(run) //nolint:contextcheck // the check outlives this call: it ends with the worker (advances.ctx), not with the caller's ctx
	}
	if h := w.opts.Hooks.JobFinished; h != nil {
		h(it.rj.job, it.outcome, it.took, it.err)
	}
}

// waitMarker blocks on the queue's marker for at most d, or until ctx
// ends. go-redis sends BZPOPMIN's timeout in whole seconds and (unless the
// client sets ContextTimeoutEnabled) does not end a blocking read when ctx
// does, so a key of this call's own is written at d, or when ctx ends, to
// end the wait on time. That write cannot end a wait on a Redis that stopped
// answering: then a ctx deadline ends it (bounded.Call), and the wake key is
// removed after the call returns.
func (w *Worker) waitMarker(ctx context.Context, d time.Duration) error {
	wake := w.q.k.WorkerWake(w.id + "." + strconv.FormatUint(w.callSeq.Add(1), 36))
	var woken atomic.Bool
	var wakers sync.WaitGroup
	wakeUp := func() {
		defer wakers.Done()
		woken.Store(true)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
		defer cancel()
		// With a lifetime: a process killed before the key is removed
		// does not leave it forever.
		_ = writeWake(wctx, w.q.rdb, wake, wakeLifetimeMin+d)
	}
	wakers.Add(2)
	timer := time.AfterFunc(d, wakeUp)
	stopCtxWake := context.AfterFunc(ctx, wakeUp)
	block := max(time.Second, (d+time.Second-1)/time.Second*time.Second)
	pop := func(ctx context.Context) (*redis.ZWithKey, error) {
		return w.q.rdb.BZPopMin(ctx, block, w.q.k.Marker(), wake).Result()
	}
	// While Redis does not answer, neither does the wake-up: a ctx whose
	// deadline comes before the blocking call's own end (block and the
	// client's timeouts) is kept by bounded.Call.
	var err error
	budget := w.q.callBudget
	if budget > 0 {
		budget += block
	}
	if bounded.Needed(ctx, budget) {
		_, err = bounded.Call(ctx, pop)
	} else {
		_, err = pop(ctx)
	}
	cleanUp := func() {
		if timer.Stop() {
			wakers.Done()
		}
		if stopCtxWake() {
			wakers.Done()
		}
		wakers.Wait()
		if woken.Load() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
			w.q.rdb.Del(dctx, wake) // popped already, or left by a wake that came late
			cancel()
		}
	}
	if errors.Is(err, bounded.ErrNoAnswer) {
		// Abandoned: the wake-up and the wake key's removal wait for
		// Redis too, each ended by wakeTimeout; the caller does not.
		go cleanUp()
		return err
	}
	cleanUp()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil, errors.Is(err, redis.Nil), isUnblocked(err):
		return nil
	}
	return err
}

// checkLockToken refuses tokens that cannot be a job's lock value.
func checkLockToken(token string) error {
	switch token {
	case "":
		return optionError("the lock token must not be empty")
	case "0":
		return optionError(`lock token "0" means "no lock check" to BullMQ; drover moves only locked jobs: choose another token`)
	}
	return nil
}

// errMovedToWait is the attempt error MoveToWait hands to Worker.outcome.
var errMovedToWait = errors.New("moved back to wait")

// Complete ends the job's attempt as completed with value (JSON-encoded as
// Queue.Add encodes data; nil stores null), as BullMQ's
// job.moveToCompleted(value, token, false): the job's removeOnComplete (or
// the worker's) applies, a flow parent gets the result, a deduplication id
// is freed. token must be the job's current lock value (see
// Worker.NextJob), so a job Node took with getNextJob can be completed
// here and the other way round.
//
// Errors leave Redis untouched: ErrInvalidData when value is not JSON;
// ErrLockLost when the job holds no lock (it expired, or the attempt
// already ended; the message names the job's state); ErrJobLocked when
// another token holds it; ErrJobNotFound; ErrPendingDependencies or
// ErrFailedChildren when children the job added are pending or failed (the
// job stays active and locked, as in BullMQ: Fail it, or wait). A job
// handed to a Processor cannot be completed here: its processor returns.
//
// A Job read with Queue.GetJob (a job another process took) must be read
// after the job was taken: its attempt count, stack traces and timeline
// are written from it, with the defaults of a worker without options
// (Node's job from queue.getJob uses the Queue's options alike), or, read
// through Worker.Queue, with that worker's options (BullMQ's
// Job.fromId(worker, id)). The Job's fields are not updated.
func (j *Job) Complete(ctx context.Context, token string, value any) error {
	if j == nil {
		return errNilJob
	}
	_, err := j.complete(ctx, token, value, false)
	return err
}

// complete is Complete, taking the next job with next.
func (j *Job) complete(ctx context.Context, token string, value any, next bool) (*Job, error) {
	if value != nil {
		b, err := jobcodec.EncodeData(value)
		if err != nil {
			return nil, j.err("complete", fmt.Errorf("%w: return value: %w", ErrInvalidData, err))
		}
		value = json.RawMessage(b) // outcome stores it as encoded here
	}
	return j.endAttempt(ctx, "complete", token, value, nil, next)
}

// CompleteAndNext is Complete followed, in the same atomic step, by the
// take of the next ready job under the same token, as BullMQ's
// job.moveToCompleted(value, token, true) (its default): one call ends
// one attempt and starts the next. It returns the job taken, locked with
// token as Worker.NextJob would have, or nil when none was ready (the
// queue is empty, paused, at its global concurrency or rate limited: call
// NextJob to wait). A job that must not run is failed, as NextJob fails
// it, and the one after it taken.
//
// The take uses the options (lock duration, name, limiter) of the worker
// whose NextJob took this job, or through whose queue (Worker.Queue) it
// was read; for a job read with another Queue, those of a worker without
// options. A job read through a worker with a Processor is refused with
// ErrInvalidOption (that worker hands out nothing). A refused completion
// (the errors of Complete) takes nothing. When the reply is lost, what the call did is asked of
// Redis, and the job it took is returned as if the reply had come; when
// Redis cannot be asked either, the error is returned and the job taken, if
// any, stays active under token until the stalled checker gives it back.
func (j *Job) CompleteAndNext(ctx context.Context, token string, value any) (*Job, error) {
	if j == nil {
		return nil, errNilJob
	}
	return j.complete(ctx, token, value, true)
}

// Fail ends the job's attempt with err, decided as for an error a Processor
// returned (BullMQ's job.moveToFailed(err, token)): with attempts left and
// no Unrecoverable wrap the job is retried, at once or after its backoff
// (the worker's BackoffStrategies apply); otherwise it fails for good, its
// removeOnFail (or the worker's) applies and a flow parent is told per its
// policy. Delay and ErrRateLimited mean what they mean to a processor. The
// token and error rules are Complete's (pending children do not stop a
// failure); a nil err, or one whose Error method panics (a typed nil
// pointer), is refused with ErrInvalidOption.
func (j *Job) Fail(ctx context.Context, token string, err error) error {
	if j == nil {
		return errNilJob
	}
	if bad := checkFailCause("Fail", err); bad != nil {
		return j.err("fail", bad)
	}
	_, err = j.endAttempt(ctx, "fail", token, nil, err, false)
	return err
}

// checkFailCause refuses a nil err, and one whose Error method panics (a
// typed nil pointer passed as the error, usually): the failure's reason is
// read from it, and the panic ended the caller's goroutine in the middle
// of Fail, the job left active under its lock. call names the method.
func checkFailCause(call string, err error) error {
	if err == nil {
		return optionError("%s needs an error", call)
	}
	if p := errorPanics(err); p != nil {
		return optionError("%s needs an error whose Error method works: a %T panicked (a typed nil?): %v", call, err, p)
	}
	return nil
}

// FailAndNext is Fail followed, in the same atomic step, by the take of
// the next ready job under the same token, as BullMQ's
// job.moveToFailed(err, token, true): when the job fails for good or is
// retried after a backoff, the next job is taken as CompleteAndNext takes
// it; a job retried at once goes back to wait and nothing is taken (nil),
// as BullMQ's retry takes nothing.
func (j *Job) FailAndNext(ctx context.Context, token string, err error) (*Job, error) {
	if j == nil {
		return nil, errNilJob
	}
	if bad := checkFailCause("FailAndNext", err); bad != nil {
		return nil, j.err("fail", bad)
	}
	return j.endAttempt(ctx, "fail", token, nil, err, true)
}

// MoveToDelayed ends the job's attempt by moving it to delayed until until
// (now if that has passed) without spending an attempt, as BullMQ's
// job.moveToDelayed(timestamp, token). The token and error rules are
// Complete's.
func (j *Job) MoveToDelayed(ctx context.Context, token string, until time.Time) error {
	if j == nil {
		return errNilJob
	}
	if until.IsZero() {
		return j.err("move to delayed", optionError("MoveToDelayed needs a time, got the zero time"))
	}
	var now time.Time
	if j.queue != nil {
		now = j.queue.clock.Now()
	}
	_, err := j.endAttempt(ctx, "move to delayed", token, nil, Delay(until.Sub(now)), false)
	return err
}

// MoveToWait ends the job's attempt by putting it back where it waits
// (wait, read next, or the front of its priority band) without spending an
// attempt, as BullMQ's job.moveToWait(token); the attempt is recorded as
// OutcomeRequeued. The token and error rules are Complete's.
func (j *Job) MoveToWait(ctx context.Context, token string) error {
	if j == nil {
		return errNilJob
	}
	_, err := j.endAttempt(ctx, "move to wait", token, nil, errMovedToWait, false)
	return err
}

// ExtendLock renews the job's lock for d when token holds it, and takes
// the job off the stalled checker's suspects, as BullMQ's
// job.extendLock(token, d). It does not look at the job's state. A lock
// that is gone is ErrLockLost, one another token holds is ErrJobLocked;
// neither writes anything.
func (j *Job) ExtendLock(ctx context.Context, token string, d time.Duration) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("extend the lock of"); err != nil {
		return err
	}
	const op = "extend the lock of"
	if err := j.queue.check(ctx); err != nil {
		return j.err(op, err)
	}
	if err := checkLockToken(token); err != nil {
		return j.err(op, err)
	}
	if d < time.Millisecond {
		return j.err(op, optionError("the lock duration must be at least 1ms, got %s", d))
	}
	lost, err := scripts.ExtendLocks(ctx, j.queue.jobWrites(), j.queue.k, d.Milliseconds(), "", 0, []string{j.ID}, []string{token})
	if err != nil {
		return j.err(op, err)
	}
	if len(lost) > 0 {
		if lost[0].Taken {
			return j.err(op, lockTakenError())
		}
		return j.err(op, fmt.Errorf("%w: no lock (it expired, or the attempt ended)", ErrLockLost))
	}
	return nil
}

func lockTakenError() error {
	return fmt.Errorf("%w: another token holds the lock", ErrJobLocked)
}

// endAttempt writes the end of the job's attempt under token: result and
// cause are what a processor would have returned. With next, the same call
// takes the next job under token (CompleteAndNext, FailAndNext).
func (j *Job) endAttempt(ctx context.Context, op, token string, result any, cause error, next bool) (*Job, error) {
	if err := j.queue.check(ctx); err != nil {
		return nil, j.err(op, err)
	}
	if err := j.storedIDErr(op); err != nil {
		return nil, err
	}
	if err := checkLockToken(token); err != nil {
		return nil, j.err(op, err)
	}
	rj := j.run
	if rj != nil && rj.w.proc != nil {
		return nil, j.err(op, errors.New("the job is run by a Processor: its processor's return ends the attempt"))
	}
	if rj == nil || rj.token != token {
		// Taken elsewhere (a Node worker, another process) or under
		// another token: the stored job says what the finish needs.
		var err error
		if rj, err = j.attemptOf(token); err != nil {
			return nil, j.err(op, err)
		}
	}
	w := rj.w
	if next && w.proc != nil {
		// The job would be taken from the processing worker's queue into
		// the caller's hands, where that worker cannot hand it on.
		return nil, j.err(op, optionError("taking the next job needs a worker without a Processor; the job was read through one with a Processor (use Complete or Fail)"))
	}
	it := w.outcome(context.WithoutCancel(ctx), rj, result, cause, time.Since(rj.began))
	exact := ""
	if next && it.rec.Kind != scripts.FinishRetry && !w.closing.Load() {
		// BullMQ's retry at once takes nothing, nor does a closing worker.
		exact = token
	}
	code, f, err := w.writeManual(ctx, it.rec, exact)
	if err != nil {
		return nil, j.err(op, err)
	}
	switch {
	case code == nil:
		w.manualFinished(ctx, it)
		return w.nextOf(ctx, f, token, next)
	case errors.Is(code, scripts.ErrLockTaken):
		return nil, j.err(op, lockTakenError())
	case errors.Is(code, scripts.ErrLockMissing), errors.Is(code, ErrNotInState):
		state, serr := j.queue.GetJobState(ctx, j.ID)
		if serr != nil {
			state = "unknown"
		}
		if errors.Is(code, ErrNotInState) {
			return nil, j.err(op, fmt.Errorf("%w: it is %s, not active", code, state))
		}
		return nil, j.err(op, fmt.Errorf("%w: no lock (it expired, or the attempt ended); the job is %s", ErrLockLost, state))
	case errors.Is(code, ErrPendingDependencies), errors.Is(code, ErrFailedChildren):
		return nil, j.err(op, fmt.Errorf("%w: the job stays active and locked", code))
	}
	return nil, j.err(op, code)
}

// nextOf hands out the job a finish with fetch-next took under token, as
// NextJob hands out its take: a job that must not run is failed and the
// next one taken without waiting.
func (w *Worker) nextOf(ctx context.Context, f scripts.Fetch, token string, next bool) (*Job, error) {
	if !next || len(f.Jobs) == 0 {
		return nil, nil
	}
	job, err := w.handOut(ctx, f.Jobs[0], token)
	if job != nil || err != nil {
		return job, err
	}
	return w.NextJob(ctx, token, 0)
}

// handOut turns a job just taken under token into the caller's Job, or,
// when the job must not run, fails it as the processing worker fails it
// without running it and returns nil, nil.
func (w *Worker) handOut(ctx context.Context, f scripts.Fetched, token string) (*Job, error) {
	job := w.manualJob(ctx, f, token)
	refused, err := w.refuseManual(ctx, job.run)
	if err != nil {
		return nil, w.nextJobErr(ctx, err)
	}
	if refused {
		return nil, nil
	}
	w.manualStarted(job)
	return job, nil
}

// attemptOf builds the attempt of a job not taken by this handle's
// NextJob (read with Queue.GetJob, taken by Node or another process): its
// finish record comes from the stored options. A job read through a
// worker's own queue (Worker.Queue) is finished with that worker's options,
// as BullMQ's Job.fromId(worker, id); otherwise the defaults of a worker
// without options apply (no worker retention, no custom backoff
// strategies), as for a Node job read with queue.getJob.
func (j *Job) attemptOf(token string) (*runningJob, error) {
	opts, err := jobcodec.DecodeOpts(j.RawOpts)
	if err != nil {
		return nil, fmt.Errorf("stored options: %w", err)
	}
	w := j.queue.worker // read through Worker.Queue: that worker's options
	if w == nil {
		w = j.queue.defaultsWorker()
	}
	if j.run != nil {
		w = j.run.w // the job's own worker, under another token
	}
	s := storedForFinish{
		attempts: opts.Attempts, attemptsMade: int64(j.AttemptsMade), dedupID: j.DeduplicationID,
		lifo: opts.LIFO, timeoutMs: opts.Timeout, stackTraceLimit: opts.StackTraceLimit,
		removeOnComplete: opts.RemoveOnComplete, removeOnFail: opts.RemoveOnFail,
	}
	if j.Parent != nil {
		s.parentKey = j.Parent.Key()
	}
	started := j.ProcessedOn
	if started.IsZero() {
		started = j.queue.clock.Now()
	}
	rj := &runningJob{job: j, stored: s, token: token, started: started, w: w, began: time.Now()}
	rj.ctx, rj.cancel = context.Background(), func(error) {}
	return rj, nil
}

// defaultsWorker is a worker with default options and no goroutines, whose
// outcome rules finish jobs that no worker of this process took.
func (q *Queue) defaultsWorker() *Worker {
	o := (&WorkerOptions{Prefix: q.k.Prefix(), Logger: q.logger}).withDefaults()
	return &Worker{q: q, opts: o, rand: mathrand.Float64, log: o.Logger.With(slog.String(logkey.Queue, q.name))}
}

// manualSends bounds the sends of one manual write whose replies are lost.
const manualSends = 3

// writeManual writes one finish record with finishJobs and returns the
// record's code (refused: why the script wrote nothing). With exact, the
// same call takes one job locked with exact when the record was done
// (BullMQ's fetchNext), which f holds; else it fetches nothing. A call
// whose reply was lost is settled (scripts.SettleCall) rather than sent
// again, as the worker's writes are (a job it took is not learnt: it stays
// active under exact until its lock expires).
func (w *Worker) writeManual(ctx context.Context, rec scripts.FinishRecord, exact string) (refused error, f scripts.Fetch, err error) {
	recs := []scripts.FinishRecord{rec}
	for send := 1; ; send++ {
		a := w.manualCallArgs()
		if exact != "" {
			a.Count, a.ExactLock = 1, exact
			if l := w.opts.Limiter; l != nil {
				a.LimitMax, a.LimitWindow = l.Max, l.Duration.Milliseconds()
			}
		}
		codes, f, err := scripts.FinishJobs(ctx, w.q.jobWrites(), w.q.k, a, w.metricsPoints(), recs)
		if err == nil {
			return codes[0], f, nil
		}
		if !mayHaveRun(err) || ctx.Err() != nil || send == manualSends {
			return nil, scripts.Fetch{}, err
		}
		var took scripts.ExactTake
		if exact != "" {
			took = scripts.ExactTake{Lock: exact, At: a.Now}
		}
		st, serr := w.settleManual(ctx, a.Token, recs, took)
		if serr != nil {
			return nil, scripts.Fetch{}, fmt.Errorf("%w (and learning whether it was written failed: %w)", err, serr)
		}
		if !st.Resend[0] {
			// Written; the job its fetch-next took, if any, is handed out.
			return st.Codes[0], scripts.Fetch{Jobs: st.Jobs}, nil
		}
		// Not written: send it again under a new call token.
	}
}

// manualCallArgs are finishJobs' call arguments for a manual write: a
// fresh call token and no fetch.
func (w *Worker) manualCallArgs() scripts.FetchArgs {
	id := w.id
	if id == "" {
		id = newID()
	}
	return scripts.FetchArgs{Now: w.q.nowMs(), Token: id + ":m" + strconv.FormatUint(w.callSeq.Add(1), 36),
		LockDuration: w.opts.LockDuration.Milliseconds(), WorkerName: w.opts.Name}
}

// startManual is Start for a worker without a Processor: the stalled
// checker (BullMQ's startStalledCheckTimer) and the clock measurement run;
// nothing fetches, so Close finds no fetcher, no job in flight and no
// named connection.
func (w *Worker) startManual(probe context.Context) {
	if w.clocker != nil {
		w.clocker.measure(probe)
	}
	w.fetchCtx, w.stopFetch = context.WithCancel(context.Background())
	w.jobsCtx, w.cancelJobs = context.WithCancelCause(context.Background())
	w.bgCtx, w.stopBG = context.WithCancel(context.Background())
	w.advances.start()
	w.fetchDone = make(chan struct{})
	close(w.fetchDone)
	w.forceFinish = make(chan struct{})
	w.forceCtx, w.forced = context.WithCancel(context.Background())
	w.started.Store(true)
	w.warnEviction(probe)
	w.log.InfoContext(probe, "manual worker started")
	w.runClockAndChecker()
}
