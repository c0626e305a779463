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

// TestFlowsAndSchedulerOutliveRedisCrashesWithAOF: a worker runs flows (a
// parent and two children, one delayed) and a job scheduler's runs, and a
// producer adds flows, while the redis-server (appendfsync always) is
// SIGKILLed and restarted from its file twice. Every flow add that
// returned nil ends completed, parent after children with their results,
// each job completes once in Redis (one completed event), the queue passes
// queuecheck, and the scheduler goes on making runs after the last crash.
func TestFlowsAndSchedulerOutliveRedisCrashesWithAOF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--appendonly", "yes", "--appendfsync", "always")
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: logger})
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Logger: logger})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		time.Sleep(2 * time.Millisecond)
		return job.ID, nil
	}), &drover.WorkerOptions{Concurrency: 8, DrainDelay: 200 * time.Millisecond, Logger: logger,
		LockDuration: time.Second, StalledInterval: 500 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })

	var acked []string
	load := testkit.NewLoad()
	load.Every(5*time.Millisecond, func(i int) {
		p := fmt.Sprintf("p%d", i)
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := fp.Add(actx, drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{JobID: p},
			Children: []drover.FlowJob{
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: p + "-a"}},
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: p + "-b", Delay: 20 * time.Millisecond}},
			}})
		cancel()
		if err == nil {
			acked = append(acked, p, p+"-a", p+"-b") // one loop: read after Stop
		}
	})
	for range 2 {
		time.Sleep(700 * time.Millisecond)
		require.NoError(t, srv.Crash())
	}
	crashedAt := time.Now()
	time.Sleep(700 * time.Millisecond)
	load.Stop()
	testkit.WaitFor(t, 10*time.Second, "a scheduler run made after the last crash completed", func() bool {
		ids, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
		require.NoError(t, err)
		for _, id := range ids {
			var ms int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(id, "repeat:tick:"), "%d", &ms); err == nil && strings.HasPrefix(id, "repeat:") &&
				time.UnixMilli(ms).After(crashedAt.Add(time.Second)) {
				return true
			}
		}
		return false
	})
	_, err = q.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)
	testkit.WaitFor(t, 20*time.Second, "every job finished", func() bool {
		c, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		return c[drover.StateWaiting]+c[drover.StateActive]+c[drover.StatePrioritized]+c[drover.StateDelayed]+c[drover.StateWaitingChildren] == 0
	})
	require.NoError(t, w.Close(ctx))

	s := readQueueStates(t, rdb, "bull", "q")
	require.Empty(t, s.In("failed"))
	completions := map[string]int{}
	for _, e := range rdb.XRange(ctx, "bull:q:events", "-", "+").Val() {
		if e.Values["event"] == "completed" {
			completions[fmt.Sprint(e.Values["jobId"])]++
		}
	}
	require.Greater(t, len(acked), 30, "flows were added around the crashes")
	for _, id := range acked {
		require.Equal(t, []string{"completed"}, s.Where[id], id)
		require.Equal(t, 1, completions[id], "completed events of %s", id)
		if !strings.Contains(id, "-") {
			vals, err := q.Job(id).GetChildrenValues(ctx)
			require.NoError(t, err)
			require.Len(t, vals, 2, "parent %s has its children's results", id)
		}
	}
	require.NotContains(t, logs.String(), "level=ERROR")
	t.Logf("%d jobs acknowledged, %d completed", len(acked), len(s.In("completed")))
}
