package scripts

import (
	"errors"
	"fmt"
)

// Errors a script can report. The root package re-exports those a caller
// can receive (ErrLockMissing and ErrLockTaken reach only the worker's logs).
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
	// ErrJobLocked: a worker is processing the job, so it cannot be changed
	// (code -12).
	ErrJobLocked = errors.New("job is locked by a worker")
	// ErrParentNotFound: a flow's parent job does not exist (code -5).
	ErrParentNotFound = errors.New("parent job not found")
	// ErrParentConflict: a job of a flow exists as the child of another
	// parent that still exists (code -7).
	ErrParentConflict = errors.New("job is already the child of another parent")
	// ErrQueueNotPaused: obliterate needs a paused queue (code -13).
	ErrQueueNotPaused = errors.New("queue is not paused")
	// ErrActiveJobs: obliterate without force found active jobs (code -14).
	ErrActiveJobs = errors.New("queue has active jobs")
	// ErrNotReached: finishJobs stopped at an earlier record's refused
	// completion and left this record's job untouched, still active and
	// locked, for the caller to send again after that failure (code -16).
	ErrNotReached = errors.New("job result not reached: the call stopped at an earlier refused completion")
)

// codes is the one table of script result codes. A negative code means the
// same in every script; scriptCodes says which script may return which, and
// TestScriptCodes checks both against every `return -N` in the Lua files.
var codes = map[int64]error{
	-1:  ErrJobNotFound,
	-2:  ErrLockMissing,
	-3:  ErrNotInState,
	-4:  ErrPendingDependencies,
	-5:  ErrParentNotFound,
	-6:  ErrLockTaken,
	-7:  ErrParentConflict,
	-8:  ErrSchedulerJob,
	-9:  ErrFailedChildren,
	-10: ErrSchedulerIDCollision,
	-11: ErrSchedulerSlotsBusy,
	-12: ErrJobLocked,
	-13: ErrQueueNotPaused,
	-14: ErrActiveJobs,
	-15: ErrSchedulerKeyTaken,
	-16: ErrNotReached,
}

// scriptCodes lists the codes each script returns (finishJobs: per job).
// A script not listed returns none.
var scriptCodes = map[string][]int64{
	"addFlow":                   {-5, -7},
	"addLog":                    {-1},
	"moveToWaitingChildren":     {-1, -2, -3, -6, -9},
	"cancelJob":                 {-1, -3, -8},
	"updateData":                {-1},
	"changeDelay":               {-1, -3},
	"changePriority":            {-1},
	"finishJobs":                {-1, -2, -3, -4, -6, -9, -16},
	"promote":                   {-1, -3},
	"removeJob":                 {-1, -8, -12},
	"removeChildDependency":     {-1, -5},
	"removeUnprocessedChildren": {-1},
	"reprocessJob":              {-1, -3, -12},
	"updateProgress":            {-1},
	"obliterate":                {-13, -14},
	"upsertJobScheduler":        {-10, -11, -15},
}

// codeError maps a negative script result to its error.
func codeError(code int64) error {
	if err, ok := codes[code]; ok {
		return err
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
