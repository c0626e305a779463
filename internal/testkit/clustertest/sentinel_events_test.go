//go:build cluster

package clustertest_test

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
	"github.com/seed40057009/drover/internal/testkit/clustertest"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// TestSentinelFailoverEventsScheduler: SENTINEL FAILOVER while, through one
// go-redis failover client, a worker with concurrency 8 processes, a
// QueueEvents listens, a producer adds and a job scheduler runs every
// 100 ms. Without a restart of any of them, afterwards: every job the
// producer added is completed, each job of the queue sits in one state
// with no lock left, the scheduler runs on the new master, the QueueEvents
// delivered a completed event for every completed job (it resumed on the
// new master), the worker is listed on the new master, and no warning
// repeats in a loop. Jobs whose completion the
// old master took after the promotion run again (at-least-once), and adds
// it took then are lost with it; the test reports how many.
func TestSentinelFailoverEventsScheduler(t *testing.T) {
	sentinelEventsScheduler(t, false)
}

// TestSentinelMasterKilledEventsScheduler: as
// TestSentinelFailoverEventsScheduler, with the master SIGKILLed instead
// (a crash): calls fail until the sentinels see it down (2 s) and elect
// the replica; the failover client then reconnects to it by itself. Adds
// the killed master took in its last second may not have reached the
// replica and are allowed lost; every other must end completed. The
// killed node is restarted and becomes the new master's replica.
func TestSentinelMasterKilledEventsScheduler(t *testing.T) {
	sentinelEventsScheduler(t, true)
}

func sentinelEventsScheduler(t *testing.T, kill bool) {
	ctx := context.Background()
	s := clustertest.SharedSentinel(t)
	rdb := s.NewFailoverClient(&redis.FailoverOptions{PoolSize: 32})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := clustertest.UniquePrefix()
	t.Cleanup(func() { redistest.DeletePrefix(context.Background(), rdb, prefix) })
	const name = "ev"
	q := newQueue(t, rdb, prefix, name)
	_, err := q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)

	var runs testkit.Runs
	logs := newLogRecorder()
	startWorker(t, rdb, prefix, name, func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.ID)
		time.Sleep(5 * time.Millisecond)
		return nil, nil
	}, &drover.WorkerOptions{Concurrency: 8, LockDuration: failoverLock, StalledInterval: failoverStalled, Logger: slog.New(logs)})

	evLogs := newLogRecorder()
	qe, err := drover.NewQueueEvents(rdb, name, &drover.QueueEventsOptions{
		Prefix: prefix, BlockTimeout: time.Second, LastEventID: "0", Logger: slog.New(evLogs),
	})
	require.NoError(t, err)
	completed := traffic.CountCompletions(t, qe)
	producer := traffic.Produce(t, q, "j", 10*time.Millisecond, 50*time.Millisecond)

	testkit.WaitFor(t, 30*time.Second, "processing under way", func() bool {
		n, err := q.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return n[drover.StateCompleted] >= 100
	})
	require.NoError(t, s.WaitReplicated(ctx))
	old, err := s.MasterAddr(ctx)
	require.NoError(t, err)
	start := time.Now()
	var newMaster string
	if kill {
		var killed *clustertest.Node
		newMaster, killed, err = s.KillMaster(ctx)
		require.NoError(t, err)
		t.Logf("killed %s; %s elected after %s", old, newMaster, time.Since(start).Round(time.Millisecond))
		require.NoError(t, killed.Restart())
		// An add the killed master acknowledged may not have reached the
		// replica: the lost window starts a second before the kill.
		start = start.Add(-time.Second)
	} else {
		newMaster, err = s.Failover(ctx)
		require.NoError(t, err)
	}
	_, port, _ := strings.Cut(newMaster, ":")
	testkit.WaitFor(t, 30*time.Second, "the failover client to use the new master", func() bool {
		inf, err := rdb.Info(ctx, "server").Result()
		return err == nil && strings.Contains(inf, "tcp_port:"+port+"\r\n")
	})
	switchedAt := time.Now()
	switched := switchedAt.Sub(start)
	// The worker names its connection on the new master, so it is listed
	// there (Node's getWorkers, the dashboard).
	testkit.WaitFor(t, 20*time.Second, "the worker listed on the new master", func() bool {
		ws, err := q.GetWorkers(ctx)
		return err == nil && len(ws) == 1
	})
	before := len(ticksOf(t, q))
	testkit.WaitFor(t, 30*time.Second, "a scheduler run after the failover", func() bool {
		return len(ticksOf(t, q)) > before
	})
	// The sentinels demote the old master (about 10 s); writes it took
	// after the promotion are then gone. Load goes on meanwhile.
	require.NoError(t, s.WaitSettled(ctx))
	producer.Stop()
	_, err = q.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)

	testkit.WaitFor(t, 30*time.Second, "the queue drained", func() bool {
		n, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		return n[drover.StateWaiting]+n[drover.StateActive]+n[drover.StateDelayed]+n[drover.StatePrioritized] == 0
	})
	st, err := queuecheck.Read(ctx, rdb, prefix, name)
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Empty(t, st.In("failed"), "no job failed")

	// An add the old master took between the promotion and the client's
	// switch is lost when the old master is demoted (asynchronous
	// replication), and one a killed master took before the kill that the
	// replica had not received: allowed in that window only.
	added, lost := producer.Added(), 0
	for _, a := range added {
		state, err := q.GetJobState(ctx, a.ID)
		require.NoError(t, err)
		if state == drover.StateUnknown && !a.At.Before(start) && !a.At.After(switchedAt) {
			lost++
			continue
		}
		require.Equal(t, drover.StateCompleted, state, "job %s", a.ID)
	}
	done := st.In("completed")
	testkit.WaitFor(t, 15*time.Second, "a completed event for every completed job", func() bool {
		return len(completed.Missing(done)) == 0
	})
	ran, reruns := runs.Counts(), 0
	for _, id := range done {
		if ran[id] > 1 {
			reruns++
		}
	}
	t.Logf("kill=%v: %s -> %s, client switched after %s; %d jobs added (%d add errors, retried), %d completed, "+
		"%d ran more than once, %d adds lost with the old master's writes; worker warnings %v; events warnings %v",
		kill, old, newMaster, switched.Round(time.Millisecond), len(added), len(producer.Errors()), len(done), reruns, lost, logs.byMessage(), evLogs.byMessage())
	for msg, count := range logs.byMessage() {
		require.LessOrEqual(t, count, 20, "worker warning %q repeated", msg)
	}
	for msg, count := range evLogs.byMessage() {
		require.LessOrEqual(t, count, 2, "QueueEvents warning %q repeated", msg)
	}
}
