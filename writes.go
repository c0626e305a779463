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
	if ctx == nil {
		cmd := redis.NewCmd(ctx, args...) // only kept, never used
		cmd.SetErr(errNilContext)
		return cmd
	}
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

// Process runs cmd, as scripts.Processor. The calls a worker sends once
// (the manual worker's take, finish and their settlement: scripts.TakeJob,
// FinishJobs, SettleCall) pass a command that tells go-redis not to send
// it again; through Do that was lost, go-redis resent the call after a
// lost reply, and the second run, finding the attempt ended or the job
// taken, reported a done write as refused and stranded the job the first
// run took. The command runs on a copy that an abandoned call (ctx ended
// first) goes on filling; cmd gets its answer only when it came in time.
func (w boundedCalls) Process(ctx context.Context, cmd redis.Cmder) error {
	if ctx == nil {
		cmd.SetErr(errNilContext)
		return errNilContext
	}
	if w.onlyNeeded && !bounded.Needed(ctx, w.budget) {
		return w.rdb.Process(ctx, cmd)
	}
	out, ok := cmd.(interface{ SetVal(any) })
	if !ok {
		// Not a generic command (none of drover's scripts): run as Do
		// runs commands, with its resends.
		res := w.Do(ctx, cmd.Args()...)
		cmd.SetErr(res.Err())
		return res.Err()
	}
	inner := sendOnce{Cmd: redis.NewCmd(ctx, cmd.Args()...), once: cmd.NoRetry()}
	_, err := bounded.Call(ctx, func(ctx context.Context) (struct{}, error) {
		_ = w.rdb.Process(ctx, inner)
		return struct{}{}, nil
	})
	switch {
	case err != nil && (w.read || !errors.Is(err, bounded.ErrNoAnswer)):
		// A read, or a write never sent (ctx had ended): not in doubt.
	case err != nil:
		err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	default:
		err = inner.Err()
		if err == nil {
			out.SetVal(inner.Val())
			return nil
		}
	}
	cmd.SetErr(err)
	return err
}

// sendOnce is a command go-redis must not send again (NoRetry) when once
// is set, as the command it copies asked.
type sendOnce struct {
	*redis.Cmd
	once bool
}

// NoRetry tells go-redis whether to keep from resending the command.
func (c sendOnce) NoRetry() bool { return c.once || c.Cmd.NoRetry() }

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
	if ctx == nil {
		var zero T
		return zero, errNilContext
	}
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
