package drover

import (
	"errors"
	"fmt"
	"time"

	"github.com/seed40057009/drover/internal/scripts"
)

// Errors to branch on with errors.Is.
var (
	// ErrJobNotFound: no job with that id exists in the queue.
	ErrJobNotFound = scripts.ErrJobNotFound
	// ErrNotInState: the job is not in the state the operation needs.
	ErrNotInState = scripts.ErrNotInState
	// ErrJobLocked: a worker is processing the job, so it cannot be changed;
	// for the manual calls (Job.Complete, Job.ExtendLock, ...), another
	// token than the one given holds the job's lock (BullMQ's "Lock
	// mismatch").
	ErrJobLocked = scripts.ErrJobLocked
	// ErrPendingDependencies: a job's processor returned, but the job cannot
	// complete while children added with it as parent are unfinished; the
	// attempt fails instead (retried per its attempts), as in BullMQ.
	ErrPendingDependencies = scripts.ErrPendingDependencies
	// ErrFailedChildren: a job cannot complete after one of its children
	// failed with failParentOnFailure; the job fails for good, as in BullMQ.
	ErrFailedChildren = scripts.ErrFailedChildren
	// ErrSchedulerJob: the job is a job scheduler's pending iteration.
	ErrSchedulerJob = scripts.ErrSchedulerJob
	// ErrParentNotFound: a flow's Parent names a job that does not exist.
	ErrParentNotFound = scripts.ErrParentNotFound
	// ErrParentConflict: a flow job's id exists as the child of another
	// parent that still exists (BullMQ: "cannot be replaced").
	ErrParentConflict = scripts.ErrParentConflict
	// ErrQueueNotPaused: Obliterate needs a paused queue.
	ErrQueueNotPaused = scripts.ErrQueueNotPaused
	// ErrActiveJobs: Obliterate without Force found jobs being processed.
	ErrActiveJobs = scripts.ErrActiveJobs
	// ErrClosed: the Queue or Worker was closed.
	ErrClosed = errors.New("drover: closed")
	// ErrNoQueue: an admin call (Retry, Remove, ...) on a Job that belongs
	// to no queue: the zero Job, or one built by hand.
	ErrNoQueue = errors.New("drover: the job belongs to no queue (built by hand, not read from a queue)")
	// ErrInvalidOption: an option has a value drover refuses. The wrapping
	// error names the option and the value. A nil context.Context given
	// to a method of Queue, Job, Worker, FlowProducer or QueueEvents is
	// refused with it too.
	ErrInvalidOption = errors.New("invalid option")
	// ErrInvalidData: job data cannot be stored (not JSON-serialisable,
	// over SizeLimit).
	ErrInvalidData = errors.New("invalid job data")
	// ErrInvalidJobID: a custom job id breaks BullMQ's id rules.
	ErrInvalidJobID = errors.New("invalid job id")
	// ErrWorkerClosing is the cancellation cause of a processor's context
	// when the worker's Close deadline passed. The job goes back to wait
	// without spending an attempt.
	ErrWorkerClosing = errors.New("drover: worker closing")
	// ErrJobCancelled is wrapped by the cancellation cause of a processor's
	// context when Queue.CancelJob cancelled the attempt, and by the
	// attempt's error (its text is "cancelled: <reason>").
	ErrJobCancelled = errors.New("drover: job cancelled")
	// ErrJobTimedOut is wrapped by the cancellation cause of a processor's
	// context when the attempt's timeout passed, and by the attempt's error.
	ErrJobTimedOut = errors.New("drover: job timed out")
	// ErrCancelNotDelivered: Queue.CancelJob found the job running, but no
	// drover worker that runs it heard the request (a Node BullMQ worker
	// runs it, or the drover worker's subscription is down). Nothing changed.
	ErrCancelNotDelivered = errors.New("drover: cancel request not delivered")
	// ErrLockLost is the cancellation cause of a processor's context when the
	// worker lost the job's lock; its result will not be written. The
	// manual calls (Job.Complete, Job.ExtendLock, ...) return it when the
	// job holds no lock: it expired, or the attempt already ended (BullMQ's
	// "Missing lock").
	ErrLockLost = errors.New("drover: job lock lost")

	// ErrOutcomeUnknown marks the error of a write that may or may not
	// have happened: it was sent, and no answer came before the call's
	// context ended (Redis paused, a frozen host, a partition) or the answer
	// was lost. A go-redis client ignores a context's deadline on the wire
	// (unless built with ContextTimeoutEnabled), so drover stops waiting
	// itself when ctx ends; the write may still run when Redis answers
	// again. The error wraps ctx.Err() when the context ended. Read the
	// state back, or repeat the call: the admin calls refuse a job no
	// longer in the state they need, and an add with a custom JobID is
	// stored once.
	ErrOutcomeUnknown = errors.New("drover: outcome unknown, the write may have happened")

	// ErrAddInDoubt marks an Add, AddBulk or FlowProducer.Add error after
	// which the jobs may or may not be stored: the answer to a send was
	// lost and no resend got through to learn it, or ctx ended while a send
	// had no answer. Without it in the chain, the error means nothing was
	// stored. With a custom JobID, adding again is safe either way. It
	// wraps ErrOutcomeUnknown.
	ErrAddInDoubt error = &childError{msg: "drover: add outcome unknown (the jobs may be stored)", parent: ErrOutcomeUnknown}
)

