package drover_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRedisLoadingLosesNoJob: a redis-server (appendfsync always) holding a
// large data set is SIGKILLed under a worker, a producer and a job
// scheduler, and restarts from its files; while it loads them it answers
// every command LOADING for a second or more. Every add that returned nil
// ends completed once, the queue passes queuecheck, no error is logged,
// and the scheduler goes on.
func TestRedisLoadingLosesNoJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	// Ballast the restart has to load (in the AOF's RDB preamble); a
	// client of its own, whose read waits out the populating.
	setup := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = setup.Close() })
	require.NoError(t, setup.Do(ctx, "DEBUG", "POPULATE", 1_000_000, "ballast", 64).Err())
	require.NoError(t, rdb.BgRewriteAOF(ctx).Err())
	testkit.WaitFor(t, 30*time.Second, "the AOF rewrite", func() bool {
		inf := rdb.Info(ctx, "persistence").Val()
		return strings.Contains(inf, "aof_rewrite_in_progress:0") && strings.Contains(inf, "aof_rewrite_scheduled:0")
	})

	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: logger})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)
	var runs testkit.Runs
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.ID)
		return nil, nil
	}), &drover.WorkerOptions{Concurrency: 4, Logger: logger, DrainDelay: 200 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })

	var acked []string
	load := testkit.NewLoad()
	load.Every(5*time.Millisecond, func(i int) {
		id := fmt.Sprintf("j%d", i)
		if _, err := q.Add(ctx, "x", nil, &drover.JobOptions{JobID: id}); err == nil {
			acked = append(acked, id)
		}
	})
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, srv.Crash())
	// Redis answers (INFO) before and between the files it loads: a
	// write that goes through says the load is over.
	// The probe sees LOADING itself (no retries). A loading Redis answers
	// between chunks of its file; on a loaded machine (load 25, CI) a chunk
	// outlasted the default 3 s read timeout: "i/o timeout".
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = probe.Close() })
	loading := false
	testkit.WaitFor(t, 60*time.Second, "the restart's load", func() bool {
		err := probe.Set(ctx, "probe", 1, 0).Err()
		require.True(t, err == nil || strings.HasPrefix(err.Error(), "LOADING"), "%v", err)
		loading = loading || err != nil
		return err == nil
	})
	require.True(t, loading, "Redis answered LOADING after the restart")
	time.Sleep(300 * time.Millisecond)
	load.Stop()

	_, err = q.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)
	testkit.WaitFor(t, 20*time.Second, "every job finished", func() bool {
		c, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		return c[drover.StateWaiting]+c[drover.StateActive]+c[drover.StateDelayed] == 0
	})
	require.NoError(t, w.Close(ctx))
	s := readQueueStates(t, rdb, "bull", "q")
	ran := runs.Counts()
	for _, id := range acked {
		require.Equal(t, []string{"completed"}, s.Where[id], id)
		require.Equal(t, 1, ran[id], "job %s ran once", id)
	}
	t.Logf("the worker's calls met LOADING: %t", strings.Contains(logs.String(), "LOADING"))
	require.NotContains(t, logs.String(), "level=ERROR")
	t.Logf("%d adds acknowledged, %d runs", len(acked), len(ran))
}
