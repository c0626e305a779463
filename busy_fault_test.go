package drover_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// busyScript keeps Redis inside one script for ARGV[1] microseconds, as a
// long script of another client would: past busy-reply-threshold every other
// client's command is answered BUSY until it ends.
const busyScript = `local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
while true do
  local n = redis.call('TIME')
  if n[1] * 1000000 + n[2] - start > tonumber(ARGV[1]) then return 1 end
end`

// TestBusyRedisLosesNoJob: while a worker (concurrency 8) runs single jobs,
// flows (a parent and three children) and a job scheduler's runs, and
// producers add jobs (some deduplicated, delayed or prioritized), another
// client's script holds Redis three times for 1.2 s, so every call of
// drover's meets BUSY for about a second. Afterwards every job added is
// completed once, each job sits in one state, every parent completed after
// its children, and nothing is left active or locked.
func TestBusyRedisLosesNoJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--busy-reply-threshold", "100")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	busy := srv.Client(t)
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: logger})
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Logger: logger})
	require.NoError(t, err)

	var runs testkit.Runs
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.ID)
		time.Sleep(3 * time.Millisecond)
		return "ok", nil
	}), &drover.WorkerOptions{Concurrency: 8, Logger: logger, DrainDelay: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 250 * time.Millisecond}, nil)
	require.NoError(t, err)

	var added sync.Map // job id -> kind, for every add that reported success
	var addErrs []error
	var errMu sync.Mutex
	record := func(err error) {
		errMu.Lock()
		addErrs = append(addErrs, err)
		errMu.Unlock()
	}
	load := testkit.NewLoad()
	load.Every(5*time.Millisecond, func(i int) {
		opts := &drover.JobOptions{JobID: fmt.Sprintf("j%d", i)}
		switch i % 4 {
		case 1:
			opts.Delay = 50 * time.Millisecond
		case 2:
			opts.Priority = 1 + i%3
		case 3:
			opts.Deduplication = &drover.Deduplication{ID: fmt.Sprintf("d%d", i)}
		}
		r, err := q.Add(ctx, "single", map[string]int{"i": i}, opts)
		if err != nil {
			record(err)
			return
		}
		added.Store(r.Job.ID, "single")
	})
	load.Every(20*time.Millisecond, func(i int) {
		node, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{JobID: fmt.Sprintf("p%d", i)},
			Children: []drover.FlowJob{
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: fmt.Sprintf("p%d-a", i)}},
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: fmt.Sprintf("p%d-b", i), Delay: 30 * time.Millisecond}},
				{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: fmt.Sprintf("p%d-c", i), Priority: 2}},
			}})
		if err != nil {
			record(err)
			return
		}
		added.Store(node.Job.ID, "parent")
		for _, c := range node.Children {
			added.Store(c.Job.ID, "child")
		}
	})

	for range 3 {
		time.Sleep(700 * time.Millisecond)
		require.NoError(t, busy.Eval(ctx, busyScript, nil, 1_200_000).Err())
	}
	time.Sleep(500 * time.Millisecond)
	load.Stop()
	_, err = q.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)

	testkit.WaitFor(t, 15*time.Second, "every job finished", func() bool {
		c, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		return c[drover.StateWaiting]+c[drover.StateActive]+c[drover.StatePrioritized]+c[drover.StateDelayed]+c[drover.StateWaitingChildren] == 0
	})
	require.NoError(t, w.Close(ctx))

	s := readQueueStates(t, rdb, "bull", "q")
	require.Empty(t, s.In("failed"), "no job failed")
	ran := runs.Counts()
	n := 0
	added.Range(func(key, _ any) bool {
		n++
		id := key.(string)
		require.Equal(t, []string{"completed"}, s.Where[id], "job %s", id)
		require.Equal(t, 1, ran[id], "job %s ran once", id)
		return true
	})
	for id, c := range ran {
		require.Equal(t, 1, c, "job %s ran %d times", id, c)
	}
	for _, err := range addErrs {
		require.ErrorContains(t, err, "BUSY", "a refused add names what Redis answered")
	}
	t.Logf("%d jobs added, %d adds refused; %d runs", n, len(addErrs), len(ran))
	require.NotContains(t, logs.String(), "level=ERROR", "no error logged")
}
