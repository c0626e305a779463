package drover

// Ending a running attempt early: cancelled from anywhere (Queue.CancelJob,
// which reaches the worker in whatever process runs the job) or timed out
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

	"github.com/seed40057009/drover/internal/scripts"
)

// CancelOptions configure Queue.CancelJob. Nil means defaults.
type CancelOptions struct {
	// Retry makes the cancelled attempt count as an ordinary failure: the
	// job is retried per its Attempts and Backoff (OutcomeRetried or
	// OutcomeRetryDelayed; OutcomeCancelled when it was the last attempt).
	// Default false: the job fails for good whatever attempts are left
	// (OutcomeCancelled), as with an Unrecoverable error.
	Retry bool
}

// maxCancelReason bounds the reason CancelJob sends (it becomes the job's
// failedReason).
const maxCancelReason = 1024

// CancelJob asks the drover worker running job id, in this process or any
// other, to cancel the attempt: the processor's context is cancelled with a
// cause wrapping ErrJobCancelled, and once the processor returns, the
// attempt ends with the error "cancelled: <reason>", failing the job for good
// (OutcomeCancelled) unless opts.Retry.
//
// nil means the worker received the request. The race with the job's own
// end is settled by the worker: if the processor had already returned, its
// result stands and the request is ignored. Otherwise:
//   - ErrJobNotFound: there is no such job;
//   - ErrNotInState: the job is not running (the error names its state);
//   - ErrCancelNotDelivered: a Node BullMQ worker runs the job (it does not
//     listen for drover's requests and is left alone), or the drover worker
//     running it is not subscribed (its Redis connection is down).
//
// The request is a Redis PUBLISH; nothing is written, so a failed CancelJob
// leaves Redis as it was.
func (q *Queue) CancelJob(ctx context.Context, id, reason string, opts *CancelOptions) error {
	if err := q.check(); err != nil {
		return err
	}
	if id == "" {
		return errors.New("drover: CancelJob needs a job id")
	}
	if len(reason) > maxCancelReason {
		return fmt.Errorf("%w: cancel reason must be at most %d bytes, got %d", ErrInvalidOption, maxCancelReason, len(reason))
	}
	retry := opts != nil && opts.Retry
	res, err := scripts.CancelJob(ctx, q.writes(), q.k, id, retry, reason)
	if err != nil {
		return q.Job(id).stateErr(ctx, "cancel", "running (active with a live lock)", err)
	}
	switch res {
	case scripts.CancelDelivered:
		return nil
	case scripts.CancelForeign:
		return &JobError{Queue: q.name, JobID: id, Op: "cancel",
			Err: fmt.Errorf("%w: a worker that does not listen for cancel requests (Node BullMQ) runs it", ErrCancelNotDelivered)}
	default:
		return &JobError{Queue: q.name, JobID: id, Op: "cancel",
			Err: fmt.Errorf("%w: the drover worker running it is not subscribed (its connection may be down)", ErrCancelNotDelivered)}
	}
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
