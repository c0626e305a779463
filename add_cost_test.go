package drover_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestAddRedisCommands counts the Redis commands the add script runs per
// job (INFO commandstats on a server of its own), so a change to the
// producers' hot path shows its cost: a single Add, and AddBulk per job.
// The exactly-once token costs one GET and one SET per script call; one
// HMGET reads the meta hash for the event cap and the pause check.
func TestAddRedisCommands(t *testing.T) {
	t.Parallel()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	ctx := context.Background()
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	_, err = q.Add(ctx, "warm-up", nil, nil) // loads the script
	require.NoError(t, err)

	count := func(run func()) int {
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		run()
		return scriptCommands(t, rdb)
	}
	const n = 200
	single := count(func() {
		for range n {
			_, err := q.Add(ctx, "j", nil, nil)
			require.NoError(t, err)
		}
	})
	bulk := count(func() {
		jobs := make([]drover.BulkJob, n)
		_, err := q.AddBulk(ctx, jobs)
		require.NoError(t, err)
	})
	t.Logf("redis commands per job: Add %.2f, AddBulk %.2f", float64(single)/n, float64(bulk)/n)
	require.LessOrEqual(t, single, 9*n, "Add's commands per job")
	require.LessOrEqual(t, bulk, 4*n, "AddBulk's commands per job")
}

// scriptCommands sums INFO commandstats calls, leaving out the commands the
// client itself sent (EVALSHA, INFO, CONFIG).
func scriptCommands(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		switch strings.TrimPrefix(name, "cmdstat_") {
		case "evalsha", "eval", "info", "config|resetstat", "config", "hello", "client|setinfo", "client", "ping":
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.Atoi(calls)
		require.NoError(t, err)
		total += c
	}
	return total
}
