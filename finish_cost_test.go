package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	const n = 300
	rdb := completeNoOpJobs(t, n, 4)
	all := redistest.CommandCalls(t, rdb)
	cmds, calls := redistest.ScriptCommands(t, rdb), all["evalsha"]+all["eval"]
	t.Logf("per job: %.2f redis commands, %.2f script calls", float64(cmds)/n, float64(calls)/n)
	require.LessOrEqual(t, cmds, 20*n, "commands per job")
	require.LessOrEqual(t, calls, n+n/2, "script calls per job")
}

// TestBusyWorkerWritesNoWakeUpMarkers pins the cascade rule of the fetch
// (include/fetch.lua): a worker that takes its next job as it finishes the
// last one consumed no marker, so it writes none for others. A lone worker
// at concurrency 1 working through a backlog writes at most the one marker
// of its first, blocking fetch; each job used to cost an LLEN and a ZADD.
// The jobs are added with delay 0 and retention on, so no other ZADD runs.
func TestBusyWorkerWritesNoWakeUpMarkers(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()
	const n = 100
	bulk := make([]drover.BulkJob, n)
	for i := range bulk {
		bulk[i].Opts = &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}
	}
	_, err := q.AddBulk(ctx, bulk)
	require.NoError(t, err)
	require.NoError(t, rdb.Del(ctx, "bull:q:marker").Err())
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Concurrency: 1, DrainDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	testkit.WaitFor(t, 20*time.Second, "all processed", func() bool {
		c, err := q.GetJobCounts(ctx, drover.StateWaiting, drover.StateActive)
		require.NoError(t, err)
		return c[drover.StateWaiting]+c[drover.StateActive] == 0
	})
	require.NoError(t, w.Close(ctx))
	all := redistest.CommandCalls(t, rdb)
	t.Logf("%d jobs: %d ZADD, %d LLEN, %d script calls", n, all["zadd"], all["llen"], all["evalsha"]+all["eval"])
	require.LessOrEqual(t, all["zadd"], 2, "ZADDs: a busy worker's fetch-next wrote wake-up markers")
}

// TestWorkerMakesNoEmptyFinishCalls: a result writer whose results the
// other writer took while it yielded or wrote must stop, not send a
// finishJobs call with no result and no slot to fetch for (at concurrency
// 10, one call in seven was such a call). Every finishJobs call reads its
// locks with one MGET, and one that finished a job removes it from the
// stalled set with one SREM; nothing else in this run makes either, so
// the two counts differ by the calls that carried no result.
func TestWorkerMakesNoEmptyFinishCalls(t *testing.T) {
	t.Parallel()
	const n = 3000
	rdb := completeNoOpJobs(t, n, 10)
	all := redistest.CommandCalls(t, rdb)
	t.Logf("%d jobs: %d finishJobs calls (MGET), %d with a result (SREM)", n, all["mget"], all["srem"])
	require.Equal(t, all["srem"], all["mget"], "finishJobs calls that carried no result")
}

// completeNoOpJobs adds n jobs in bulk on a server of its own, zeroes its
// command statistics, and has a worker at the given concurrency complete
// them all with a processor that does nothing; the worker is closed when
// it returns, so the statistics count the worker's commands only.
func completeNoOpJobs(t *testing.T, n, concurrency int) *redis.Client {
	t.Helper()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()
	_, err := q.AddBulk(ctx, make([]drover.BulkJob, n))
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Concurrency: concurrency, DrainDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	testkit.WaitFor(t, 30*time.Second, "all completed", func() bool {
		c, err := q.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return c[drover.StateCompleted] == int64(n)
	})
	require.NoError(t, w.Close(ctx))
	return rdb
}
