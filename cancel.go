package drover

// Ending a job early: cancelled from anywhere (Queue.CancelJob, which fails
// a job not yet running at once and reaches the worker in whatever process
// runs a running one) or, for a running attempt, timed out
// (JobOptions.Timeout, WorkerOptions.JobTimeout). BullMQ 6.7's
// Worker.cancelJob only aborts a job of the calling process; this is
// drover's own signal (docs/bullmq-format.md, "Cancel requests"), which
// Node workers never subscribe to.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keytype"
	"github.com/seed40057009/drover/internal/scripts"
)

// CancelOptions configure Queue.CancelJob. Nil means defaults.
type CancelOptions struct {
	// Retry makes the cancelled attempt count as an ordinary failure: the
	// job is retried per its Attempts and Backoff (OutcomeRetried or
	// OutcomeRetryDelayed; OutcomeCancelled when it was the last attempt).
	// Default false: the job fails for good whatever attempts are left
	// (OutcomeCancelled), as with an Unrecoverable error. A job not running
	// has no attempt to retry: CancelJob refuses it (ErrNotInState) and
	// leaves it queued.
	Retry bool
	// NotRunning cancels the job only if no worker runs it yet (waiting,
	// paused, prioritized or delayed): a job a worker took meanwhile is
	// refused with ErrNotInState naming it active, and its attempt goes on.
	// The check and the cancel are one Redis script. For callers that
	// showed someone a job not yet running and were told "cancel it", not
	// "stop its attempt". It cannot be combined with Retry (a job not
	// running has no attempt to retry).
	NotRunning bool
	// Running cancels the job only if a worker runs it now: a job not
	// running (its attempt failed and it went back to waiting or to
	// delayed for its backoff, or no worker took it yet) is refused with
	// ErrNotInState naming its state, and stays queued with its attempts.
	// The check and the cancel are one Redis script. For callers that
	// showed someone a running attempt and were told "cancel it", not
	// "fail this job". It cannot be combined with NotRunning.
	Running bool
}

// maxCancelReason bounds the reason CancelJob sends (it becomes the job's
// failedReason).
const maxCancelReason = 1024

// CancelJob cancels job id, running or not yet running (River's JobCancel).
//
// A job that is not running (waiting, paused, prioritized or delayed) fails
// for good in the call, as a Node BullMQ worker failing it with
// UnrecoverableError would leave it, less the attempt it never made:
// failedReason "cancelled: <reason>" (or "cancelled"), in the failed set, the
// failed event (its prev names the state it left), its deduplication id
// released, its flow parent treated as for any child that failed for good
// (its ParentPolicy), and removed at once if its own RemoveOnFail says so (a
// worker's default RemoveOnFail does not apply: no worker takes part). Its
// AttemptsMade, ProcessedOn and stack trace stay unset, and no
// retries-exhausted event is written.
//
// A running job's drover worker, in this process or any other, is asked to
// cancel the attempt: the processor's context is cancelled with a cause
// wrapping ErrJobCancelled, and once the processor returns, the attempt ends
// with the error "cancelled: <reason>", failing the job for good
// (OutcomeCancelled) unless opts.Retry. The race with the job's own end is
// settled by the worker: if the processor had already returned, its result
// stands and the request is ignored.
//
// Both cases are one Redis script, so a worker taking the job at the same
// moment is ordered with the cancel: either the cancel runs first and the
// job is failed before any worker sees it, or the worker took it first and
// the cancel goes to the running attempt, as above.
//
// nil means the job is now failed or its worker received the request (or,
// when the connection of the worker's subscription went half-open unseen,
// Redis still counted it: the request is also kept in Redis for a minute,
// and the worker reads it there within about 5 s of reaching Redis again).
// Otherwise:
//   - ErrJobNotFound: there is no such job;
//   - ErrNotInState: the job is completed, failed, waiting for its children,
//     or active with its lock expired (the error names its state); or
//     opts.Retry was given for a job that is not running (there is no
//     attempt to retry);
//   - ErrSchedulerJob: the job is a job scheduler's next run, not yet
//     running (a scheduler makes its following run when a worker takes this
//     one, so failing it would stop the scheduler: remove or change the
//     scheduler instead);
//   - ErrCancelNotDelivered: a Node BullMQ worker runs the job (it does not
//     listen for drover's requests and is left alone), or the drover worker
//     running it is not subscribed (its Redis connection is down).
//
// Every error leaves Redis as it was.
func (q *Queue) CancelJob(ctx context.Context, id, reason string, opts *CancelOptions) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if id == "" {
		return errors.New("drover: CancelJob needs a job id")
	}
	if err := storedIDError(id); err != nil {
		return &JobError{Queue: q.name, JobID: id, Op: "cancel", Err: err}
	}
	if len(reason) > maxCancelReason {
		return fmt.Errorf("%w: cancel reason must be at most %d bytes, got %d", ErrInvalidOption, maxCancelReason, len(reason))
	}
	retry := opts != nil && opts.Retry
	notRunning := opts != nil && opts.NotRunning
	running := retry || opts != nil && opts.Running
	if running && notRunning {
		return fmt.Errorf("%w: CancelOptions.Retry and Running want a running attempt and NotRunning refuses one; give NotRunning alone", ErrInvalidOption)
	}
	want := "running (active with a live lock), waiting, prioritized or delayed"
	switch {
	case retry:
		want = "running (active with a live lock): CancelOptions.Retry retries a running attempt"
	case running:
		want = "running (active with a live lock): not cancelled, it stays queued with its attempts"
	case notRunning:
		want = "waiting, prioritized or delayed (not cancelled: a worker runs it now and its attempt goes on)"
	}
	res, err := q.cancel(ctx, id, retry, running, notRunning, reason)
	if err != nil {
		return q.Job(id).stateErr(ctx, "cancel", want, err)
	}
	switch res {
	case scripts.CancelDelivered, scripts.CancelEnded:
		return nil
	case scripts.CancelForeign:
		return &JobError{Queue: q.name, JobID: id, Op: "cancel",
			Err: fmt.Errorf("%w: a worker that does not listen for cancel requests (Node BullMQ) runs it", ErrCancelNotDelivered)}
	default:
		return &JobError{Queue: q.name, JobID: id, Op: "cancel",
			Err: fmt.Errorf("%w: the drover worker running it is not subscribed (its connection may be down)", ErrCancelNotDelivered)}
	}
}

