package drover_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
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

// TestWorkAcrossRedisIdleTimeouts: Redis closes every connection idle for
// a second (`timeout 1`, as some managed services and proxies set), so the
// pooled connections of a producer, a worker (its fetches, finishes, lock
// renewals, named connection) and QueueEvents are killed between bursts of
// jobs. Each burst's jobs run once each, their completed events arrive,
// a cancel reaches a running job, nothing is logged at ERROR, and the
// queue ends consistent.
func TestWorkAcrossRedisIdleTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--timeout", "1")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 16})
	t.Cleanup(func() { _ = rdb.Close() })
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: log})
	require.NoError(t, err)
	qe, err := drover.NewQueueEvents(rdb, "q", &drover.QueueEventsOptions{LastEventID: "0", Logger: log})
	require.NoError(t, err)
	completed := traffic.CountCompletions(t, qe)
	var mu sync.Mutex
	ran := map[string]int{}

	cancelled := make(chan error, 1)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		ran[job.ID]++
		mu.Unlock()
		if job.Name == "long" {
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
		time.Sleep(5 * time.Millisecond)
		return "ok", nil
	}), &drover.WorkerOptions{Concurrency: 8, Logger: log, LockDuration: 3 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))

	var ids []string
	for burst := range 3 {
		for range 20 {
			r, err := q.Add(ctx, "x", nil, nil)
			require.NoError(t, err)
			ids = append(ids, r.Job.ID)
		}
		testkit.WaitFor(t, 20*time.Second, "burst's jobs completed", func() bool {
			for _, id := range ids {
				if completed.Of(id) == 0 {
					return false
				}
			}
			return true
		})
		t.Logf("burst %d done", burst)
		time.Sleep(2500 * time.Millisecond) // every idle connection is closed by Redis
	}
	long, err := q.Add(ctx, "long", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "the long job running", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ran[long.Job.ID] == 1
	})
	time.Sleep(2500 * time.Millisecond) // the cancel subscription's connection idles too
	require.NoError(t, q.CancelJob(ctx, long.Job.ID, "stop", nil))
	select {
	case cause := <-cancelled:
		require.ErrorIs(t, cause, drover.ErrJobCancelled)
	case <-time.After(15 * time.Second):
		t.Fatal("the cancel did not reach the running job")
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))

	mu.Lock()
	for _, id := range ids {
		require.Equal(t, 1, ran[id], "job %s ran %d times", id, ran[id])
		require.Equal(t, 1, completed.Of(id), "completed events of %s", id)
	}
	mu.Unlock()
	st, err := queuecheck.Read(ctx, rdb, "bull", "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.NotContains(t, logs.String(), "level=ERROR", logs.String())
	// The fault happened: Redis closed connections the clients then opened
	// again (received minus still connected).
	field := func(section, name string) int {
		info, err := rdb.Info(ctx, section).Result()
		require.NoError(t, err)
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatalf("INFO %s has no %s", section, name)
		return 0
	}
	closed := field("stats", "total_connections_received") - field("clients", "connected_clients")
	t.Logf("connections closed: %d", closed)
	require.GreaterOrEqual(t, closed, 3, "Redis closed no idle connection")
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && !strings.Contains(line, "job finished") {
			t.Log(line)
		}
	}
}
