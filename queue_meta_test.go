package drover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestRemoveOrphanedJobs: what drover's RemoveOrphanedJobs keeps and
// removes beyond the cases Node shares
// (internal/interoptest/queue_meta_test.go): a job in any state set
// (legacy paused list and stalled set included) stays, keys under the
// queue that are not jobs are never candidates, limit is never exceeded,
// and bad input changes nothing.
func TestRemoveOrphanedJobs(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	key := func(s string) string { return b.prefix + ":q:" + s }
	keys := func() []string {
		k, err := b.rdb.Keys(ctx, b.prefix+":*").Result()
		require.NoError(t, err)
		return k
	}
	hash := func(id string) {
		require.NoError(t, b.rdb.HSet(ctx, key(id), "name", id, "data", "{}").Err())
	}

	// Held by a state only drover's script looks at besides Node's.
	hash("legacyPaused")
	require.NoError(t, b.rdb.RPush(ctx, key("paused"), "legacyPaused").Err())
	hash("suspect")
	require.NoError(t, b.rdb.SAdd(ctx, key("stalled"), "suspect").Err())
	// Keys under the queue that are not jobs, whatever their suffix.
	for _, k := range []string{"dn:logs", "de:lock", "marker:w1", "metrics:completed", "repeat:s:1700000000000", "drover:x", "priority", "1:unknown"} {
		require.NoError(t, b.rdb.Set(ctx, key(k), "v", 0).Err())
	}
	for _, id := range []string{"o1", "o2", "o3", "o4", "o5"} {
		hash(id)
	}
	require.NoError(t, b.rdb.RPush(ctx, key("o5:logs"), "line").Err())
	res, err := b.queue.Add(ctx, "live", nil, nil)
	require.NoError(t, err)

	before := keys()
	for _, bad := range [][2]int{{-1, 0}, {0, -5}} {
		_, err := b.queue.RemoveOrphanedJobs(ctx, bad[0], bad[1])
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	}
	require.ElementsMatch(t, before, keys(), "bad input leaves Redis alone")

	n, err := b.queue.RemoveOrphanedJobs(ctx, 0, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n, "limit 2 of 5 orphans")
	n, err = b.queue.RemoveOrphanedJobs(ctx, 1, 0)
	require.NoError(t, err)
	require.Equal(t, 3, n, "the other 3, one key per SCAN step")
	for _, id := range []string{"o1", "o2", "o3", "o4", "o5", "o5:logs"} {
		require.Zero(t, b.rdb.Exists(ctx, key(id)).Val(), id)
	}
	for _, k := range []string{"legacyPaused", "suspect", res.Job.ID, "dn:logs", "de:lock", "marker:w1", "metrics:completed", "repeat:s:1700000000000", "drover:x", "priority", "1:unknown"} {
		require.EqualValues(t, 1, b.rdb.Exists(ctx, key(k)).Val(), k)
	}
	n, err = b.queue.RemoveOrphanedJobs(ctx, 0, 0)
	require.NoError(t, err)
	require.Zero(t, n)

	require.NoError(t, b.queue.Close())
	_, err = b.queue.RemoveOrphanedJobs(ctx, 0, 0)
	require.ErrorIs(t, err, drover.ErrClosed)
}

// TestRemoveOrphanedJobsWhileBusy: jobs added, taken, run and finished
// while RemoveOrphanedJobs scans again and again are never taken for
// orphans: each is checked inside one script, where it is in some state.
func TestRemoveOrphanedJobsWhileBusy(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	const jobs = 300
	b.startWorker(t, func(context.Context, *drover.Job) (any, error) { return "ok", nil }, &drover.WorkerOptions{Concurrency: 4})

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by this test: it waits for it below
		defer wg.Done()
		for i := range jobs {
			opts := &drover.JobOptions{}
			if i%3 == 0 {
				opts.Priority = 1 + i%5
			}
			if _, err := b.queue.Add(ctx, "j", map[string]int{"i": i}, opts); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	passes := 0
	for busy := true; busy; passes++ {
		select {
		case <-done:
			busy = false
		default:
		}
		n, err := b.queue.RemoveOrphanedJobs(ctx, 5, 0)
		require.NoError(t, err)
		require.Zero(t, n, "pass %d removed a live job", passes)
	}
	testkit.WaitFor(t, 10*time.Second, "every job completed", func() bool {
		c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return c[drover.StateCompleted] == jobs
	})
	n, err := b.queue.RemoveOrphanedJobs(ctx, 5, 0)
	require.NoError(t, err)
	require.Zero(t, n)
	t.Logf("%d passes while busy", passes)
}

// TestQueueMetaRefusals: bad label names refuse before touching Redis, a
// meta value no BullMQ writes is an error naming it, and a closed queue
// answers ErrClosed.
func TestQueueMetaRefusals(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	for _, name := range []string{"", "1abc", "a-b", "queue", "state", "__name__", "é"} {
		_, err := b.queue.ExportPrometheusMetrics(ctx, map[string]string{name: "v"})
		require.ErrorIs(t, err, drover.ErrInvalidOption, "%q", name)
	}
	text, err := b.queue.ExportPrometheusMetrics(ctx, map[string]string{"b": "2", "a": "1", "_c": "3"})
	require.NoError(t, err)
	require.Contains(t, text, `bullmq_job_count{queue="q", state="active", _c="3", a="1", b="2"} 0`)

	meta := b.prefix + ":q:meta"
	require.NoError(t, b.rdb.HSet(ctx, meta, "concurrency", "lots").Err())
	_, err = b.queue.IsMaxed(ctx)
	require.ErrorContains(t, err, `concurrency is "lots"`)
	_, err = b.queue.GetMeta(ctx)
	require.ErrorContains(t, err, `concurrency is "lots"`)
	require.NoError(t, b.rdb.HSet(ctx, meta, "concurrency", "", "opts.maxLenEvents", "1e3").Err())
	maxed, err := b.queue.IsMaxed(ctx)
	require.NoError(t, err)
	require.False(t, maxed, "an empty cap is no cap")
	_, err = b.queue.GetMeta(ctx)
	require.ErrorContains(t, err, `opts.maxLenEvents is "1e3"`)
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":q:metrics:failed", "count", "x").Err())
	_, err = b.queue.ExportPrometheusMetrics(ctx, nil)
	require.ErrorContains(t, err, `metrics:failed is "x"`)

	var zero drover.Job
	vals, err := zero.GetFailedChildrenValues(ctx)
	require.NoError(t, err)
	require.Empty(t, vals)

	require.NoError(t, b.queue.Close())
	_, err = b.queue.GetMeta(ctx)
	require.ErrorIs(t, err, drover.ErrClosed)
	_, err = b.queue.GetVersion(ctx)
	require.ErrorIs(t, err, drover.ErrClosed)
	_, err = b.queue.IsMaxed(ctx)
	require.ErrorIs(t, err, drover.ErrClosed)
	_, err = b.queue.ExportPrometheusMetrics(ctx, nil)
	require.ErrorIs(t, err, drover.ErrClosed)
}
