package drover_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

// TestWorkThroughClientPauseWrite: Redis holds every write (CLIENT PAUSE
// WRITE, as a failover or a resharding does for seconds) twice while a
// producer adds jobs with its own ids, a flow is added, a job scheduler
// ticks and a worker runs them, with go-redis's default 3 s read timeout,
// shorter than the second pause: calls held past it are abandoned by the
// client, which Redis then never runs. Every created job completes exactly
// once (one completed event each), the flow's parent completes after its
// children, the scheduler ticks again after the pauses, and the queue ends
// consistent.
func TestWorkThroughClientPauseWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr}) // go-redis's default timeouts
	t.Cleanup(func() { _ = rdb.Close() })
	admin := srv.Client(t)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: log})
	require.NoError(t, err)
	qe, err := drover.NewQueueEvents(rdb, "q", &drover.QueueEventsOptions{LastEventID: "0", Logger: log})
	require.NoError(t, err)
	done := traffic.CountCompletions(t, qe)

	var mu sync.Mutex
	ran := map[string]int{}
	var ticks atomic.Int64
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "tick" {
			ticks.Add(1)
		}
		mu.Lock()
		ran[job.ID]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return "ok", nil
	}), &drover.WorkerOptions{Concurrency: 8, Logger: log, LockDuration: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	_, err = q.UpsertJobScheduler(ctx, "every", drover.RepeatOptions{Every: 200 * time.Millisecond}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)

	prod := traffic.Produce(t, q, "j", 10*time.Millisecond, 100*time.Millisecond)
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Logger: log})
	require.NoError(t, err)
	for _, pause := range []string{"1500", "4000"} {
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", pause, "WRITE").Err())
		if pause == "4000" {
			// A flow added while writes are held: it lands after the pause.
			fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err := fp.Add(fctx, drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{JobID: "root"},
				Children: []drover.FlowJob{{Name: "c1", QueueName: "q", Opts: &drover.JobOptions{JobID: "c1"}}, {Name: "c2", QueueName: "q", Opts: &drover.JobOptions{JobID: "c2"}}}})
			cancel()
			require.NoError(t, err)
		}
		time.Sleep(4500 * time.Millisecond)
	}
	prod.Stop()
	tickAfter := ticks.Load()
	testkit.WaitFor(t, 10*time.Second, "the scheduler ticking after the pauses", func() bool { return ticks.Load() >= tickAfter+2 })

	var ids []string
	for _, a := range prod.Added() {
		ids = append(ids, a.ID)
	}
	ids = append(ids, "root", "c1", "c2")
	testkit.WaitFor(t, 30*time.Second, "every job completed", func() bool { return len(done.Missing(ids)) == 0 })
	_, err = q.RemoveJobScheduler(ctx, "every")
	require.NoError(t, err)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))
	mu.Lock()
	for _, id := range ids {
		require.Equal(t, 1, ran[id], "job %s ran %d times", id, ran[id])
		require.Equal(t, 1, done.Of(id), "completed events of %s", id)
	}
	mu.Unlock()
	t.Logf("%d jobs, %d adds made again", len(ids), len(prod.Errors()))
	st, err := queuecheck.Read(ctx, rdb, "bull", "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.NotContains(t, logs.String(), "level=ERROR", logs.String())
	// That the pauses were felt: a call of drover's warned, or an add the
	// producer made again (at load 40 the calls held past the read timeout
	// were once all the producer's).
	require.True(t, strings.Contains(logs.String(), "level=WARN") || len(prod.Errors()) > 0,
		"the pauses went unnoticed: no fault was injected")
}
