package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWorkerRedisCommandsPerJob counts what a worker costs Redis per ordinary
// job (n jobs added in bulk, then processed and completed): the commands
// its scripts run and the script calls (round trips) it makes, on a
// server of its own. It guards the completion hot path against features
// that add work to every finish.
func TestWorkerRedisCommandsPerJob(t *testing.T) {
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
	all := redistest.CommandCalls(t, rdb)
	cmds, calls := redistest.ScriptCommands(t, rdb), all["evalsha"]+all["eval"]
	t.Logf("per job: %.2f redis commands, %.2f script calls", float64(cmds)/n, float64(calls)/n)
	require.LessOrEqual(t, cmds, 20*n, "commands per job")
	require.LessOrEqual(t, calls, n+n/2, "script calls per job")
}
