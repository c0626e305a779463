package drover

import (
	"context"
	"math"
	"time"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/scripts"
)

// RateLimit stops the queue's rate-limited workers (those with a
// WorkerOptions.Limiter, or all of them under SetGlobalRateLimit) from
// taking jobs for d, in drover and Node BullMQ alike: it sets the shared
// limiter key as full, expiring after d (BullMQ's queue.rateLimit). A
// worker without any limit does not read the key, as in BullMQ; the worker
// whose processor returns ErrRateLimited waits for it whatever its options.
// d must be at least 1ms; a shorter one is refused and Redis is untouched.
func (q *Queue) RateLimit(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		return optionError("rate limit duration must be at least 1ms, got %s", d)
	}
	if err := q.check(ctx); err != nil {
		return err
	}
	return q.writes().Do(ctx, "set", q.k.Limiter(), keys.LimiterFull, "px", d.Milliseconds()).Err()
}

// RemoveRateLimitKey deletes the limiter key, ending a RateLimit (or the
// current window of a Limiter) for the next fetch of every worker. A worker
// already sleeping after its processor returned ErrRateLimited sleeps on
// (at most its WorkerOptions.MaxRateLimitWait), as a BullMQ worker does. It
// reports whether there was a key, once per call: when go-redis resends
// the call after a lost reply, the answer is the first run's.
func (q *Queue) RemoveRateLimitKey(ctx context.Context) (bool, error) {
	if err := q.check(ctx); err != nil {
		return false, err
	}
	return scripts.RemoveRateLimitKey(ctx, q.writes(), q.k, q.call())
}

// GetRateLimitTTL reports how long the limiter key still blocks, as BullMQ's
// queue.getRateLimitTtl(maxJobs) does. The key blocks once its count reached
// the limit: maxJobs when given (> 0), else the global max of
// SetGlobalRateLimit; then the answer is its remaining time, else 0. With
// neither, the answer is the key's raw remaining time: Redis's PTTL codes
// come back as negative durations (-2ms: no key, -1ms: no expiry).
// maxJobs < 0 is refused.
func (q *Queue) GetRateLimitTTL(ctx context.Context, maxJobs int) (time.Duration, error) {
	if maxJobs < 0 || maxJobs > math.MaxInt32 {
		return 0, optionError("GetRateLimitTTL needs maxJobs >= 0 (0: none given), got %d", maxJobs)
	}
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	ms, err := scripts.GetRateLimitTTL(ctx, q.reads(), q.k, maxJobs)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// RateLimit is Queue.RateLimit on the worker's queue (BullMQ's
// worker.rateLimit). A processor calls it before returning ErrRateLimited.
func (w *Worker) RateLimit(ctx context.Context, d time.Duration) error {
	if w == nil || w.q == nil {
		return errZeroValue("Worker", "NewWorker")
	}
	return w.q.RateLimit(ctx, d)
}