// childError is a sentinel that is also its parent for errors.Is.
type childError struct {
	msg    string
	parent error
}

func (e *childError) Error() string { return e.msg }
func (e *childError) Unwrap() error { return e.parent }

// JobError reports a failed operation on one job.
type JobError struct {
	Queue string
	JobID string
	Op    string
	Err   error
}

func (e *JobError) Error() string {
	return fmt.Sprintf("%s job %q in queue %q: %v", e.Op, e.JobID, e.Queue, e.Err)
}

func (e *JobError) Unwrap() error { return e.Err }

func optionError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

// unrecoverableError marks a processor error that must not be retried.
type unrecoverableError struct{ err error }

func (e *unrecoverableError) Error() string { return e.err.Error() }
func (e *unrecoverableError) Unwrap() error { return e.err }

// Unrecoverable wraps err so the worker fails the job for good, whatever
// attempts remain (BullMQ's UnrecoverableError).
func Unrecoverable(err error) error {
	if err == nil {
		err = errors.New("unrecoverable")
	}
	return &unrecoverableError{err: err}
}

// IsUnrecoverable reports whether err was made by Unrecoverable.
func IsUnrecoverable(err error) bool {
	var u *unrecoverableError
	return errors.As(err, &u)
}

// delayError asks the worker to move the job to delayed without spending an
// attempt (BullMQ's DelayedError after job.moveToDelayed).
type delayError struct{ delay int64 } // ms

func (e *delayError) Error() string { return fmt.Sprintf("job delayed by processor for %dms", e.delay) }

// Delay is returned by a processor to put its job back in the delayed set for
// d, without counting an attempt and without recording a failure. Use it to
// wait for something outside the queue (BullMQ's moveToDelayed + DelayedError).
func Delay(d time.Duration) error {
	return &delayError{delay: max(d.Milliseconds(), 0)}
}

// errZeroValue is the error of a call on a zero value of a type that needs
// its constructor (a Queue{} instead of NewQueue's).
// errNilJob is the error of a Job method called on a nil *Job (say, the
// Job of a GetJob whose error was dropped).
var errNilJob = fmt.Errorf("%w: the *drover.Job is nil", ErrInvalidOption)

// errNilContext is the error of a call given a nil context.Context, which
// go-redis would dereference (a panic) once the call reached it.
var errNilContext = fmt.Errorf("%w: the context.Context is nil (pass context.Background(), or the caller's context)", ErrInvalidOption)

func errZeroValue(typ, constructor string) error {
	return fmt.Errorf("%w: this %s is a zero value; make it with %s", ErrInvalidOption, typ, constructor)
}

// ErrRateLimited is returned by a processor whose job must wait because an
// outside service limits the rate (BullMQ's Worker.RateLimitError). The
// worker puts the job back where it waits (wait, or prioritized by its
// priority) without spending an attempt or recording a failure, and takes
// no job until the queue's limiter key expires or its
// WorkerOptions.MaxRateLimitWait passed (BullMQ's maximumRateLimitDelay). Call Worker.RateLimit (or
// Queue.RateLimit) first to set that key: ErrRateLimited alone does not set
// it, so without it the job is fetched again at once. Other workers of the
// queue wait for the key only if they apply a limit (see Queue.RateLimit).
var ErrRateLimited = errors.New("drover: rate limited by the processor")

// AddBulkError reports an AddBulk that failed part way. AddBulk sends its
// jobs in chunks of QueueOptions.AddBulkChunk, each chunk one atomic script
// call; the call as a whole is not atomic. The jobs before the failed chunk
// are stored and Results has one result for each of them, in order
// (jobs[:len(Results)]). When Unknown is 0 Redis refused the failed chunk
// (it answered with an error such as OOM) and nothing from jobs[len(Results):]
// is stored: resend exactly those. When Unknown is n > 0 the chunk's reply was
// lost, and so were those of drover's resends of it (see
// QueueOptions.AddRetryWindow): the next n jobs may or may not be stored
// (a resend of jobs without custom ids could store them twice; with custom
// ids a resend reports AddDuplicate for those that were).
type AddBulkError struct {
	Queue   string
	Total   int          // jobs in the call
	Results []*AddResult // one per stored job, in order
	Unknown int          // jobs after Results whose fate is unknown
	Err     error        // what failed the chunk
}

func (e *AddBulkError) Error() string {
	if e.Unknown > 0 {
		return fmt.Sprintf("add jobs to queue %q: %d of %d stored, %d unknown (reply lost): %v",
			e.Queue, len(e.Results), e.Total, e.Unknown, e.Err)
	}
	return fmt.Sprintf("add jobs to queue %q: %d of %d stored, the rest not: %v",
		e.Queue, len(e.Results), e.Total, e.Err)
}

func (e *AddBulkError) Unwrap() error { return e.Err }
