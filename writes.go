package drover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/scripts"
)

// boundedCalls sends the admin writes (Job.Retry, Promote, Remove,
// Queue.Pause, Drain, ...) and the queue's reads so that their caller
// returns when ctx ends, even while Redis does not answer: a go-redis
// client waits out its own read timeout whatever ctx says
// (internal/bounded). A write's error then wraps ErrOutcomeUnknown and
// ctx.Err(): the command was sent and may still run; a read's wraps
// bounded.ErrNoAnswer and ctx.Err(). A ctx that has ended before the call
// sends nothing: the error is ctx's, not ErrOutcomeUnknown. Under a ctx
// that cannot end, the command runs inline.
type boundedCalls struct {
	rdb redis.UniversalClient
	// onlyNeeded bounds only a ctx whose deadline comes before the
	// client's own timeouts (budget, bounded.ClientBudget; 0: the client
	// has none, and any ctx that can end is bounded) would end the call
	// (bounded.Needed): for the writes a processor makes, often, under its
	// job's ctx, which can end but has no deadline of its own.
	onlyNeeded bool
	budget     time.Duration
	// read: the call changes nothing, so an abandoned one is not an
	// unknown outcome.
	read bool
}

// Do runs one command, as scripts.Doer.
func (w boundedCalls) Do(ctx context.Context, args ...any) *redis.Cmd {
	if w.onlyNeeded && !bounded.Needed(ctx, w.budget) {
		return w.rdb.Do(ctx, args...)
	}
	cmd, err := bounded.Call(ctx, func(ctx context.Context) (*redis.Cmd, error) { return w.rdb.Do(ctx, args...), nil })
	if err != nil {
		cmd = redis.NewCmd(ctx, args...)
		if w.read || !errors.Is(err, bounded.ErrNoAnswer) {
			// A read, or a write never sent (ctx had ended): not in doubt.
			cmd.SetErr(err)
		} else {
			cmd.SetErr(fmt.Errorf("%w: %w", ErrOutcomeUnknown, err))
		}
	}
	return cmd
}

// writes is the Doer of the queue's admin writes.
func (q *Queue) writes() scripts.Doer { return boundedCalls{rdb: q.rdb} }

// reads is the Doer of the queue's read scripts (counts, ranges, states):
// a caller's ctx deadline ends the wait while Redis does not answer.
func (q *Queue) reads() scripts.Doer {
	return boundedCalls{rdb: q.rdb, onlyNeeded: true, budget: q.callBudget, read: true}
}

// callWithin runs one read of q's (a command or a pipeline of commands that
// change nothing), or a best-effort write whose outcome nobody waits on,
// so that it returns when ctx's deadline comes, even while Redis does not
// answer; under a ctx without a deadline, or one later than the client's
// own timeouts, it runs inline at no cost (bounded.Needed: on a client
// without timeouts, any ctx that can end is heeded).
func callWithin[T any](ctx context.Context, q *Queue, fn func(context.Context) (T, error)) (T, error) {
	if !bounded.Needed(ctx, q.callBudget) {
		return fn(ctx)
	}
	return bounded.Call(ctx, fn)
}

// jobWrites is the Doer of a job's own writes (progress, data, logs, lock
// extension, moving to waiting-children) and of manual processing (take,
// finish): a caller's ctx deadline ends its wait while Redis does not
// answer, with ErrOutcomeUnknown, and a ctx without one costs nothing.
func (q *Queue) jobWrites() scripts.Doer {
	return boundedCalls{rdb: q.rdb, onlyNeeded: true, budget: q.callBudget}
}

// pipelineWithin is callWithin for a pipeline of reads (a MULTI when tx):
// fn queues the commands and keeps them to read once it returns nil. After
// an abandoned call the caller must not read them.
func pipelineWithin(ctx context.Context, q *Queue, tx bool, fn func(redis.Pipeliner) error) error {
	_, err := callWithin(ctx, q, func(ctx context.Context) (struct{}, error) {
		var err error
		if tx {
			_, err = q.rdb.TxPipelined(ctx, fn)
		} else {
			_, err = q.rdb.Pipelined(ctx, fn)
		}
		return struct{}{}, err
	})
	return err
}
