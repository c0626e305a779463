// Package bounded ends a wait for Redis when its context ends, whatever the
// client does.
//
// A go-redis client ignores a context's deadline on the wire unless it was
// built with ContextTimeoutEnabled (go-redis's default is off): against a
// server that stopped answering (paused, a frozen host, a partition without
// resets) a Ping under a 2 s context returns after about 15 s, once the
// client's own read timeouts and retries run out. A health check, a
// metrics scrape or an HTTP request whose budget is shorter than that must
// not wait for it.
package bounded

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoAnswer is in the chain of Call's error when ctx ended before the
// call answered: for a write, it may or may not have happened.
var ErrNoAnswer = errors.New("no answer from Redis in time")

// Call returns fn's result, or, as soon as ctx ends first, an error wrapping
// ErrNoAnswer, ctx.Err() and, when it differs, ctx's cause. An
// abandoned call goes on in its goroutine until the client's own timeouts
// (or closing the client) end it; its result is dropped. fn must therefore
// only write what Call hands back, not the caller's state.
func Call[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	if ctx.Done() == nil {
		return fn(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned call never blocks
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // finished meanwhile: its answer is better
			return r.v, r.err
		default:
		}
		var zero T
		return zero, Abandoned(ctx)
	}
}

// Abandoned is the error of a wait for Redis that ended with ctx (Call's,
// or a caller's that waits on a channel): ErrNoAnswer, ctx.Err() and, when
// it differs, ctx's cause.
func Abandoned(ctx context.Context) error {
	// The cause is ctx.Err() itself unless the context was ended with one
	// of its own (WithCancelCause, WithTimeoutCause).
	if cause := context.Cause(ctx); cause != ctx.Err() { //nolint:errorlint // identity, not a match: is there a cause of its own?
		return fmt.Errorf("%w: %w (%w)", ErrNoAnswer, cause, ctx.Err())
	}
	return fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
}
