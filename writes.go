package drover

import (
	"context"
	"fmt"

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
type boundedWrites struct{ rdb redis.UniversalClient }

// Do runs one command, as scripts.Doer.
func (w boundedWrites) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd, err := bounded.Call(ctx, func(ctx context.Context) (*redis.Cmd, error) { return w.rdb.Do(ctx, args...), nil })
	if err != nil {
		cmd = redis.NewCmd(ctx, args...)
		cmd.SetErr(fmt.Errorf("%w: %w", ErrOutcomeUnknown, err))
	}
	return cmd
}

// writes is the Doer of the queue's admin writes.
func (q *Queue) writes() scripts.Doer { return boundedWrites{rdb: q.rdb} }
