package drover

// The worker's clock: its offset to the Redis server's TIME, measured at
// start and every ClockCheckInterval, corrects every "now" the worker
// passes to scripts (due delayed jobs, backoff due times, retention ages,
// the stalled check), so a worker whose clock is ahead or behind does not
// run delayed jobs early or trim finished jobs too soon.

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/logkey"
)

// clockKeeper measures the offset. It runs in one goroutine, started and
// stopped by the Worker; its first measurement is made by Start.
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
}

func (c *clockKeeper) run(ctx context.Context) {
	every(ctx, c.interval, false, func(ctx context.Context) { c.measure(ctx) })
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
		server, err := c.rdb.Time(ctx).Result()
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
		if ctx.Err() == nil {
			c.log.WarnContext(ctx, "measure clock offset to Redis failed; keeping the last one", slog.Any(logkey.Error, lastErr))
		}
		return false
	}
	c.clock.SetOffset(best)
	c.measured.Store(true)
	if best > c.warnAt || -best > c.warnAt {
		c.log.WarnContext(ctx, "this machine's clock differs from Redis TIME; the worker schedules by Redis's",
			slog.Duration(logkey.Offset, best), slog.Duration(logkey.RoundTrip, bestRTT), slog.Duration(logkey.Threshold, c.warnAt))
	}
	return true
}
