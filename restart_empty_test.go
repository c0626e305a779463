package drover_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// commandsProcessed reads INFO stats' total_commands_processed.
func commandsProcessed(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "stats").Result()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats has no total_commands_processed")
	return 0
}

// TestEverythingAfterRedisRestartsEmpty: Redis without persistence is
// killed and comes back empty on the same address while a worker runs two
// jobs, a job scheduler ticks, QueueEvents reads the queue's events (its
// last id now beyond the new, empty stream's) and a dashboard serves. The
// two running jobs' processors return after the restart (their finish
// finds no job). Nothing may panic, hang or spin (the server's command
// count while all is idle stays that of idle clients); the jobs added
// after the restart run, their completed events reach QueueEvents, the
// scheduler upserted again ticks again, the dashboard lists the queue, the
// queue's state is consistent (queuecheck) and the worker closes.
func TestEverythingAfterRedisRestartsEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	admin := srv.Client(t)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: log})
	require.NoError(t, err)
	qe, err := drover.NewQueueEvents(rdb, "q", &drover.QueueEventsOptions{LastEventID: "0", BlockTimeout: 100 * time.Millisecond, Logger: log})
	require.NoError(t, err)
	completed := traffic.CountCompletions(t, qe)

	release := make(chan struct{})
	var running atomic.Int64
	var ticks atomic.Int64
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		switch job.Name {
		case "slow":
			running.Add(1)
			<-release
		case "tick":
			ticks.Add(1)
		}
		return "ok", nil
	}), &drover.WorkerOptions{Concurrency: 4, Logger: log, StalledInterval: 500 * time.Millisecond, LockDuration: 2 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))

	ins, err := inspect.New(rdb, &inspect.Options{DiscoveryInterval: 200 * time.Millisecond, Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleViewer, Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	overview := func() (int, string) {
		c := &http.Client{Timeout: 15 * time.Second}
		resp, err := c.Get(hs.URL + "/api/overview")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	_, err = q.UpsertJobScheduler(ctx, "every", drover.RepeatOptions{Every: 100 * time.Millisecond}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)
	for range 2 {
		_, err := q.Add(ctx, "slow", nil, nil)
		require.NoError(t, err)
	}
	testkit.WaitFor(t, 10*time.Second, "the slow jobs running", func() bool { return running.Load() == 2 })
	testkit.WaitFor(t, 10*time.Second, "the scheduler ticking", func() bool { return ticks.Load() >= 2 })
	code, body := overview()
	require.Equal(t, http.StatusOK, code, body)

	require.NoError(t, srv.Crash()) // back empty on the same address
	close(release)                  // the running jobs end on a Redis that never heard of them

	// Idle for a while: count what the clients send.
	time.Sleep(time.Second)
	before := commandsProcessed(t, admin)
	time.Sleep(2 * time.Second)
	idle := commandsProcessed(t, admin) - before
	t.Logf("commands in 2 s of idling after the restart: %d", idle)
	require.Less(t, idle, int64(2000), "something spins on the empty Redis")

	var ids []string
	for range 5 {
		r, err := q.Add(ctx, "after", nil, nil)
		require.NoError(t, err)
		ids = append(ids, r.Job.ID)
	}
	testkit.WaitFor(t, 20*time.Second, "the jobs after the restart completed, their events read", func() bool {
		for _, id := range ids {
			if completed.Of(id) == 0 {
				return false
			}
		}
		return true
	})
	tickBefore := ticks.Load()
	_, err = q.UpsertJobScheduler(ctx, "every", drover.RepeatOptions{Every: 100 * time.Millisecond}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "the scheduler ticking again", func() bool { return ticks.Load() >= tickBefore+2 })
	testkit.WaitFor(t, 10*time.Second, "the dashboard listing the queue", func() bool {
		code, body := overview()
		return code == http.StatusOK && strings.Contains(body, `"q"`)
	})
	_, err = q.RemoveJobScheduler(ctx, "every")
	require.NoError(t, err)

	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))
	st, err := queuecheck.Read(ctx, admin, "bull", "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.NotContains(t, logs.String(), "panic")
}
