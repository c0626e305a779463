package drover

import (
	"context"

	"github.com/seed40057009/drover/internal/scripts"
)

// RetryNow runs a delayed job right away, like Promote, after applying opts'
// resets. It is the "retry now" of a job that waits for the backoff before
// its next attempt: with ResetAttemptsMade the job also gets its whole attempt
// budget back ("retry with fresh attempts"), which Retry offers only for
// finished jobs. The stacktrace and attempt timeline are kept. Promotion and
// resets are one script call, so they happen together or not at all.
//
// It refuses with ErrNotInState when the job is not delayed and
// ErrJobNotFound when it is gone.
func (j *Job) RetryNow(ctx context.Context, opts *RetryOptions) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("retry now"); err != nil {
		return err
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	var o RetryOptions
	if opts != nil {
		o = *opts
	}
	err := scripts.Promote(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, o.ResetAttemptsMade, o.ResetAttemptsStarted, j.queue.nowMs())
	return j.stateErr(ctx, "retry now", string(StateDelayed), err)
}
