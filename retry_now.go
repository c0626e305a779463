package drover

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/scripts"
)

// RetryNow runs a delayed job right away, like Promote, after applying opts'
// resets. It is the "retry now" of a job that waits for the backoff before
// its next attempt: with ResetAttemptsMade the job also gets its whole attempt
// budget back ("retry with fresh attempts"), which Retry offers only for
// finished jobs. The stacktrace and attempt timeline are kept.
//
// It refuses with ErrNotInState when the job is not delayed and
// ErrJobNotFound when it is gone.
//
// The reset and the promotion are two steps. The reset is written only while
// the job is still delayed (WATCH/MULTI on the job and the delayed set); if a
// worker takes the job as it comes due between the two steps, the job runs
// with the reset applied and RetryNow returns nil.
func (j *Job) RetryNow(ctx context.Context, opts *RetryOptions) error {
	if err := j.queue.check(); err != nil {
		return err
	}
	var o RetryOptions
	if opts != nil {
		o = *opts
	}
	var drop []string
	if o.ResetAttemptsMade {
		drop = append(drop, "atm")
	}
	if o.ResetAttemptsStarted {
		drop = append(drop, "ats")
	}
	if len(drop) > 0 {
		if err := j.resetWhileDelayed(ctx, drop); err != nil {
			return j.err("retry now", err)
		}
	}
	err := scripts.Promote(ctx, j.queue.rdb, j.queue.k, j.ID)
	if len(drop) > 0 && errors.Is(err, ErrNotInState) {
		return nil // a worker took the job as it came due, reset applied
	}
	return j.err("retry now", err)
}

// resetWhileDelayed deletes the job hash fields drop if the job is in the
// delayed set, atomically with that check.
func (j *Job) resetWhileDelayed(ctx context.Context, drop []string) error {
	q := j.queue
	jobKey, delayedKey := q.k.Job(j.ID), q.k.Delayed()
	check := func(tx *redis.Tx) error {
		n, err := tx.Exists(ctx, jobKey).Result()
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrJobNotFound
		}
		if err := tx.ZScore(ctx, delayedKey, j.ID).Err(); errors.Is(err, redis.Nil) {
			return ErrNotInState
		} else if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, jobKey, drop...)
			return nil
		})
		return err
	}
	// The delayed set changes whenever any job is delayed or promoted, so
	// the transaction may need a few tries on a busy queue.
	var err error
	for range 20 {
		err = q.rdb.Watch(ctx, check, jobKey, delayedKey)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
	}
	return err
}
