package drover_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestSchedulerAdvanceOutlivesARedisRefusal: a worker takes a job
// scheduler's run while Redis refuses writes for a moment (out of memory,
// as it would answer LOADING after a restart or READONLY during a
// failover). Creating the scheduler's next run must be retried until Redis
// takes it: before, the first refusal was final ("job scheduler not
// advanced: its next run was not created") and the scheduler never ran
// again.
func TestSchedulerAdvanceOutlivesARedisRefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ran, logs, first := refusingScheduler(t, 0)
	// The worker takes the first run (the fetch's first write is allowed)
	// and cannot create the next one yet.
	testkit.WaitFor(t, 10*time.Second, "the worker to take the first run", func() bool {
		return rdb.LLen(ctx, "bull:q:active").Val() == 1
	})
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	require.Equal(t, first.ID, recv(t, ran, "logs:\n%s", logs.String()))

	second := recv(t, ran, "the scheduler's next run; logs:\n%s", logs.String())
	require.NotEqual(t, first.ID, second)
	require.NotContains(t, logs.String(), "job scheduler not advanced")
}

// TestSchedulerAdvanceOutlivesALongRefusal: as above, but Redis refuses
// writes for longer than the run waits for its scheduler to advance (10 s)
// before it starts. The next run must still be created once Redis takes
// writes again, by the worker in the background: before, the worker gave
// up and the scheduler never ran again.
func TestSchedulerAdvanceOutlivesALongRefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ran, logs, first := refusingScheduler(t, time.Minute)
	// The run starts once the worker stops waiting for the advance, 10 s
	// after its first try; how much later depends on the machine's load.
	require.Equal(t, first.ID, recvWithin(t, ran, 30*time.Second, "logs:\n%s", logs.String()))
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())

	second := recv(t, ran, "the scheduler's next run; logs:\n%s", logs.String())
	require.NotEqual(t, first.ID, second)
}

// TestSchedulerAdvanceOutlivesAWriteStop: Redis stops taking writes for
// a reason of its own that passes: a master configured with
// min-replicas-to-write whose replicas are late answers NOREPLICAS, as one
// whose RDB snapshot failed (disk full) answers MISCONF. A worker takes a
// job scheduler's run while Redis refuses writes (out of memory first, so
// the fetch's first write goes through), and the refusal turns into
// NOREPLICAS while the worker retries creating the next run. The next run
// must be created once Redis takes writes again: before, NOREPLICAS was
// taken for a final answer ("job scheduler not advanced: its next run was
// not created") and the scheduler never ran again.
func TestSchedulerAdvanceOutlivesAWriteStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ran, logs, first := refusingScheduler(t, 0)
	testkit.WaitFor(t, 10*time.Second, "the worker to fail creating the next run once", func() bool {
		return strings.Contains(logs.String(), "advance job scheduler failed; retrying")
	})
	require.NoError(t, rdb.ConfigSet(ctx, "min-replicas-to-write", "1").Err())
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	require.ErrorContains(t, rdb.Set(ctx, "probe", "x", 0).Err(), "NOREPLICAS")
	// Refused with NOREPLICAS at least once before writes are taken again.
	testkit.WaitFor(t, 20*time.Second, "an advance refused with NOREPLICAS", func() bool {
		return strings.Contains(logs.String(), "NOREPLICAS")
	})
	require.NoError(t, rdb.ConfigSet(ctx, "min-replicas-to-write", "0").Err())
	require.Equal(t, first.ID, recv(t, ran, "logs:\n%s", logs.String()))

	second := recv(t, ran, "the scheduler's next run; logs:\n%s", logs.String())
	require.NotEqual(t, first.ID, second)
	require.NotContains(t, logs.String(), "its next run was not created")
}

