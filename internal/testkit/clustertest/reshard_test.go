//go:build cluster

package clustertest_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

// TestClusterReshardUnderLoad migrates the slots of two busy queues to
// another master and back with `redis-cli --cluster reshard` while
// producers add and workers process (MOVED and ASK redirections, TRYAGAIN
// while a queue's slot is half moved), on a cluster of its own. Every add a
// producer saw succeed becomes exactly one job, every job completes, and
// the admin and read calls keep answering after the moves.
func TestClusterReshardUnderLoad(t *testing.T) {
	ctx := context.Background()
	c, err := clustertest.StartCluster(ctx, 3, 0)
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	rdb := c.NewClient(&redis.ClusterOptions{PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })

	shards, err := c.Shards(ctx)
	require.NoError(t, err)
	// The reshard moves the lowest slots of the source: pick queues there.
	const moved = 300
	var src, dst clustertest.Shard
	for _, s := range shards {
		if s.Serves(0) {
			src = s
		} else if dst.Master == "" {
			dst = s
		}
	}
	require.NotEmpty(t, src.Master)
	var names []string
	for n := 0; len(names) < 2; n++ {
		tag := "r" + strconv.Itoa(n)
		if keys.Slot("{"+tag+"}") < moved {
			names = append(names, "{"+tag+"}")
		}
	}
	nodeID := func(addr string) string {
		cl := c.Node(addr).Client()
		defer cl.Close()
		myid, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		require.NoError(t, err)
		return myid
	}
	srcID, dstID := nodeID(src.Master), nodeID(dst.Master)

	const prefix = "rs"
	const seeded = 3000
	var (
		runs      sync.Map // job key -> *atomic.Int64
		completed atomic.Int64
	)
	queues := make([]*drover.Queue, len(names))
	for i, name := range names {
		queues[i] = newQueue(t, rdb, prefix, name)
		jobs := make([]drover.BulkJob, seeded)
		_, err := queues[i].AddBulk(ctx, jobs)
		require.NoError(t, err)
		for range 2 {
			startWorker(t, rdb, prefix, name, func(ctx context.Context, job *drover.Job) (any, error) {
				n, _ := runs.LoadOrStore(name+"/"+job.ID, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				time.Sleep(5 * time.Millisecond)
				return nil, nil
			}, &drover.WorkerOptions{Concurrency: 8, LockDuration: 5 * time.Second, StalledInterval: 2 * time.Second,
				MaxStalledCount: 100, Hooks: &drover.WorkerHooks{JobFinished: func(*drover.Job, drover.Outcome, time.Duration, error) {
					completed.Add(1)
				}}})
		}
	}

	// Producers: each add is retried while Redis answers with an error
	// (TRYAGAIN, a Redis reply: nothing was stored); a lost reply leaves
	// the add in doubt and is not retried.
	var (
		confirmed, doubtful, retried atomic.Int64
		stop                         = make(chan struct{})
		wg                           sync.WaitGroup
	)
	for _, q := range queues {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for {
					actx, cancel := context.WithTimeout(ctx, 30*time.Second)
					_, err := q.Add(actx, "live", nil, nil)
					cancel()
					if err == nil {
						confirmed.Add(1)
						break
					}
					var reply redis.Error
					if !errors.As(err, &reply) {
						doubtful.Add(1)
						break
					}
					retried.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}

	reshard := func(from, to string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, "redis-cli", "--cluster", "reshard", src.Master,
			"--cluster-from", from, "--cluster-to", to, "--cluster-slots", strconv.Itoa(moved),
			"--cluster-yes", "--cluster-pipeline", "10").CombinedOutput()
		require.NoError(t, err, "redis-cli --cluster reshard:\n%s", tailOf(string(out)))
		require.NoError(t, c.WaitHealthy(ctx))
	}
	slot := keys.Slot(names[0])
	before, err := c.MasterOf(ctx, slot)
	require.NoError(t, err)
	reshard(srcID, dstID)
	after, err := c.MasterOf(ctx, slot)
	require.NoError(t, err)
	require.NotEqual(t, before, after, "the queue's slot moved")
	// Reads and admin calls follow the move.
	for _, q := range queues {
		_, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		_, err = q.GetJobs(ctx, []drover.JobState{drover.StateCompleted}, 0, 10, false)
		require.NoError(t, err)
	}
	reshard(dstID, srcID) // and back, still under load
	reshard(srcID, dstID) // and once more each way
	reshard(dstID, srcID)
	close(stop)
	wg.Wait()

	total := int64(len(names)*seeded) + confirmed.Load()
	t.Logf("adds: %d seeded + %d live confirmed, %d in doubt, %d retried after an error reply", len(names)*seeded,
		confirmed.Load(), doubtful.Load(), retried.Load())
	require.Zero(t, doubtful.Load(), "no add left in doubt")
	var jobs int64
	for _, q := range queues {
		waitCounts(t, q, 2*time.Minute, map[drover.JobState]int64{drover.StateWaiting: 0, drover.StateActive: 0, drover.StateDelayed: 0})
		counts, err := q.GetJobCounts(ctx, drover.StateCompleted, drover.StateFailed)
		require.NoError(t, err)
		require.Zero(t, counts[drover.StateFailed], "queue %s", q.Name())
		jobs += counts[drover.StateCompleted]
	}
	require.Equal(t, total, jobs, "jobs == adds: none lost, none duplicated")
	var reruns int64
	runs.Range(func(_, v any) bool {
		reruns += v.(*atomic.Int64).Load() - 1
		return true
	})
	t.Logf("jobs %d, completions written %d, re-runs %d (a lock that expired while its slot moved)", jobs, completed.Load(), reruns)
}

func tailOf(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}
