package drover_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestFinishRedisCommands counts what a worker costs Redis per ordinary
// job (n jobs added in bulk, then processed and completed): the commands
// its scripts run and the script calls (round trips) it makes, on a
// server of its own. It guards the completion hot path against features
// that add work to every finish.
func TestFinishRedisCommands(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()
	const n = 300
	_, err := q.AddBulk(ctx, make([]drover.BulkJob, n))
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Concurrency: 4, DrainDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	testkit.WaitFor(t, 20*time.Second, "all completed", func() bool {
		c, err := q.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return c[drover.StateCompleted] == n
	})
	require.NoError(t, w.Close(ctx))
	cmds := scriptCommands(t, rdb)
	info, err := rdb.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	calls := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "cmdstat_evalsha" || name == "cmdstat_eval") {
			c, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			v, err := strconv.Atoi(c)
			require.NoError(t, err)
			calls += v
		}
	}
	t.Logf("per job: %.2f redis commands, %.2f script calls", float64(cmds)/n, float64(calls)/n)
	require.LessOrEqual(t, cmds, 20*n, "commands per job")
	require.LessOrEqual(t, calls, n+n/2, "script calls per job")
}
