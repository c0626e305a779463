package drover

import (
	"fmt"

	"github.com/seed40057009/drover/internal/scripts"
)

// Outcome is how one attempt of a job ended. The worker decides it, hooks
// receive it, the attempt timeline stores it, and metrics, inspect, the CLI
// and the dashboard show it; all of them use these values.
//
// Its text form (String, MarshalText) is the name in the table below, used
// in JSON and logs. The zero value, OutcomeUnknown, is an attempt whose end
// nobody recorded.
type Outcome uint8

// The outcomes. To add one, add a constant here and its row in outcomes.
const (
	// OutcomeUnknown: the end of the attempt was not recorded (a Node
	// BullMQ worker ran it, or the record was lost).
	OutcomeUnknown Outcome = iota
	// OutcomeCompleted: the processor returned a value; the job is completed.
	OutcomeCompleted
	// OutcomeRetried: the processor failed, attempts are left and there is
	// no backoff: the job is back in wait.
	OutcomeRetried
	// OutcomeRetryDelayed: the processor failed, attempts are left, and the
	// job waits in delayed for its backoff.
	OutcomeRetryDelayed
	// OutcomeDelayed: the processor asked to run the job later (Delay); no
	// attempt was spent.
	OutcomeDelayed
	// OutcomeRequeued: the job went back to wait without spending an
	// attempt: its worker closed while it ran, or a manual caller moved it
	// back (Job.MoveToWait).
	OutcomeRequeued
	// OutcomeFailed: the processor failed and the job failed for good
	// although attempts were left: its backoff said stop (−1 or an error),
	// or it was started more than WorkerOptions.MaxStartedAttempts times.
	OutcomeFailed
	// OutcomeFailedUnrecoverable: the processor returned an Unrecoverable
	// error (or the job could not run at all: undecodable, stalled too
	// often), whatever attempts were left; the job failed for good.
	OutcomeFailedUnrecoverable
	// OutcomeRetriesExhausted: the attempt failed, not unrecoverably, and
	// it was the job's last one (AttemptsMade reached Opts.Attempts); the
	// job failed for good. (Redis gets BullMQ's retries-exhausted event
	// whenever the last attempt fails, unrecoverable or not.)
	OutcomeRetriesExhausted
	// OutcomeStalled: the worker stopped renewing the job's lock and the
	// stalled checker moved the job back (recorded by no worker: inspect
	// infers it from the stalled counter).
	OutcomeStalled
	// OutcomeCancelled: Queue.CancelJob cancelled the running attempt and
	// the job failed for good (the default), or it asked for a retry and
	// this was the last attempt. A cancelled attempt that is retried is
	// OutcomeRetried or OutcomeRetryDelayed; its error wraps ErrJobCancelled.
	OutcomeCancelled
	// OutcomeTimedOut: the attempt ran past its timeout (JobOptions.Timeout
	// or WorkerOptions.JobTimeout) and was the job's last one; the job failed
	// for good. A timed-out attempt with attempts left is OutcomeRetried or
	// OutcomeRetryDelayed; its error wraps ErrJobTimedOut.
	OutcomeTimedOut
	// OutcomeWaitingChildren: the processor moved its job to
	// waiting-children (Job.MoveToWaitingChildren) to wait for children it
	// added; no attempt was spent, and the job runs again once they are
	// done.
	OutcomeWaitingChildren
	// OutcomeRateLimited: the processor returned ErrRateLimited (usually
	// after Worker.RateLimit, when an outside service said "too many
	// requests"); the job is back in wait (or prioritized) and no attempt
	// was spent, as with BullMQ's Worker.RateLimitError.
	OutcomeRateLimited

	numOutcomes
)

// outcomeInfo is what the rest of drover needs to know about an outcome.
type outcomeInfo struct {
	name string // the text form; public, may be renamed
	// stored is the code in the stored attempt timeline (see
	// timelineRecord). It never changes once written: old timelines must
	// keep decoding.
	stored string
	// kind is the finishJobs record kind that writes this outcome ("" for
	// outcomes no worker writes).
	kind string
	// failed: the job is in failed for good after this attempt.
	failed bool
	// retried: the attempt was spent and another one follows.
	retried bool
}

// outcomes is the one table of outcomes.
var outcomes = [numOutcomes]outcomeInfo{
	OutcomeUnknown:             {name: "unknown", stored: "?"},
	OutcomeCompleted:           {name: "completed", stored: "c", kind: scripts.FinishCompleted},
	OutcomeRetried:             {name: "retried", stored: "r", kind: scripts.FinishRetry, retried: true},
	OutcomeRetryDelayed:        {name: "retry-delayed", stored: "d", kind: scripts.FinishRetryDelayed, retried: true},
	OutcomeDelayed:             {name: "delayed", stored: "m", kind: scripts.FinishMoveDelayed},
	OutcomeRequeued:            {name: "requeued", stored: "w", kind: scripts.FinishRequeue},
	OutcomeFailed:              {name: "failed", stored: "f", kind: scripts.FinishFailed, failed: true},
	OutcomeFailedUnrecoverable: {name: "failed-unrecoverable", stored: "u", kind: scripts.FinishFailed, failed: true},
	OutcomeRetriesExhausted:    {name: "retries-exhausted", stored: "x", kind: scripts.FinishFailed, failed: true},
	OutcomeStalled:             {name: "stalled", stored: "s"},
	OutcomeCancelled:           {name: "cancelled", stored: "k", kind: scripts.FinishFailed, failed: true},
	OutcomeTimedOut:            {name: "timed-out", stored: "t", kind: scripts.FinishFailed, failed: true},
	OutcomeWaitingChildren:     {name: "waiting-children", stored: "p"},
	OutcomeRateLimited:         {name: "rate-limited", stored: "l", kind: scripts.FinishRequeue},
}

func (o Outcome) info() outcomeInfo {
	if o >= numOutcomes {
		return outcomes[OutcomeUnknown]
	}
	return outcomes[o]
}

// String is the outcome's name, e.g. "retry-delayed".
func (o Outcome) String() string { return o.info().name }

// Failed reports whether the job failed for good after this attempt.
func (o Outcome) Failed() bool { return o.info().failed }

// Retried reports whether the attempt was spent and another one follows
// (at once or after a backoff).
func (o Outcome) Retried() bool { return o.info().retried }

// MarshalText returns the outcome's name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText parses an outcome's name.
func (o *Outcome) UnmarshalText(b []byte) error {
	out, ok := ParseOutcome(string(b))
	if !ok {
		return fmt.Errorf("drover: unknown outcome %q", b)
	}
	*o = out
	return nil
}

// ParseOutcome returns the outcome named name, and whether there is one.
func ParseOutcome(name string) (Outcome, bool) {
	for o, info := range outcomes {
		if info.name == name {
			return Outcome(o), true
		}
	}
	return OutcomeUnknown, false
}

// Outcomes lists every outcome, in order.
func Outcomes() []Outcome {
	out := make([]Outcome, numOutcomes)
	for o := range out {
		out[o] = Outcome(o)
	}
	return out
}
