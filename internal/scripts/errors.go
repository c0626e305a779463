package scripts

import (
	"errors"
	"fmt"
)

// Errors a script can report. The root package re-exports them.
var (
	// ErrJobNotFound: the job hash does not exist (code -1).
	ErrJobNotFound = errors.New("job not found")
	// ErrLockMissing: the job's lock expired or was never taken (code -2).
	ErrLockMissing = errors.New("job lock missing")
	// ErrNotInState: the job is not in the state the operation needs (code -3).
	ErrNotInState = errors.New("job not in the expected state")
	// ErrLockTaken: another worker's token holds the job's lock (code -6).
	ErrLockTaken = errors.New("job lock held by another worker")
	// ErrPendingDependencies: a job cannot complete while children it waits
	// for are unfinished (code -4).
	ErrPendingDependencies = errors.New("job has pending dependencies")
	// ErrFailedChildren: a job cannot complete after a child failed with
	// failParentOnFailure (code -9).
	ErrFailedChildren = errors.New("job has a failed child")
	// ErrSchedulerJob: the job is a job scheduler's pending iteration (code -8).
	ErrSchedulerJob = errors.New("job is the pending iteration of a job scheduler")
	// ErrJobLocked: a worker is processing the job, so it cannot be changed.
	ErrJobLocked = errors.New("job is locked by a worker")
	// ErrQueueNotPaused: obliterate needs a paused queue.
	ErrQueueNotPaused = errors.New("queue is not paused")
	// ErrActiveJobs: obliterate without force found active jobs.
	ErrActiveJobs = errors.New("queue has active jobs")
)

// codeError maps a negative script result to its error.
func codeError(code int64) error {
	switch code {
	case -1:
		return ErrJobNotFound
	case -2:
		return ErrLockMissing
	case -3:
		return ErrNotInState
	case -4:
		return ErrPendingDependencies
	case -6:
		return ErrLockTaken
	case -8:
		return ErrSchedulerJob
	case -9:
		return ErrFailedChildren
	}
	return fmt.Errorf("unexpected script result %d", code)
}

// CodeError is codeError for callers that receive per-job codes (finishJobs).
// Code 0 is success and maps to nil.
func CodeError(code int64) error {
	if code == 0 {
		return nil
	}
	return codeError(code)
}
