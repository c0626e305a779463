package drover

import (
	"fmt"
	"math"
	"time"
)

// BackoffStop, returned by a BackoffFunc, fails the job for good instead of
// retrying it (BullMQ's -1). Any negative duration does the same.
const BackoffStop time.Duration = -1

// BackoffFunc is a custom backoff strategy, registered by name in
// WorkerOptions.BackoffStrategies and chosen by Backoff.Type. attemptsMade
// counts the attempt that just failed (1 after the first failure). Return 0
// to retry at once, a positive delay to retry later, or BackoffStop.
type BackoffFunc func(attemptsMade int, backoffType string, err error, job *Job) time.Duration

// ComputeBackoff returns the delay before the next attempt of a job whose
// attemptsMade-th attempt just failed, following BullMQ's formulas:
//
//   - fixed: Delay; with Jitter j, uniform in [Delay*(1-j), Delay).
//   - exponential: round(2^(attemptsMade-1) * Delay); with Jitter j, uniform
//     in [max*(1-j), max).
//   - any other Type: the strategy of that name in custom.
//
// rand must return a uniform value in [0, 1). A negative result means
// "do not retry" (BackoffStop).
func ComputeBackoff(b *Backoff, attemptsMade int, err error, job *Job, custom map[string]BackoffFunc, rand func() float64) (time.Duration, error) {
	if b == nil {
		return 0, nil
	}
	delayMs := float64(b.Delay.Milliseconds())
	switch b.Type {
	case BackoffFixed:
		return jittered(delayMs, b.Jitter, rand), nil
	case BackoffExponential:
		top := math.Round(math.Pow(2, float64(attemptsMade-1)) * delayMs)
		return jittered(top, b.Jitter, rand), nil
	}
	fn, ok := custom[b.Type]
	if !ok {
		return 0, fmt.Errorf("%w: unknown backoff strategy %q: register it in WorkerOptions.BackoffStrategies", ErrInvalidOption, b.Type)
	}
	d := fn(attemptsMade, b.Type, err, job)
	if d < 0 {
		return BackoffStop, nil
	}
	return d, nil
}

func jittered(ms, jitter float64, rand func() float64) time.Duration {
	if jitter > 0 {
		ms = math.Floor(rand()*ms*jitter + ms*(1-jitter))
	}
	return time.Duration(ms) * time.Millisecond
}
