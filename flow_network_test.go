package drover_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestFlowsSchedulerDedupUnderConnectionResets: a rate-limited worker
// (concurrency 20) runs flows (a parent and three children, one delayed
// and one prioritized), a job scheduler's runs and deduplicated jobs
// (simple, throttled, debounced) while producers add more, all through a
// proxy that resets every connection every 150 ms, so replies of adds,
// flow adds, fetches, finishes (a child's finish moves its parent) and
// scheduler advances are lost mid-call. Afterwards every job added is
// completed once with one completed event, each job sits in one state,
// every parent has its children's results, and no lock is left.
func TestFlowsSchedulerDedupUnderConnectionResets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, rdb := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond, PoolSize: 60})
	direct, prefix := redistest.Client(t)
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix, Logger: logger})
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix, Logger: logger})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 200 * time.Millisecond}, nil)
	require.NoError(t, err)

	var runs testkit.Runs
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.ID)
		time.Sleep(20 * time.Millisecond)
		return job.ID, nil
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 20, Logger: logger,
		Limiter:      &drover.RateLimit{Max: 40, Duration: 100 * time.Millisecond},
		LockDuration: 5 * time.Second, StalledInterval: 2 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})

	var added sync.Map // id -> struct{}: adds that reported a new job
	var inDoubt sync.Map
	var debounced sync.Map // debounce ids added
	note := func(id string, err error) {
		if err != nil {
			inDoubt.Store(id, err)
			return
		}
		added.Store(id, struct{}{})
	}
	load := testkit.NewLoad()
	load.Every(10*time.Millisecond, func(i int) {
		p := fmt.Sprintf("p%d", i)
		node, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{JobID: p},
			Children: []drover.FlowJob{
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: p + "-a"}},
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: p + "-b", Delay: 50 * time.Millisecond}},
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: p + "-c", Priority: 3}},
			}})
		if err != nil {
			note(p, err)
			return
		}
		require.Equal(t, drover.AddCreated, node.Outcome, "flow %s", p)
		for _, id := range []string{p, p + "-a", p + "-b", p + "-c"} {
			note(id, nil)
		}
	})
	load.Every(7*time.Millisecond, func(i int) {
		id := fmt.Sprintf("d%d", i)
		// Three adds per deduplication id.
		de := &drover.Deduplication{ID: fmt.Sprintf("simple%d", i/9)}
		switch i % 3 {
		case 1:
			de = &drover.Deduplication{ID: fmt.Sprintf("throttle%d", i/9), TTL: 30 * time.Millisecond}
		case 2:
			de = &drover.Deduplication{ID: fmt.Sprintf("debounce%d", i/9), TTL: 80 * time.Millisecond, Replace: true, Extend: true}
		}
		opts := &drover.JobOptions{JobID: id, Deduplication: de}
		if i%3 == 2 {
			opts.Delay = 40 * time.Millisecond
		}
		r, err := q.Add(ctx, "dedup", nil, opts)
		if err != nil {
			note(id, err)
			return
		}
		if r.Outcome == drover.AddCreated && !de.Replace { // a debounced job may be replaced
			note(id, nil)
		}
		if de.Replace {
			debounced.Store(de.ID, struct{}{})
		}
	})

	for range 12 {
		time.Sleep(150 * time.Millisecond)
		proxy.ResetAll()
	}
	load.Stop()
	dq, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = dq.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)
	testkit.WaitFor(t, 20*time.Second, "every job finished", func() bool {
		c, err := dq.GetJobCounts(ctx)
		require.NoError(t, err)
		return c[drover.StateWaiting]+c[drover.StateActive]+c[drover.StatePrioritized]+c[drover.StateDelayed]+c[drover.StateWaitingChildren] == 0
	})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))

	s := readQueueStates(t, direct, prefix, "q")
	require.Empty(t, s.In("failed"), "no job failed")
	completions := map[string]int{}
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" {
			completions[fmt.Sprint(m.Values["jobId"])]++
		}
	}
	ran := runs.Counts()
	n := 0
	added.Range(func(key, _ any) bool {
		n++
		id := key.(string)
		require.Equal(t, []string{"completed"}, s.Where[id], "job %s", id)
		return true
	})
	for _, id := range s.In("completed") {
		require.Equal(t, 1, ran[id], "job %s ran once", id)
		require.Equal(t, 1, completions[id], "job %s has one completed event", id)
		if strings.HasPrefix(id, "p") && !strings.Contains(id, "-") {
			vals, err := dq.Job(id).GetChildrenValues(ctx)
			require.NoError(t, err)
			require.Len(t, vals, 3, "parent %s has its children's results", id)
		}
	}
	debounceRuns := map[string]int{}
	for _, id := range s.In("completed") {
		if de := s.Hashes[id]["deid"]; strings.HasPrefix(de, "debounce") {
			debounceRuns[de]++
		}
	}
	debounced.Range(func(key, _ any) bool {
		require.Positive(t, debounceRuns[key.(string)], "debounced %s ran", key)
		return true
	})
	doubts := 0
	inDoubt.Range(func(key, value any) bool {
		doubts++
		t.Logf("in doubt: %s: %v", key, value)
		return true
	})
	t.Logf("%d jobs added, %d adds in doubt, %d completed, %d runs", n, doubts, len(s.In("completed")), len(ran))
	require.NotContains(t, logs.String(), "result not written")
	require.NotContains(t, logs.String(), "level=ERROR")
}
