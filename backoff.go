package drover

import (
	"fmt"
	"math"
	"time"
)

// BackoffStop, returned by a BackoffFunc, fails the job for good instead of
// retrying it: Go's spelling of BullMQ's -1. A strategy may also return
// -time.Millisecond, BullMQ's -1 in the milliseconds jobs store, with the
// same effect, so a fixed or exponential backoff that works out at -1 ms
// stops the job as a Node worker stops it. Other negative delays do not
// stop the job: see BackoffFunc.
const BackoffStop time.Duration = -1

// BackoffFunc is a custom backoff strategy, registered by name in
// WorkerOptions.BackoffStrategies and chosen by Backoff.Type. attemptsMade
// counts the attempt that just failed (1 after the first failure). Return 0
// to retry at once (not through the delayed set), a positive delay to retry
// later, or BackoffStop to fail the job for good. Any other negative delay
// retries at once too, but as BullMQ does with one: through the delayed
// set, due now, with the job's delay field set to the delay in ms.
type BackoffFunc func(attemptsMade int, backoffType string, err error, job *Job) time.Duration

// ComputeBackoff returns the delay before the next attempt of a job whose
// attemptsMade-th attempt just failed, following BullMQ's formulas:
//
//   - fixed: Delay; with Jitter j, floor of uniform in [Delay*(1-j), Delay).
//   - exponential: round(2^(attemptsMade-1) * Delay); with Jitter j, floor
//     of uniform in [max*(1-j), max).
//   - any other Type: the strategy of that name in custom.
//
// rand must return a uniform value in [0, 1). The result is BackoffStop
// when the job must not be retried: the strategy returned BackoffStop, or
// the delay is -1 ms (BullMQ's stop). Any other negative result means
// "retry at once through the delayed set" (see BackoffFunc); it comes only
// from a custom strategy or from a job whose stored backoff delay is
// negative, which Node BullMQ accepts and JobOptions.Backoff refuses.
func ComputeBackoff(b *Backoff, attemptsMade int, err error, job *Job, custom map[string]BackoffFunc, rand func() float64) (time.Duration, error) {
	if b == nil {
		return 0, nil
	}
	delayMs := float64(b.Delay.Milliseconds())
	var d time.Duration
	switch b.Type {
	case BackoffFixed:
		d = jittered(delayMs, b.Jitter, rand)
	case BackoffExponential:
		top := math.Round(math.Pow(2, float64(attemptsMade-1)) * delayMs)
		d = jittered(top, b.Jitter, rand)
	default:
		fn, ok := custom[b.Type]
		if !ok {
			return 0, fmt.Errorf("%w: unknown backoff strategy %q: register it in WorkerOptions.BackoffStrategies", ErrInvalidOption, b.Type)
		}
		d = fn(attemptsMade, b.Type, err, job)
	}
	if d == -time.Millisecond {
		return BackoffStop, nil
	}
	return d, nil
}

// maxBackoffMs is the longest delay a Duration holds in whole milliseconds,
// about 292 years.
const maxBackoffMs = float64(math.MaxInt64 / int64(time.Millisecond))

// jittered is ms with jitter applied, as a Duration. BullMQ computes in
// float milliseconds without a bound (2^(n-1) * delay reaches Infinity), so
// a delay past what a Duration holds is clamped to maxBackoffMs, still
// centuries away: converted as it was, it wrapped round to a short, zero
// or negative delay (exponential 1 s: the 35th failure came back negative,
// the 55th and later 0), and a job Node would hold for centuries was
// retried at once. NaN (0 ms * Infinity; Node's NaN delay is falsy) is 0,
// a retry at once, as there.
func jittered(ms, jitter float64, rand func() float64) time.Duration {
	if jitter > 0 {
		ms = math.Floor(rand()*ms*jitter + ms*(1-jitter))
	}
	switch {
	case math.IsNaN(ms):
		return 0
	case ms >= maxBackoffMs:
		ms = maxBackoffMs
	case ms <= -maxBackoffMs:
		ms = -maxBackoffMs
	}
	return time.Duration(ms) * time.Millisecond
}
