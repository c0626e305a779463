package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestInterruptedRetrySaysSo: a paced bulk retry stopped by Ctrl-C (or
// SIGTERM) said only "drover: retried 700 of 4100 jobs, then: context
// canceled" and exited 1, the status of a failed command; scripts could
// not tell an operator's stop from a Redis failure. It now says it was
// interrupted and exits 128+signal (130, 143), as shells report it.
func TestInterruptedRetrySaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	// 2000 failed jobs written as BullMQ stores them: the retry moves 10
	// every 100 ms, so it runs for 20 s unless stopped.
	pipe := rdb.Pipeline()
	for i := 1; i <= 2000; i++ {
		id := fmt.Sprint(i)
		pipe.HSet(ctx, prefix+":q:"+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", "1796619403052",
			"attemptsMade", "1", "attemptsStarted", "1", "finishedOn", "1796619403052", "failedReason", "boom")
		pipe.ZAdd(ctx, prefix+":q:failed", redis.Z{Score: float64(i), Member: id})
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "interrupt"}, {syscall.SIGTERM, 143, "terminated"}} {
		before, err := rdb.LLen(ctx, prefix+":q:wait").Result()
		require.NoError(t, err)
		cmd := exec.Command(os.Args[0], "retry", "q", "--chunk", "10", "--pause", "100ms",
			"--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		testkit.WaitFor(t, 20*time.Second, "the retry to move jobs", func() bool {
			n, err := rdb.LLen(ctx, prefix+":q:wait").Result()
			require.NoError(t, err)
			return n > before
		})
		require.NoError(t, cmd.Process.Signal(tc.sig))
		err = cmd.Wait()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%v: %s%s", err, stdout.String(), stderr.String())
		require.Equal(t, tc.code, exit.ExitCode(), "after %s: %s", tc.sig, stderr.String())
		require.Regexp(t, `^drover: interrupted \(`+tc.name+`\) before it finished: retried \d+ of \d+ jobs`, stderr.String())
	}
}
