package drover

// The clock of a Queue and of a Worker: its offset to the Redis server's
// TIME corrects every "now" drover passes to scripts (add timestamps and
// delayed due times, backoff due times, retention ages, the stalled check),
// so a machine whose clock is ahead or behind does not stamp jobs wrongly,
// run delayed jobs early or trim finished jobs too soon. One clockKeeper per
// Queue owns the offset. A Worker measures at Start and then every
// ClockCheckInterval from a goroutine of its own; a Queue used only to add
// has no goroutine: the first call that needs the time after the offset got
// older than ClockCheckInterval measures it (refresh), so adds cost no
// extra round trip except one measurement per interval.

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/logkey"
)

// clockKeeper measures the offset: periodically in run (a Worker's
// goroutine, started and stopped by the Worker; its first measurement is
// made by Start), or on demand in refresh (a Queue's calls).
type clockKeeper struct {
	rdb      redis.UniversalClient
	clock    *clock.Corrected
	interval time.Duration
	warnAt   time.Duration
	log      *slog.Logger

	// measured is set by the first successful measurement; until then the
	// fetcher measures before it fetches (a worker started while Redis was
	// down must not schedule by an uncorrected clock).
	measured atomic.Bool
	// next is the clock.Mono at which refresh measures again (monotonic: a
	// wall-clock deadline would not be reached for an hour after the clock
	// stepped back an hour); busy is held by the one call measuring.
	next atomic.Int64
	busy atomic.Bool
	// retry is the clock.Mono before which a step does not make refresh
	// measure: set by a failed measurement (Redis away, TIME refused), so
	// a clock that stepped does not cost every call a failing round trip.
	retry atomic.Int64
}

// clockRetryAfterFailure is how soon refresh measures again after a failed
// measurement.
const clockRetryAfterFailure = time.Second

// refresh measures the offset if it is due, or the clock stepped since the
// last measurement, and no other call is measuring it; the other calls
// meanwhile use the last offset. It returns when ctx
// ends: a measurement Redis does not answer goes on without its caller
// (internal/bounded), holding busy until the client's timeouts end it.
func (c *clockKeeper) refresh(ctx context.Context) {
	now := int64(clock.Mono())
	due := now >= c.next.Load() || (now >= c.retry.Load() && c.clock.Stepped())
	if !due || !c.busy.CompareAndSwap(false, true) {
		return
	}
	_, _ = bounded.Call(ctx, func(ctx context.Context) (bool, error) {
		defer c.busy.Store(false)
		return c.measure(ctx), nil
	})
}

// run measures every interval, and at once when the clock steps.
func (c *clockKeeper) run(ctx context.Context) {
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.clock.Steps():
		}
		c.measure(ctx)
	}
}

// clockSamples is how many TIME round trips one measurement takes; the
// one with the shortest round trip (the tightest bound) wins.
const clockSamples = 3

// measure reads Redis TIME and sets the offset. A failed read keeps the
// last offset and reports false.
func (c *clockKeeper) measure(ctx context.Context) bool {
	var best, bestRTT time.Duration = 0, -1
	var lastErr error
	for range clockSamples {
		before := c.clock.Base().Now()
		// bounded: ctx is a worker's, ended by Close, which go-redis heeds
		// only through its own timeouts, and a client may have them off.
		server, err := bounded.Call(ctx, func(ctx context.Context) (time.Time, error) {
			return c.rdb.Time(ctx).Result()
		})
		after := c.clock.Base().Now()
		if err != nil {
			lastErr = err
			continue
		}
		off, rtt := clock.Offset(before, server, after)
		if bestRTT < 0 || rtt < bestRTT {
			best, bestRTT = off, rtt
		}
	}
	if bestRTT < 0 {
		c.next.Store(int64(clock.Mono() + clockRetryAfterFailure))
		c.retry.Store(c.next.Load())
		if ctx.Err() == nil {
			c.log.WarnContext(ctx, msgClockFailed, slog.Any(logkey.Error, lastErr))
		}
		return false
	}
	if best <= bestRTT/2 && -best <= bestRTT/2 {
		// No evidence of skew: the server read its clock somewhere in the
		// round trip, so an offset within half of it is what a correct
		// clock measures too. Correcting by it would only move timestamps
		// off this machine's clock (a job stamped 1 ms after a Node worker
		// on the same machine took it).
		best = 0
	}
	c.clock.SetOffset(best)
	c.measured.Store(true)
	c.next.Store(int64(clock.Mono() + c.interval))
	if best > c.warnAt || -best > c.warnAt {
		c.log.WarnContext(ctx, "this machine's clock differs from Redis TIME; drover schedules by Redis's",
			slog.Duration(logkey.Offset, best), slog.Duration(logkey.RoundTrip, bestRTT), slog.Duration(logkey.Threshold, c.warnAt))
	}
	return true
}
