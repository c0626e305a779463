package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seed40057009/drover"
)

// LimitsChange is a change of a queue's limits (Limits), made by
// SetLimits in the order of its fields. What it leaves zero stays as it
// is. The dashboard's POST /api/queues/{queue}/limits and `drover limits`
// make theirs with it.
type LimitsChange struct {
	// Concurrency (> 0) sets the global concurrency; RemoveConcurrency
	// lifts it. At most one of the two.
	Concurrency       int
	RemoveConcurrency bool
	// RateLimit sets the global rate limit; RemoveRateLimit lifts it. At
	// most one of the two.
	RateLimit       *RateLimit
	RemoveRateLimit bool
	// Block (> 0) stops the workers that apply a limit from taking jobs
	// for that long (BullMQ's queue.rateLimit); Unblock ends a block, or
	// the current rate-limit window, now. At most one of the two.
	Block   time.Duration
	Unblock bool
}

// Validate reports the first problem of the change, wrapping
// drover.ErrInvalidOption: contradictory fields, a value out of range, or
// nothing to change.
func (c LimitsChange) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", drover.ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Concurrency < 0:
		return bad("concurrency must be at least 1, got %d", c.Concurrency)
	case c.Concurrency > 0 && c.RemoveConcurrency:
		return bad("setting and removing the concurrency exclude each other")
	case c.RateLimit != nil && c.RemoveRateLimit:
		return bad("setting and removing the rate limit exclude each other")
	case c.RateLimit != nil && (c.RateLimit.Max < 1 || c.RateLimit.Duration < time.Millisecond):
		return bad("a rate limit needs max >= 1 and a duration of at least 1ms, got %d per %s", c.RateLimit.Max, c.RateLimit.Duration)
	case c.Block < 0:
		return bad("block must not be negative, got %s", c.Block)
	case c.Block > 0 && c.Block < time.Millisecond:
		return bad("block must be at least 1ms, got %s", c.Block)
	case c.Block > 0 && c.Unblock:
		return bad("block and unblock exclude each other")
	case c == LimitsChange{}:
		return bad("nothing to change")
	}
	return nil
}

// String names the change as the audit log records it, e.g.
// "concurrency=3 rate=none unblock".
func (c LimitsChange) String() string {
	var parts []string
	switch {
	case c.Concurrency > 0:
		parts = append(parts, fmt.Sprintf("concurrency=%d", c.Concurrency))
	case c.RemoveConcurrency:
		parts = append(parts, "concurrency=none")
	}
	switch {
	case c.RateLimit != nil:
		parts = append(parts, fmt.Sprintf("rate=%d/%s", c.RateLimit.Max, c.RateLimit.Duration))
	case c.RemoveRateLimit:
		parts = append(parts, "rate=none")
	}
	switch {
	case c.Block > 0:
		parts = append(parts, "block="+c.Block.String())
	case c.Unblock:
		parts = append(parts, "unblock")
	}
	return strings.Join(parts, " ")
}

// SetLimits validates c, then makes its changes to queue and answers the
// queue's summary after them. A change Validate refuses touches nothing;
// a Redis error stops at the change it failed (the ones before it stay).
// It returns an error wrapping ErrQueueNotFound for a queue that does not
// exist.
func (i *Inspector) SetLimits(ctx context.Context, queue string, c LimitsChange) (*QueueInfo, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	steps := []struct {
		on  bool
		run func() error
	}{
		{c.Concurrency > 0, func() error { return q.SetGlobalConcurrency(ctx, c.Concurrency) }},
		{c.RemoveConcurrency, func() error { return q.RemoveGlobalConcurrency(ctx) }},
		{c.RateLimit != nil, func() error { return q.SetGlobalRateLimit(ctx, c.RateLimit.Max, c.RateLimit.Duration) }},
		{c.RemoveRateLimit, func() error { return q.RemoveGlobalRateLimit(ctx) }},
		{c.Block > 0, func() error { return q.RateLimit(ctx, c.Block) }},
		{c.Unblock, func() error { _, err := q.RemoveRateLimitKey(ctx); return err }},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		if err := s.run(); err != nil {
			return nil, fmt.Errorf("set limits of queue %q (%s): %w", queue, c, err)
		}
	}
	return i.queueInfo(ctx, q)
}
