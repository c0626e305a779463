//go:build cluster

package clustertest_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
)

// TestClusterFailoverFlowsSchedulerDedup: CLUSTER FAILOVER of the master of
// a tagged prefix's slot while workers run flows whose parents wait in one
// queue for children in another, a job scheduler's runs and deduplicated
// adds, and producers keep adding all three. Afterwards every job added is
// completed, each ran once (the failover is a graceful one: no write is
// lost), each job of both queues sits in one state, every parent holds its
// children's results, no lock is left, and the scheduler runs on the new
// master.
func TestClusterFailoverFlowsSchedulerDedup(t *testing.T) {
	flowsThroughFailover(t, false)
}

// TestClusterMasterKilledFlowsSchedulerDedup: as
// TestClusterFailoverFlowsSchedulerDedup, with the master SIGKILLed
// instead, and restarted as a replica. Writes it had not replicated are
// lost, so a job may run again and an add reported done may be gone; what
// Redis holds must still be whole: each job in one state, parents and
// children agreeing, nothing stuck, the scheduler going on.
func TestClusterMasterKilledFlowsSchedulerDedup(t *testing.T) {
	flowsThroughFailover(t, true)
}

func flowsThroughFailover(t *testing.T, kill bool) {
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, true)
	master, err := c.MasterOf(ctx, keys.Slot(keys.New(prefix, "parents").Wait()))
	require.NoError(t, err)
	parents := newQueue(t, rdb, prefix, "parents")
	kids := newQueue(t, rdb, prefix, "kids")
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = parents.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)

	var runs testkit.Runs
	proc := func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.Queue().Name() + "/" + job.ID)
		time.Sleep(5 * time.Millisecond)
		return job.ID, nil
	}
	logs := newLogRecorder()
	wopts := &drover.WorkerOptions{Concurrency: 10, Logger: slog.New(logs), LockDuration: 10 * time.Second}
	startWorker(t, rdb, prefix, "parents", proc, wopts)
	startWorker(t, rdb, prefix, "kids", proc, wopts)

	var added sync.Map // "queue/id" of every job an add reported created
	load := testkit.NewLoad()
	load.Every(10*time.Millisecond, func(i int) {
		p := fmt.Sprintf("p%d", i)
		for {
			node, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "parents", Opts: &drover.JobOptions{JobID: p},
				Children: []drover.FlowJob{
					{Name: "kid", QueueName: "kids", Opts: &drover.JobOptions{JobID: p + "-a"}},
					{Name: "kid", QueueName: "kids", Opts: &drover.JobOptions{JobID: p + "-b", Delay: 20 * time.Millisecond}},
				}})
			if err != nil {
				time.Sleep(50 * time.Millisecond) // a custom id: a flow that landed comes back a duplicate
				continue
			}
			added.Store("parents/"+node.Job.ID, struct{}{})
			for _, c := range node.Children {
				added.Store("kids/"+c.Job.ID, struct{}{})
			}
			break
		}
	})
	load.Every(5*time.Millisecond, func(i int) {
		id := fmt.Sprintf("d%d", i)
		opts := &drover.JobOptions{JobID: id, Deduplication: &drover.Deduplication{ID: fmt.Sprintf("once%d", i/2)}}
		if i%2 == 1 {
			opts.Deduplication = &drover.Deduplication{ID: fmt.Sprintf("throttle%d", i/2), TTL: 20 * time.Millisecond}
		}
		r, err := kids.Add(ctx, "dedup", nil, opts)
		if err == nil && r.Outcome == drover.AddCreated {
			added.Store("kids/"+id, struct{}{})
		}
	})

	testkit.WaitFor(t, 30*time.Second, "flows under way", func() bool {
		n, err := parents.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return n[drover.StateCompleted] >= 50
	})
	if kill {
		newMaster, victim, err := c.KillMaster(ctx, master)
		require.NoError(t, err)
		t.Logf("killed %s; %s took over", master, newMaster)
		require.NoError(t, c.Restart(ctx, victim))
	} else {
		newMaster, err := c.Failover(ctx, master)
		require.NoError(t, err)
		t.Logf("CLUSTER FAILOVER: %s took over from %s", newMaster, master)
	}
	before := len(ticksOf(t, parents))
	time.Sleep(time.Second)
	// The scheduler goes on on the new master. A worker whose master was
	// killed first waits until its locks can be renewed, which can take
	// longer than the second above (no run in it, under load).
	testkit.WaitFor(t, 30*time.Second, "a scheduler run after the failover", func() bool {
		return len(ticksOf(t, parents)) > before
	})
	load.Stop()
	_, err = parents.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)

	for _, q := range []*drover.Queue{parents, kids} {
		testkit.WaitFor(t, 30*time.Second, "queue "+q.Name()+" drained", func() bool {
			n, err := q.GetJobCounts(ctx)
			require.NoError(t, err)
			return n[drover.StateWaiting]+n[drover.StateActive]+n[drover.StateDelayed]+n[drover.StatePrioritized]+n[drover.StateWaitingChildren] == 0
		})
	}
	ran := runs.Counts()
	ticks := 0
	for _, name := range []string{"parents", "kids"} {
		s, err := queuecheck.Read(ctx, rdb, prefix, name)
		require.NoError(t, err)
		v, err := s.Violations(ctx)
		require.NoError(t, err)
		require.Empty(t, v, "queue %s", name)
		require.Empty(t, s.In("failed"), "queue %s: no job failed", name)
		for _, id := range s.In("completed") {
			if !kill {
				require.Equal(t, 1, ran[name+"/"+id], "%s/%s ran once", name, id)
			}
			if strings.HasPrefix(id, "repeat:") {
				ticks++
			}
		}
		if name == "parents" {
			for _, id := range s.In("completed") {
				if strings.HasPrefix(id, "p") {
					vals, err := parents.Job(id).GetChildrenValues(ctx)
					require.NoError(t, err)
					require.Len(t, vals, 2, "parent %s has its children's results", id)
				}
			}
		}
	}
	n, lost := 0, 0
	added.Range(func(key, _ any) bool {
		n++
		name, id, _ := strings.Cut(key.(string), "/")
		st, err := newQueue(t, rdb, prefix, name).GetJobState(ctx, id)
		require.NoError(t, err)
		if kill && st == drover.StateUnknown {
			lost++ // acknowledged by the killed master, never replicated
			return true
		}
		require.Equal(t, drover.StateCompleted, st, "%s", key)
		return true
	})
	t.Logf("%d jobs added (%d lost with the killed master), %d scheduler runs completed; warnings: %v", n, lost, ticks, logs.byMessage())
	require.Greater(t, len(ticksOf(t, parents)), before, "the scheduler ran after the failover")
}

// ticksOf lists the scheduler runs of q that completed.
func ticksOf(t *testing.T, q *drover.Queue) []string {
	t.Helper()
	ids, err := q.GetJobIDs(context.Background(), []drover.JobState{drover.StateCompleted}, 0, -1, true)
	require.NoError(t, err)
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, "repeat:") {
			out = append(out, id)
		}
	}
	return out
}
