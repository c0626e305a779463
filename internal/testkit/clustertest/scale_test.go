//go:build cluster

package clustertest_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

// spreadQueues names n queues "q{tag}" under prefix whose tags hash to slots
// of different masters, round robin over the masters, and checks with
// CLUSTER SHARDS and CLUSTER KEYSLOT that they really do. It returns the
// queue names and, for each, its master.
func spreadQueues(t testing.TB, c *clustertest.Cluster, rdb *redis.ClusterClient, prefix string, n int) ([]string, []string) {
	t.Helper()
	ctx := context.Background()
	shards, tags, err := c.TagsByMaster(ctx, prefix+"-", (n+2)/3)
	require.NoError(t, err)
	require.Len(t, shards, 3)
	names := make([]string, n)
	masters := make([]string, n)
	for i := range n {
		names[i] = "q{" + tags[i%len(shards)][i/len(shards)] + "}"
		key := keys.New(prefix, names[i]).Wait()
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		require.EqualValues(t, keys.Slot(key), slot)
		masters[i], err = c.MasterOf(ctx, int(slot))
		require.NoError(t, err)
		require.Equal(t, shards[i%len(shards)].Master, masters[i])
	}
	return names, masters
}

// TestClusterHundredThousandJobs: 8 queues spread over the 3 masters, 4 worker
// processes (this test binary re-executed) working all 8 queues with
// concurrency 50 per queue, 100,000 jobs added in bulk while they run. Every
// job must end completed exactly once, and no worker may log CROSSSLOT.
func TestClusterHundredThousandJobs(t *testing.T) {
	const (
		queues    = 8
		processes = 4
		perQueue  = 12_500
		total     = queues * perQueue
		chunk     = 2_500
	)
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	names, masters := spreadQueues(t, c, rdb, prefix, queues)
	perMaster := map[string]int{}
	for _, m := range masters {
		perMaster[m]++
	}
	t.Logf("queues per master: %v", perMaster)
	require.Len(t, perMaster, 3, "the queues must spread over all 3 masters")

	qs := make([]*drover.Queue, queues)
	for i, name := range names {
		qs[i] = newQueue(t, rdb, prefix, name)
	}

	children := make([]*child, processes)
	var wg sync.WaitGroup
	for i := range children {
		wg.Go(func() {
			children[i] = startChild(t, roleWork, childSpec{Seeds: c.Addrs(), Prefix: prefix, Queues: names, Concurrency: 50})
		})
	}
	wg.Wait()

	start := time.Now()
	addErrs := make([]error, queues)
	for qi, q := range qs {
		wg.Go(func() {
			for from := 0; from < perQueue && addErrs[qi] == nil; from += chunk {
				jobs := make([]drover.BulkJob, chunk)
				for i := range jobs {
					jobs[i] = drover.BulkJob{Name: "n", Data: map[string]int{"i": from + i}}
				}
				addErrs[qi] = addBulkThroughFailovers(ctx, t, c, q, jobs)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(addErrs...))
	added := time.Since(start)

	var done int64
	deadline := time.Now().Add(4 * time.Minute)
	for {
		done = 0
		for _, q := range qs {
			n, err := q.GetJobCounts(ctx, drover.StateCompleted)
			require.NoError(t, err)
			done += n[drover.StateCompleted]
		}
		if done >= total || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	require.EqualValues(t, total, done, "completed jobs after %s", took)
	t.Logf("%d jobs on %d queues over 3 masters, %d worker processes: added in %s, all completed in %s (%.0f jobs/s)",
		total, queues, processes, added.Round(time.Millisecond), took.Round(time.Millisecond), float64(total)/took.Seconds())

	// Every process reports what it completed; the sums must match Redis
	// exactly: no job lost, none run twice.
	byQueue := map[string]int64{}
	logLines := 0
	matches := map[string]int{}
	for _, ch := range children {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		rep, err := ch.stop(sctx)
		cancel()
		require.NoError(t, err)
		var n int64
		for q, v := range rep.Completed {
			byQueue[q] += v
			n += v
		}
		lines, m := ch.logStats()
		logLines += lines
		for k, v := range m {
			matches[k] += v
		}
		t.Logf("worker process %d completed %d jobs, %d stalled recoveries, %d log lines", ch.pid, n, rep.Stalled, lines)
	}
	t.Logf("worker log lines: %d; watched errors: %v", logLines, matches)
	require.Zero(t, matches["CROSSSLOT"], "no worker may log CROSSSLOT")
	for i, q := range qs {
		require.EqualValues(t, perQueue, byQueue[q.Name()], "completions reported for queue %s", q.Name())
		counts, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		want := map[drover.JobState]int64{drover.StateCompleted: perQueue}
		for _, s := range drover.DefaultCountStates {
			if s != drover.StateCompleted {
				want[s] = 0
			}
		}
		require.Equal(t, want, counts, "queue %s", q.Name())
		last, err := rdb.Get(ctx, keys.New(prefix, names[i]).ID()).Int()
		require.NoError(t, err)
		require.Equal(t, perQueue, last, "queue %s id counter: every created job is among the completed", q.Name())
	}
	require.ElementsMatch(t, names, slices.Collect(maps.Keys(byQueue)))
}

// addBulkThroughFailovers adds jobs as a careful producer would while the
// cluster may fail over: on a 2-core machine shared with other work a node can
// be starved past NodeTimeout, its replica takes over and the cluster answers
// CLUSTERDOWN for a moment. The jobs an AddBulkError reports stored are not
// sent again, and the rest is resent once the cluster is healthy; a job whose
// fate is unknown (reply lost) ends the test, since resending it could store
// it twice and this test counts every job exactly once.
func addBulkThroughFailovers(ctx context.Context, t *testing.T, c *clustertest.Cluster, q *drover.Queue, jobs []drover.BulkJob) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := q.AddBulk(ctx, jobs)
		var be *drover.AddBulkError
		if err == nil || !errors.As(err, &be) || be.Unknown > 0 || !strings.HasPrefix(be.Err.Error(), "CLUSTERDOWN") || time.Now().After(deadline) {
			return err
		}
		t.Logf("cluster failed over during the adds (%v); resending the %d jobs not stored", err, len(jobs)-len(be.Results))
		jobs = jobs[len(be.Results):]
		if err := c.WaitHealthy(ctx); err != nil {
			return err
		}
	}
}
