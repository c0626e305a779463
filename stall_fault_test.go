package drover_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// TestRedisStallsPastClientTimeouts: Redis stalls three times for 1.5 s
// (DEBUG SLEEP: connections stay open, nothing is answered) while a worker
// (concurrency 8) whose client gives up on a reply after 300 ms finishes
// jobs, renews their locks and fetches, a scheduler runs every 100 ms and
// a producer adds. Every call the client gave up on still runs on the
// server once it wakes, after the worker believed it failed: a finish the
// worker sends again must find its job done, not run it a second time.
// Afterwards every job added is completed and ran once (its 10 s lock
// outlasts each stall), each job sits in one state with no lock left, and
// the scheduler goes on.
func TestRedisStallsPastClientTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--enable-debug-command", "yes")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, PoolSize: 32})
	t.Cleanup(func() { _ = rdb.Close() })
	staller := srv.Client(t)
	check := srv.Client(t)

	var logs testkit.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: logger})
	require.NoError(t, err)
	cq, err := drover.NewQueue(check, "q", nil)
	require.NoError(t, err)
	_, err = cq.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)
	var runs testkit.Runs
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.ID)
		time.Sleep(10 * time.Millisecond)
		return "ok", nil
	}), &drover.WorkerOptions{Concurrency: 8, LockDuration: 10 * time.Second, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })

	producer := traffic.Produce(t, q, "j", 5*time.Millisecond, 100*time.Millisecond)

	for range 3 {
		time.Sleep(700 * time.Millisecond)
		require.NoError(t, staller.Do(ctx, "DEBUG", "SLEEP", "1.5").Err())
	}
	time.Sleep(500 * time.Millisecond)
	producer.Stop()
	before := ticks(t, cq)
	testkit.WaitFor(t, 20*time.Second, "a scheduler run after the stalls", func() bool { return ticks(t, cq) > before })
	_, err = cq.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)
	testkit.WaitFor(t, 30*time.Second, "the queue drained", func() bool {
		n, err := cq.GetJobCounts(ctx)
		require.NoError(t, err)
		return n[drover.StateWaiting]+n[drover.StateActive]+n[drover.StateDelayed]+n[drover.StatePrioritized] == 0
	})

	st, err := queuecheck.Read(ctx, check, "bull", "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Empty(t, st.In("failed"))
	added := producer.Added()
	for _, a := range added {
		s, err := cq.GetJobState(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateCompleted, s, "job %s", a.ID)
	}
	ran := runs.Counts()
	for _, id := range st.In("completed") {
		require.Equal(t, 1, ran[id], "job %s ran once", id)
	}
	counts := map[string]int{}
	for _, m := range warningMsg.FindAllStringSubmatch(logs.String(), -1) {
		counts[m[1]]++
	}
	t.Logf("%d jobs added (%d add errors, retried), %d completed; warnings by message: %v", len(added), len(producer.Errors()), len(st.In("completed")), counts)
}
