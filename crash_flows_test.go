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
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
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
	r := newCrashRig(t, "--appendonly", "yes", "--appendfsync", "always")
	srv, q, fp := r.srv, r.q, r.fp
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
	s, completions := r.settle(t, crashedAt, 10*time.Second, 20*time.Second)
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
	require.NotContains(t, r.logs.String(), "level=ERROR")
	t.Logf("%d jobs acknowledged, %d completed", len(acked), len(s.In("completed")))
}

// crashRig is the crash tests' world: a redis-server started with args (so
// srv.Crash restarts it from its own files), a client that fails fast
// while it is down, a queue with a job scheduler "tick" every 100 ms and
// every event kept, a flow producer, and a started worker (concurrency 8,
// one-second locks) returning each job's id; all log to logs.
type crashRig struct {
	srv  *redistest.Server
	rdb  *redis.Client
	q    *drover.Queue
	fp   *drover.FlowProducer
	w    *drover.Worker
	logs *testkit.SyncBuffer
}

func newCrashRig(t *testing.T, args ...string) *crashRig {
	t.Helper()
	ctx := context.Background()
	srv, err := redistest.Start(args...)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: logger})
	require.NoError(t, err)
	// Every event kept: settle counts a completed event per job.
	require.NoError(t, q.SetEventsMaxLen(ctx, 1_000_000))
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Logger: logger})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		time.Sleep(time.Millisecond)
		return job.ID, nil
	}), &drover.WorkerOptions{Concurrency: 8, DrainDelay: 200 * time.Millisecond, Logger: logger,
		LockDuration: time.Second, StalledInterval: 500 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })
	return &crashRig{srv: srv, rdb: rdb, q: q, fp: fp, w: w, logs: logs}
}

// settle waits (up to runWait) for a scheduler run made a second after
// crashedAt to complete (the worker resumed by itself), removes the
// scheduler, waits (up to finishWait) until no job is left to run, closes
// the worker, and returns the queue's states and each job id's number of
// completed events. No job may have failed.
func (r *crashRig) settle(t *testing.T, crashedAt time.Time, runWait, finishWait time.Duration) (*queuecheck.States, map[string]int) {
	t.Helper()
	ctx := context.Background()
	testkit.WaitFor(t, runWait, "a scheduler run made after the last crash completed", func() bool {
		ids, err := r.q.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
		require.NoError(t, err)
		for _, id := range ids {
			var ms int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(id, "repeat:tick:"), "%d", &ms); err == nil &&
				strings.HasPrefix(id, "repeat:") && time.UnixMilli(ms).After(crashedAt.Add(time.Second)) {
				return true
			}
		}
		return false
	})
	_, err := r.q.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)
	testkit.WaitFor(t, finishWait, "every job finished", func() bool {
		c, err := r.q.GetJobCounts(ctx)
		require.NoError(t, err)
		return c[drover.StateWaiting]+c[drover.StateActive]+c[drover.StatePrioritized]+
			c[drover.StateDelayed]+c[drover.StateWaitingChildren] == 0
	})
	require.NoError(t, r.w.Close(ctx))

	s := readQueueStates(t, r.rdb, "bull", "q")
	require.Empty(t, s.In("failed"))
	completions := map[string]int{}
	for _, e := range r.rdb.XRange(ctx, "bull:q:events", "-", "+").Val() {
		if e.Values["event"] == "completed" {
			completions[fmt.Sprint(e.Values["jobId"])]++
		}
	}
	return s, completions
}
