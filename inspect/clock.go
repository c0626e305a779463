package inspect

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/clock"
)

// serverClock is the Inspector's "now": the host's clock corrected by its
// offset to Redis TIME, as drover's queues and workers correct theirs
// (worker_clock.go). Delayed jobs are scored, and metrics data points
// stamped, by that corrected clock; an Inspector on a host whose clock is
// off must read them by it too, or it counts jobs not yet due as overdue
// (drover_delayed_overdue_jobs), puts the storm windows in the wrong place
// and shifts the throughput's minutes.
//
// It has no goroutine: the first read after the offset got older than
// serverClockInterval, or after the host's clock stepped (clock.Corrected),
// measures it again (one TIME round trip), and the other reads meanwhile
// use the last offset.
type serverClock struct {
	rdb   redis.UniversalClient
	clock *clock.Corrected
	// next is the clock.Mono at which a read measures again (monotonic,
	// so a step of the host's clock does not move it); retry the one
	// before which a step does not (set by a failed measurement); busy is
	// held by the one read measuring.
	next  atomic.Int64
	retry atomic.Int64
	busy  atomic.Bool
}

// serverClockInterval is how often the offset is measured again.
const serverClockInterval = time.Minute

// serverClockRetry is how soon after a failed measurement (Redis away, a
// Redis user not allowed TIME) the next read tries again; until then the
// last offset (0 at first: the host's clock) stands.
const serverClockRetry = 10 * time.Second

// hostClock is a func as a clock.Clock.
type hostClock func() time.Time

func (h hostClock) Now() time.Time { return h() }

func newServerClock(rdb redis.UniversalClient, host func() time.Time) *serverClock {
	return &serverClock{rdb: rdb, clock: clock.NewCorrected(hostClock(host))}
}

// now is Redis's time as best known, measuring the offset first when due.
// A measurement Redis does not answer is left behind when ctx ends
// (internal/bounded).
func (c *serverClock) now(ctx context.Context) time.Time {
	mono := int64(clock.Mono())
	due := mono >= c.next.Load() || (mono >= c.retry.Load() && c.clock.Stepped())
	if due && c.busy.CompareAndSwap(false, true) {
		_, _ = bounded.Call(ctx, func(ctx context.Context) (struct{}, error) {
			defer c.busy.Store(false)
			c.measure(ctx)
			return struct{}{}, nil
		})
	}
	return c.clock.Now()
}

func (c *serverClock) measure(ctx context.Context) {
	before := c.clock.Base().Now()
	server, err := c.rdb.Time(ctx).Result()
	after := c.clock.Base().Now()
	if err != nil {
		c.next.Store(int64(clock.Mono() + serverClockRetry))
		c.retry.Store(c.next.Load())
		return
	}
	off, rtt := clock.Offset(before, server, after)
	if off <= rtt/2 && -off <= rtt/2 {
		off = 0 // within the round trip: no evidence of skew
	}
	c.clock.SetOffset(off)
	c.next.Store(int64(clock.Mono() + serverClockInterval))
}
