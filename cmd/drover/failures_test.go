package main

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestFailuresCommand: `drover failures <queue>` groups failed jobs by
// error with the filter that selects a group; --since keeps the jobs that
// failed within the window (here the two of the last hour, not the one of
// yesterday).
func TestFailuresCommand(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "pay", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	now := time.Now()
	for i, f := range []struct {
		reason string
		ago    time.Duration
	}{
		{"order 17: timeout after 3001ms", time.Minute},
		{"order 18: timeout after 2999ms", 2 * time.Minute},
		{"card declined", 26 * time.Hour},
	} {
		id := "f" + strconv.Itoa(i)
		_, err := q.Add(ctx, "charge", nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
		finished := now.Add(-f.ago).UnixMilli()
		require.NoError(t, rdb.LRem(ctx, prefix+":pay:wait", 1, id).Err())
		require.NoError(t, rdb.HSet(ctx, prefix+":pay:"+id, "failedReason", f.reason, "finishedOn", finished, "atm", 1, "ats", 1).Err())
		require.NoError(t, rdb.ZAdd(ctx, prefix+":pay:failed", redis.Z{Score: float64(finished), Member: id}).Err())
	}
	run := func(args ...string) string {
		out, err := runCLI(ctx, t, prefix, args...)
		require.NoError(t, err, out)
		return out
	}
	out := run("failures", "pay")
	require.Regexp(t, `(?m)^2\s+0\s+\S+ \S+\s+order <n>: timeout after <n>ms\s+error="order <n>: timeout after <n>ms"$`, out)
	require.Regexp(t, `(?m)^1\s+0\s+\S+ \S+\s+card declined\s`, out)
	require.Contains(t, out, "3 failed jobs in 2 groups")

	out = run("failures", "pay", "--since", "1h")
	require.NotContains(t, out, "card declined")
	require.Contains(t, out, "2 failed jobs in the last 1h0m0s in 1 groups")

	var rep inspect.FailureReport
	require.NoError(t, json.Unmarshal([]byte(run("failures", "pay", "--since", "1h", "--json")), &rep))
	require.Len(t, rep.Groups, 1)
	require.Equal(t, 2, rep.Groups[0].Count)
	require.WithinDuration(t, now.Add(-time.Hour), rep.Since.Time, time.Minute)

	require.Contains(t, run("failures", "pay", "--since", "30s"), "no failed jobs in the last 30s")

	_, err = runCLI(ctx, t, prefix, "failures", "pay", "--since", "-1h")
	require.Error(t, err)
}
