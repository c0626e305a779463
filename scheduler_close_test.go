package drover_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCloseGivesAPendingSchedulerAdvanceItsTry: Redis stops answering as a
// worker takes a job scheduler's run, so the run's next run is not created
// within the 10 s the run waits for it; the run starts and the worker goes
// on trying in the background. Redis comes back while the worker closes:
// the run's result lands, and the next run must too. Before, Close ended
// the background tries as soon as the results were written, between two
// tries: the run was completed, no next run existed, and the scheduler had
// stopped for good ("job scheduler not advanced: the worker closed before
// Redis took its next run").
func TestCloseGivesAPendingSchedulerAdvanceItsTry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	proxy, rdb := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{DialTimeout: 100 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)
	first, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateWaiting}, 0, -1, true)
	require.NoError(t, err)
	require.Len(t, first, 1, "the scheduler's first run waits")
	advance := scripts.Source("advanceScheduler")
	require.NoError(t, direct.ScriptLoad(ctx, advance).Err()) // an EVALSHA, not a NOSCRIPT and an EVAL
	proxy.BlackholeAt(fmt.Sprintf("%x", sha1.Sum([]byte(advance))))

	started, release := make(chan struct{}), make(chan struct{})
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		close(started)
		<-release
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Logger: slog.New(slog.NewTextHandler(logs, nil)), LockDuration: time.Minute})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))

	select {
	case <-started: // the 10 s wait for the next run is over; it is tried in the background
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not start")
	}
	require.True(t, proxy.Blackholed(), "Redis did not answer the advance")
	// Redis refuses connections now: the background tries fail at once.
	proxy.Refuse()
	proxy.SetBlackhole(false)
	proxy.ResetAll()
	time.Sleep(3 * time.Second) // the background tries are 1.6 s and more apart by now
	close(release)
	time.Sleep(300 * time.Millisecond) // the result's write fails once or twice
	closed := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		closed <- w.Close(cctx)
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, proxy.Listen())
	require.NoError(t, <-closed)

	st, err := q.GetJobState(ctx, first[0])
	require.NoError(t, err)
	require.Equal(t, drover.StateCompleted, st, "the run completed")
	ids, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateDelayed, drover.StateWaiting}, 0, -1, true)
	require.NoError(t, err)
	require.Len(t, ids, 1, "the scheduler has its next run; logs:\n%s", logs.String())
	require.True(t, strings.HasPrefix(ids[0], "repeat:tick:"), ids[0])
	require.NotContains(t, logs.String(), "level=ERROR")

	// And it runs on under the next worker.
	testkit.WaitFor(t, time.Second, "nothing left active", func() bool {
		return direct.LLen(ctx, prefix+":q:active").Val() == 0
	})
}

// TestSchedulerRunWhoseAdvanceRedisLostHeals: a worker takes a job
// scheduler's run and creates its next run, and then Redis loses that
// write but not the take (it restarts from a snapshot taken between the
// two, as a replica promoted before the second write reached it would
// hold). The run completes under its lock, which the snapshot kept. Its
// scheduler must go on: before, its current run was the completed one and
// no next run existed, and nothing would ever make one (the scheduler had
// stopped for good, silently).
func TestSchedulerRunWhoseAdvanceRedisLostHeals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = direct.Close() })
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{DialTimeout: 200 * time.Millisecond, ReadTimeout: 2 * time.Second})
	q, err := drover.NewQueue(direct, "q", nil)
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)
	advance := scripts.Source("advanceScheduler")
	require.NoError(t, direct.ScriptLoad(ctx, advance).Err())
	proxy.BlackholeAt(fmt.Sprintf("%x", sha1.Sum([]byte(advance))))

	started, release := make(chan string, 1), make(chan struct{})
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		started <- job.ID
		<-release
		return nil, nil
	}), &drover.WorkerOptions{Logger: slog.New(slog.NewTextHandler(logs, nil)), LockDuration: time.Minute})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })

	testkit.WaitFor(t, 10*time.Second, "the run taken, its advance held", proxy.Blackholed)
	require.NoError(t, direct.Save(ctx).Err()) // the snapshot: the run active, no next run
	proxy.SetBlackhole(false)                  // the advance lands
	run := <-started
	next := func() []string {
		ids, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateDelayed}, 0, -1, true)
		require.NoError(t, err)
		return ids
	}
	require.Len(t, next(), 1, "the next run was made")
	require.NoError(t, srv.Crash()) // back from the snapshot
	testkit.WaitFor(t, 10*time.Second, "Redis back", func() bool { return direct.Ping(ctx).Err() == nil })
	require.Empty(t, next(), "Redis lost the next run")

	close(release)
	testkit.WaitFor(t, 10*time.Second, "the run completed", func() bool {
		st, err := q.GetJobState(ctx, run)
		return err == nil && st == drover.StateCompleted
	})
	testkit.WaitFor(t, 5*time.Second, "the scheduler's next run", func() bool { return len(next()) == 1 })
	testkit.WaitFor(t, 5*time.Second, "the worker to say so", func() bool {
		return strings.Contains(logs.String(), "job scheduler had no next run after its run ended")
	})
	require.NotContains(t, logs.String(), "level=ERROR")
}