// cancel runs the cancel script with the job's removeOnFail, read from its
// opts; the script refuses to act on other opts (the job was replaced
// between the read and the script), and the read is made again.
func (q *Queue) cancel(ctx context.Context, id string, retry, running, notRunning bool, reason string) (scripts.CancelResult, error) {
	failedReason := (&stopError{detail: strings.TrimSpace(reason)}).Error()
	// One call token for the tries: only the run that fails the job
	// records its reply, for a resend by the client (include/once.lua).
	call := scripts.NewCall(q.opts.AddRetryWindow)
	for range 3 {
		// redis.Nil: no job (the script says so) or no opts field.
		raw, err := q.rdb.HGet(ctx, q.k.Job(id), "opts").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, keytype.Explain(ctx, q.rdb, q.k, err, id)
		}
		// A job whose opts do not decode keeps every failed job (no
		// removeOnFail read): cancelling it must not depend on them.
		var spec string
		if o, err := jobcodec.DecodeOpts(raw); err == nil {
			spec = o.RemoveOnFail.Spec()
		}
		res, err := scripts.CancelJob(ctx, q.writes(), q.k, call, id, retry, running, notRunning, reason,
			scripts.Queued{NowMs: q.now(ctx).UnixMilli(), FailedReason: failedReason, KeepSpec: spec, Opts: raw})
		if err != nil || res != scripts.CancelStale {
			return res, err
		}
	}
	return 0, fmt.Errorf("the job was replaced during each of 3 tries")
}

// stopError ends an attempt early: the cause of the processor's context and
// the attempt's error. It wraps ErrJobCancelled or ErrJobTimedOut.
type stopError struct {
	timedOut bool // else cancelled
	detail   string
	retry    bool // the job is retried per its policy (timeouts always are)
}

func (e *stopError) Error() string {
	if e.timedOut {
		return "timed out after " + e.detail
	}
	if e.detail == "" {
		return "cancelled"
	}
	return "cancelled: " + e.detail
}

func (e *stopError) Unwrap() error {
	if e.timedOut {
		return ErrJobTimedOut
	}
	return ErrJobCancelled
}

func cancelledError(m scripts.CancelMessage) *stopError {
	return &stopError{detail: strings.TrimSpace(m.Reason), retry: m.Retry}
}

func timedOutError(limit time.Duration, from string) *stopError {
	return &stopError{timedOut: true, detail: limit.String() + " (" + from + ")", retry: true}
}
