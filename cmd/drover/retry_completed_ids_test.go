package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRetryIDsLeavesACompletedJobWithoutStateCompleted: `drover retry q
// <id>` ran a completed job again (it answered "retried from completed")
// although the command retries failed jobs unless --state completed says
// otherwise, as its bulk form does. A completed job is now refused, left
// in completed, and the command exits non-zero; --state completed retries
// it.
func TestRetryIDsLeavesACompletedJobWithoutStateCompleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	k := prefix + ":pay:"
	require.NoError(t, rdb.HSet(ctx, k+"done", "name", "charge", "data", "{}", "opts", `{"attempts":1}`,
		"timestamp", 1000, "atm", 1, "ats", 1, "returnvalue", `"ok"`, "finishedOn", 2000).Err())
	require.NoError(t, rdb.ZAdd(ctx, k+"completed", redis.Z{Score: 2000, Member: "done"}).Err())
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, args)
		return out.String(), err
	}
	out, err := run("retry", "pay", "done")
	require.Error(t, err, out)
	require.Contains(t, out, "completed")
	require.Contains(t, out, "--state completed", "the refusal says how to retry it")
	score, err := rdb.ZScore(ctx, k+"completed", "done").Result()
	require.NoError(t, err, "the job is still completed")
	require.Equal(t, 2000.0, score)
	n, err := rdb.LLen(ctx, k+"wait").Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing was queued")

	out, err = run("retry", "pay", "done", "--state", "completed")
	require.NoError(t, err, out)
	require.Contains(t, out, "job done: retried from completed")
	require.Equal(t, []string{"done"}, rdb.LRange(ctx, k+"wait", 0, -1).Val())
}
