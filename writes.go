package drover

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/scripts"
)

// boundedWrites sends the admin writes (Job.Retry, Promote, Remove,
// Queue.Pause, Drain, ...) so that their caller returns when ctx ends, even
// while Redis does not answer: a go-redis client waits out its own read
// timeout whatever ctx says (internal/bounded). The error then wraps
// ErrOutcomeUnknown and ctx.Err(): the command was sent and may still run.
// Under a ctx that cannot end, the command runs inline.
type boundedWrites struct {
	rdb redis.UniversalClient
	// onlyNeeded bounds only a ctx whose deadline comes before the
	// client's own timeouts (budget, bounded.ClientBudget; 0: the client
	// has none) would end the call (bounded.Needed): for the writes a
	// processor makes, often, under its job's ctx, which can end but has no
	// deadline of its own.
	onlyNeeded bool
	budget     time.Duration
}

// Do runs one command, as scripts.Doer.
func (w boundedWrites) Do(ctx context.Context, args ...any) *redis.Cmd {
	if w.onlyNeeded && !bounded.Needed(ctx, w.budget) {
		return w.rdb.Do(ctx, args...)
	}
	cmd, err := bounded.Call(ctx, func(ctx context.Context) (*redis.Cmd, error) { return w.rdb.Do(ctx, args...), nil })
	if err != nil {
		cmd = redis.NewCmd(ctx, args...)
		cmd.SetErr(fmt.Errorf("%w: %w", ErrOutcomeUnknown, err))
	}
	return cmd
}

// writes is the Doer of the queue's admin writes.
func (q *Queue) writes() scripts.Doer { return boundedWrites{rdb: q.rdb} }

// jobWrites is the Doer of a job's own writes (progress, data, logs, lock
// extension, moving to waiting-children) and of manual processing (take,
// finish): a caller's ctx deadline ends its wait while Redis does not
// answer, with ErrOutcomeUnknown, and a ctx without one costs nothing.
func (q *Queue) jobWrites() scripts.Doer {
	return boundedWrites{rdb: q.rdb, onlyNeeded: true, budget: q.callBudget}
}
