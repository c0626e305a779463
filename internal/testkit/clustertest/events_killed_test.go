//go:build cluster

package clustertest_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// TestClusterMasterKilledQueueEvents: a QueueEvents and a worker follow a
// queue whose master is SIGKILLed while a producer adds; the cluster
// elects its replica. Through the same client, without a restart, the
// QueueEvents must go on from its last event on the new master: it
// delivers the completed event of every job added after the election and
// of every job the new master holds completed, none repeated (but for a
// job whose completion the dead master had not replicated, which runs
// again: twice then), and it warns once for the outage, not in a loop; the
// worker is listed again (its named connection reopened on the new
// master).
func TestClusterMasterKilledQueueEvents(t *testing.T) {
	queueEventsThroughFailover(t, true)
}

// TestClusterFailoverQueueEvents: as TestClusterMasterKilledQueueEvents,
// with CLUSTER FAILOVER (graceful: no write lost) instead of the crash:
// every completed event is delivered exactly once.
func TestClusterFailoverQueueEvents(t *testing.T) {
	queueEventsThroughFailover(t, false)
}

func queueEventsThroughFailover(t *testing.T, kill bool) {
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, true)
	name := "ev"
	master, err := c.MasterOf(ctx, keys.Slot(keys.New(prefix, name).Wait()))
	require.NoError(t, err)
	q := newQueue(t, rdb, prefix, name)
	logs := newLogRecorder()
	startWorker(t, rdb, prefix, name, func(context.Context, *drover.Job) (any, error) { return nil, nil },
		&drover.WorkerOptions{Concurrency: 4, Logger: slog.New(logs)})

	evLogs := newLogRecorder()
	qe, err := drover.NewQueueEvents(rdb, name, &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", BlockTimeout: time.Second, Logger: slog.New(evLogs),
	})
	require.NoError(t, err)
	completed := traffic.CountCompletions(t, qe)
	seen := completed.Of

	add := func(id string) {
		t.Helper()
		testkit.WaitFor(t, 30*time.Second, "add "+id, func() bool {
			_, err := q.Add(ctx, "job", nil, &drover.JobOptions{JobID: id})
			return err == nil
		})
	}
	for i := range 20 {
		add(fmt.Sprintf("before-%d", i))
	}
	testkit.WaitFor(t, 20*time.Second, "the events of the jobs before the kill", func() bool {
		for i := range 20 {
			if seen(fmt.Sprintf("before-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	require.NoError(t, c.WaitReplicated(ctx))

	// A producer keeps adding through the failover.
	producer := traffic.Produce(t, q, "during-", 5*time.Millisecond, 50*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	var killed *clustertest.Node
	if kill {
		var newMaster string
		newMaster, killed, err = c.KillMaster(ctx, master)
		require.NoError(t, err)
		t.Logf("killed %s; %s elected", master, newMaster)
	} else {
		newMaster, err := c.Failover(ctx, master)
		require.NoError(t, err)
		t.Logf("CLUSTER FAILOVER: %s took over from %s", newMaster, master)
	}
	for i := range 20 {
		add(fmt.Sprintf("after-%d", i))
	}
	testkit.WaitFor(t, 30*time.Second, "the events of the jobs added after the election", func() bool {
		for i := range 20 {
			if seen(fmt.Sprintf("after-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	producer.Stop()
	// Every job the new master holds completed has its event delivered.
	testkit.WaitFor(t, 30*time.Second, "a completed event for every completed job", func() bool {
		ids, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
		require.NoError(t, err)
		n, err := q.GetJobCounts(ctx, drover.StateWaiting, drover.StateActive)
		require.NoError(t, err)
		if n[drover.StateWaiting]+n[drover.StateActive] > 0 {
			return false
		}
		for _, id := range ids {
			if seen(id) == 0 {
				return false
			}
		}
		return true
	})
	// The worker names its connection on the new master again, so it is
	// listed (Node's getWorkers, the dashboard).
	testkit.WaitFor(t, 20*time.Second, "the worker listed on the new master", func() bool {
		ws, err := q.GetWorkers(ctx)
		return err == nil && len(ws) == 1
	})
	if killed != nil {
		require.NoError(t, c.Restart(ctx, killed))
	}
	time.Sleep(2 * time.Second) // room for a repeated event to arrive
	for id, n := range completed.Counts() {
		if kill {
			require.LessOrEqual(t, n, 2, "completed event of %s delivered once, or twice for a rerun", id)
		} else {
			require.Equal(t, 1, n, "completed event of %s delivered once", id)
		}
	}
	t.Logf("QueueEvents warnings %v; worker warnings %v", evLogs.byMessage(), logs.byMessage())
	for msg, n := range evLogs.byMessage() {
		require.LessOrEqual(t, n, 2, "QueueEvents warning %q repeated", msg)
	}
}