// TestSchedulerRunWithABadPatternIsNotRetried: a run whose stored pattern
// cannot be parsed (written by a newer or a broken producer) fails the same
// way on every try. The worker says so once and starts the run: before, it
// retried the parse for about 9 s ("advance job scheduler failed;
// retrying", 8 times) and then went on retrying in the background until
// Close.
func TestSchedulerRunWithABadPatternIsNotRetried(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()
	first, err := q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Pattern: "0 0 * * *", Immediately: true}, nil)
	require.NoError(t, err)
	raw, err := rdb.HGet(ctx, "bull:q:"+first.ID, "opts").Result()
	require.NoError(t, err)
	bad := strings.Replace(raw, `"pattern":"0 0 * * *"`, `"pattern":"0 0 31W * *"`, 1)
	require.NotEqual(t, raw, bad)
	require.NoError(t, rdb.HSet(ctx, "bull:q:"+first.ID, "opts", bad).Err())

	ran := make(chan string, 10)
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		ran <- job.ID
		return nil, nil
	}), &drover.WorkerOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })

	require.Equal(t, first.ID, recv(t, ran, "logs:\n%s", logs.String()))
	require.NoError(t, w.Close(ctx))
	require.Contains(t, logs.String(), "job scheduler not advanced: its next run was not created")
	require.NotContains(t, logs.String(), "retrying")
	require.NotContains(t, logs.String(), "not advanced yet")
}

// refusingScheduler starts a worker (lockDuration 0 = the default) on a
// queue of its own server with an every-2s job scheduler, then makes Redis
// refuse writes (maxmemory 1, noeviction) before the worker takes the first
// run. It returns the client, the ids of the jobs the worker runs, its log
// and the first run.
func refusingScheduler(t *testing.T, lockDuration time.Duration) (*redis.Client, chan string, *testkit.SyncBuffer, *drover.Job) {
	t.Helper()
	rdb, q := ownServer(t, nil, "--maxmemory-policy", "noeviction")
	ran, logs, first := refusingSchedulerVia(t, lockDuration, rdb, rdb, q)
	return rdb, ran, logs, first
}

// refusingSchedulerVia is refusingScheduler on a given server: rdb
// reaches it directly (the scheduler, the refusal), workerRdb is the
// worker's client, q the queue on rdb.
func refusingSchedulerVia(t *testing.T, lockDuration time.Duration, rdb, workerRdb *redis.Client, q *drover.Queue) (chan string, *testkit.SyncBuffer, *drover.Job) {
	t.Helper()
	ctx := context.Background()

	ran := make(chan string, 10)
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(workerRdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		ran <- job.ID
		return nil, nil
	}), &drover.WorkerOptions{Logger: slog.New(slog.NewTextHandler(logs, nil)), LockDuration: lockDuration})
	require.NoError(t, err)

	first, err := q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 2 * time.Second}, nil)
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})
	return ran, logs, first
}

// TestSchedulerAdvanceOutlivesASlowRefusal: as TestSchedulerAdvanceOutlivesALongRefusal,
// but each call to Redis is slow (150 ms each way through a proxy), so the
// run's 10 s wait for its scheduler to advance ends while the worker sleeps
// between two tries rather than after its last try. The worker must go on
// in the background then too: before, it returned from the sleep without
// handing the advance on, and the scheduler never ran again (the CI run of
// TestSchedulerAdvanceOutlivesAWriteStop on a loaded machine met the same).
func TestSchedulerAdvanceOutlivesASlowRefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--maxmemory-policy", "noeviction")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	direct := srv.Client(t)
	proxy, slow := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	q, err := drover.NewQueue(direct, "q", nil)
	require.NoError(t, err)
	ran, logs, first := refusingSchedulerVia(t, time.Minute, direct, slow, q)

	testkit.WaitFor(t, 10*time.Second, "the worker to fail creating the next run once", func() bool {
		return strings.Contains(logs.String(), "advance job scheduler failed; retrying")
	})
	proxy.SetLatency(150 * time.Millisecond)

	// The run starts once the worker stops waiting for the advance, 10 s
	// after its first try; how much later depends on the machine's load.
	require.Equal(t, first.ID, recvWithin(t, ran, 30*time.Second, "logs:\n%s", logs.String()))
	require.NoError(t, direct.ConfigSet(ctx, "maxmemory", "0").Err())
	proxy.SetLatency(0)

	second := recv(t, ran, "the scheduler's next run; logs:\n%s", logs.String())
	require.NotEqual(t, first.ID, second)
}
