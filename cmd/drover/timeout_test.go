package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCommandsWhileRedisStopsAnswering: Redis answers the connect check
// (PING), then no request of the command (CLIENT PAUSE WRITE holds every
// script call and write, as a paused server holds everything). Each
// command must give up within its --timeout (10 s by default), exit with
// an error naming the cause, and not go on to the next request. Before,
// there was no --timeout ("flag provided but not defined: -timeout") and
// the commands took the client's read timeouts and retries per request,
// one after another: 37 s for queues, 12 s for pause, 13 s for jobs.
func TestCommandsWhileRedisStopsAnswering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	require.NoError(t, rdb.Do(ctx, "CLIENT", "PAUSE", 60_000, "WRITE").Err())
	t.Cleanup(func() { _ = rdb.Do(ctx, "CLIENT", "UNPAUSE").Err() })

	for _, tc := range []struct {
		args  []string
		bound time.Duration
		want  string
	}{
		// 5 s, not 2: the connect check (PING) must be answered within
		// --timeout too, and on a loaded CI machine it once was not
		// within 2 s ("cannot reach Redis ..."). The bounds leave room
		// for the connect check's own wait on a loaded machine.
		{[]string{"queues", "--timeout", "5s"}, 20 * time.Second, "within 5s (--timeout)"},
		{[]string{"jobs", "q", "--timeout", "5s"}, 20 * time.Second, "within 5s (--timeout)"},
		{[]string{"pause", "q", "--timeout", "5s"}, 20 * time.Second, "within 5s (--timeout)"},
		{[]string{"promote", "q", "--timeout", "5s"}, 20 * time.Second, "within 5s (--timeout)"},
		{[]string{"pause", "q"}, 30 * time.Second, "no answer from Redis at " + srv.Addr},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				var out bytes.Buffer // read by no one: the error is what counts
				m := Main{Stdout: &out, Stderr: &out}
				done <- m.Run(ctx, append(tc.args, "--redis", srv.Addr))
			}()
			select {
			case err := <-done:
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				assert.Contains(t, err.Error(), "may or may not have happened")
			case <-time.After(tc.bound):
				t.Fatalf("still running after %s", tc.bound)
			}
		})
	}
}

// TestCommandsWhileRedisIsFrozen: a Redis that answers nothing (SIGSTOP),
// not even the connect check. A command fails within its --timeout saying
// Redis did not answer, and does not claim that a change may have
// happened: it never got past the connection's handshake. Before, the
// handshake's timeout was worded as a lost write ("a change under way may
// or may not have happened"), for read-only commands too.
func TestCommandsWhileRedisIsFrozen(t *testing.T) {
	t.Parallel()
	srv := redistest.Pausable(t)
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	for _, args := range [][]string{{"jobs", "q"}, {"pause", "q"}} {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		start := time.Now()
		err := m.Run(context.Background(), append(args, "--redis", srv.Addr, "--timeout", "1s"))
		require.Error(t, err, args)
		require.Less(t, time.Since(start), 8*time.Second, args)
		assert.Contains(t, err.Error(), "within 1s (--timeout)", args)
		assert.NotContains(t, err.Error(), "may or may not have happened", args)
	}
}

// TestCommandsWhileRedisIsFrozenWithTheDefaultTimeout: the frozen Redis of
// TestCommandsWhileRedisIsFrozen with no --timeout given (10 s), so the
// client's own read timeout (3 s) ends the handshake first. The error
// said "a change under way may or may not have happened", as if a write
// had been sent: nothing but the handshake was.
func TestCommandsWhileRedisIsFrozenWithTheDefaultTimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Pausable(t)
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	for _, args := range [][]string{{"jobs", "q"}, {"pause", "q"}} {
		var out bytes.Buffer
		m := Main{Stdout: &out, Stderr: &out}
		err := m.Run(context.Background(), append(args, "--redis", srv.Addr))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), "no answer from Redis at "+srv.Addr, args)
		assert.NotContains(t, err.Error(), "may or may not have happened", args)
	}
}

// TestTimeoutSaysSoWhenTheConnectionsDeadlineComesFirst: --timeout's
// deadline reaches the connection as its read deadline, so a request can
// fail with an i/o timeout a moment before the request's context is
// marked done. On a loaded machine that moment lasted, and the error said
// "no answer ... in time" (the client's own timeouts) instead of "within
// 1s (--timeout)", and for a handshake "a change under way may or may not
// have happened" (TestCommandsWhileRedisIsFrozen failed so on CI). Here
// the request fails the way the connection does: at its deadline, before
// the context's timer has run.
func TestTimeoutSaysSoWhenTheConnectionsDeadlineComesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	atDeadline := func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		// Spin: a sleep would let the context's timer run first.
		spins := 0
		for time.Now().Before(dl) {
			spins++
		}
		t.Logf("spun %d times", spins)
		return &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	for _, tc := range []struct {
		cmd     redis.Cmder
		want    string
		changed bool
	}{
		{redis.NewCmd(ctx, "hello", "3"), "no answer from Redis at x within 50ms (--timeout)", false},
		{redis.NewCmd(ctx, "evalsha", "abc", "0"), "no answer from Redis at x within 50ms (--timeout)", true},
	} {
		h := &answerWithin{d: 50 * time.Millisecond, addr: "x", remember: true}
		err := h.within(ctx, atDeadline, tc.cmd)
		require.Error(t, err, tc.cmd.Name())
		assert.Contains(t, err.Error(), tc.want, tc.cmd.Name())
		assert.Equal(t, tc.changed, strings.Contains(err.Error(), "may or may not have happened"), "%s: %v", tc.cmd.Name(), err)
		assert.ErrorIs(t, tc.cmd.Err(), os.ErrDeadlineExceeded, tc.cmd.Name())
	}
}
