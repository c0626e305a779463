package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRetrySaysWhichJobsItSkipped: `drover retry` names each job it
// skipped and why (it said "1 skipped: they changed meanwhile" for a job
// a worker held, and named none).
func TestRetrySaysWhichJobsItSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	k := prefix + ":pay:"
	for n := range 3 {
		id := fmt.Sprintf("j%d", n)
		require.NoError(t, rdb.HSet(ctx, k+id, "name", "charge", "data", "{}", "opts", `{"attempts":1}`,
			"timestamp", 1000, "atm", 1, "ats", 1, "failedReason", "card declined", "finishedOn", 2000+n).Err())
		require.NoError(t, rdb.ZAdd(ctx, k+"failed", redis.Z{Score: float64(2000 + n), Member: id}).Err())
	}
	require.NoError(t, rdb.HSet(ctx, k+"meta", "paused", 1).Err())
	require.NoError(t, rdb.Set(ctx, k+"j1:lock", "a-worker-token", time.Minute).Err())
	var out bytes.Buffer
	m := Main{Stdout: &out, Stderr: &out}
	require.NoError(t, m.Run(ctx, []string{"retry", "pay", "--pause", "0", "--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	require.Contains(t, lines[0], "retried 2 of 3 failed jobs in pay")
	require.Contains(t, lines[0], "(1 skipped: they changed meanwhile, or a worker held them)")
	require.Equal(t, "  skipped j1: job is locked by a worker", lines[1])
}
