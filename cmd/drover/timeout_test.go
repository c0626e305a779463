package main

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

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
		{[]string{"queues", "--timeout", "2s"}, 8 * time.Second, "within 2s (--timeout)"},
		{[]string{"jobs", "q", "--timeout", "2s"}, 8 * time.Second, "within 2s (--timeout)"},
		{[]string{"pause", "q", "--timeout", "2s"}, 8 * time.Second, "within 2s (--timeout)"},
		{[]string{"promote", "q", "--timeout", "2s"}, 8 * time.Second, "within 2s (--timeout)"},
		{[]string{"pause", "q"}, 20 * time.Second, "no answer from Redis at " + srv.Addr},
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
