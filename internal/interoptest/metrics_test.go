package interoptest_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropMetrics: workers with the metrics option, Node's or drover's,
// write the same per-minute metrics, and each side's getMetrics reads
// them. The metrics hashes are seeded with a last data point three minutes
// back, so the finishes close minutes and push data points.
func TestInteropMetrics(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	run := func(t *testing.T, b *bundle, by impl) {
		t.Helper()
		prevTS := (time.Now().UnixMilli()/60000 - 3) * 60000
		for _, kind := range []string{"completed", "failed"} {
			require.NoError(t, b.rdb.HSet(ctx, b.prefix+":"+queueName+":metrics:"+kind,
				"count", 7, "prevTS", strconv.FormatInt(prevTS, 10), "prevCount", 4).Err())
		}
		for i := range 5 {
			data := map[string]any{"i": i}
			if i%2 == 1 {
				data["behavior"] = bullmqoracle.Fail("boom")
			}
			b.add(t, nodeImpl, jobSpec{name: "m", data: data})
		}
		if by == nodeImpl {
			id := fmt.Sprintf("%s-metrics", b.prefix)
			require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
				ID: id, Name: workerName, Behavior: bullmqoracle.FromData("behavior"), Extra: map[string]any{"metrics": map[string]any{"maxDataPoints": 10}},
			}))
			t.Cleanup(func() { _ = b.oracle.StopWorker(ctx, id, false) })
		} else {
			w, err := drover.NewWorker(b.rdb, queueName, droverBehavior(bullmqoracle.FromData("behavior"), b.rdb),
				&drover.WorkerOptions{Prefix: b.prefix, Name: workerName, Metrics: &drover.MetricsOptions{MaxDataPoints: 10}})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() { _ = w.Close(ctx) })
		}
		testkit.WaitFor(t, waitLong, "5 jobs finished", func() bool {
			c, _ := b.dq.GetJobCounts(ctx, drover.StateCompleted, drover.StateFailed)
			return c[drover.StateCompleted]+c[drover.StateFailed] == 5
		})
	}

	for _, by := range []impl{nodeImpl, droverImpl} {
		t.Run("WorkerBy"+string(by), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			run(t, b, by)
			for kind, n := range map[string]int64{"completed": 3, "failed": 2} {
				nm, err := b.oracle.GetMetrics(ctx, b.prefix, queueName, kind, 0, -1)
				require.NoError(t, err)
				dm, err := b.dq.GetMetrics(ctx, kind, 0, -1)
				require.NoError(t, err)
				require.Equal(t, 7+n, nm.Meta.Count, kind)
				require.Equal(t, nm.Meta.Count, dm.Count)
				require.Equal(t, nm.Meta.PrevCount, dm.PrevCount)
				require.Equal(t, nm.Meta.PrevTS, dm.PrevTS.UnixMilli())
				require.Equal(t, nm.Data, dm.Data)
				require.Equal(t, nm.Count, dm.Points)
				// The first finish closed the seeded minute (7-4 jobs) and
				// the two empty ones after it.
				require.Equal(t, []int64{0, 0, 3}, dm.Data, kind)
				require.EqualValues(t, 7, dm.PrevCount, kind)
			}
		})
	}
}

// TestDifferentialMetrics runs the same jobs through a Node worker and a
// drover worker, each with the metrics option, on the same starting
// metrics, and compares the metrics keys they leave: the hashes' count
// and prevCount, prevTS's minute, and the data lists. The cases cover a
// queue with no metrics yet (the first finish only starts the minute),
// one whose last data point is 3 minutes back (zeros fill the gap), and
// one 30 minutes back with 10 data points kept (the gap is cut at 10 and
// the list trimmed), with completions and failures, retried attempts
// (counted once, when they fail for good) and a job removed as it fails
// (counted).
func TestDifferentialMetrics(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	type metricsKeys struct {
		Hash      map[string]map[string]string // kind -> fields, prevTS as its minute
		Data      map[string][]string
		PrevTSMin map[string]int64
	}
	// run seeds the metrics (minutesBack 0 = none), adds the jobs, lets a
	// worker of by finish them and reads the keys back. It reports false
	// when a minute ended while it ran: the two sides would then see
	// different minutes, a difference of timing, not of implementation.
	run := func(t *testing.T, b *bundle, by impl, minutesBack int, keep int) (metricsKeys, bool) {
		t.Helper()
		startMin := time.Now().UnixMilli() / 60000
		if minutesBack > 0 {
			prevTS := (startMin - int64(minutesBack)) * 60000
			for i, kind := range []string{"completed", "failed"} {
				require.NoError(t, b.rdb.HSet(ctx, b.prefix+":"+queueName+":metrics:"+kind,
					"count", 20+i, "prevTS", strconv.FormatInt(prevTS, 10), "prevCount", 11+i).Err())
				for p := range 12 {
					require.NoError(t, b.rdb.RPush(ctx, b.prefix+":"+queueName+":metrics:"+kind+":data", 100+p).Err())
				}
			}
		}
		specs := []jobSpec{
			{name: "ok", data: map[string]any{"i": 0}},
			{name: "fail", data: map[string]any{"behavior": bullmqoracle.Fail("boom")}},
			{name: "retried", data: map[string]any{"behavior": bullmqoracle.Fail("again")}, attempts: 2},
			{name: "removed", data: map[string]any{"behavior": bullmqoracle.Fail("gone")}, removeOnFail: true},
			{name: "ok", data: map[string]any{"i": 4}},
		}
		for _, s := range specs {
			b.add(t, nodeImpl, s)
		}
		if by == nodeImpl {
			id := fmt.Sprintf("%s-metrics", b.prefix)
			require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
				ID: id, Name: workerName, Concurrency: 1, Behavior: bullmqoracle.FromData("behavior"),
				Extra: map[string]any{"metrics": map[string]any{"maxDataPoints": keep}},
			}))
			defer func() { _ = b.oracle.StopWorker(ctx, id, false) }()
		} else {
			w, err := drover.NewWorker(b.rdb, queueName, droverBehavior(bullmqoracle.FromData("behavior"), b.rdb),
				&drover.WorkerOptions{Prefix: b.prefix, Name: workerName, Concurrency: 1, Metrics: &drover.MetricsOptions{MaxDataPoints: keep}})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			defer func() { _ = w.Close(ctx) }()
		}
		testkit.WaitFor(t, waitLong, "jobs finished", func() bool {
			c, _ := b.dq.GetJobCounts(ctx, drover.StateCompleted, drover.StateFailed)
			return c[drover.StateCompleted]+c[drover.StateFailed] == 4 // one removed when it failed
		})
		testkit.WaitFor(t, waitLong, "all counted", func() bool {
			c, _ := b.rdb.HGet(ctx, b.prefix+":"+queueName+":metrics:completed", "count").Int()
			f, _ := b.rdb.HGet(ctx, b.prefix+":"+queueName+":metrics:failed", "count").Int()
			base := 0
			if minutesBack > 0 {
				base = 41
			}
			return c+f == base+5
		})
		got := metricsKeys{Hash: map[string]map[string]string{}, Data: map[string][]string{}, PrevTSMin: map[string]int64{}}
		for _, kind := range []string{"completed", "failed"} {
			h, err := b.rdb.HGetAll(ctx, b.prefix+":"+queueName+":metrics:"+kind).Result()
			require.NoError(t, err)
			ts, err := strconv.ParseInt(h["prevTS"], 10, 64)
			require.NoError(t, err, "prevTS %q", h["prevTS"])
			got.PrevTSMin[kind] = ts/60000 - startMin
			delete(h, "prevTS")
			got.Hash[kind] = h
			got.Data[kind], err = b.rdb.LRange(ctx, b.prefix+":"+queueName+":metrics:"+kind+":data", 0, -1).Result()
			require.NoError(t, err)
		}
		return got, time.Now().UnixMilli()/60000 == startMin
	}

	for _, c := range []struct {
		name        string
		minutesBack int
		keep        int
	}{{"NoMetricsYet", 0, 10}, {"ThreeMinutesBack", 3, 10}, {"GapLongerThanKept", 30, 10}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var node, dro metricsKeys
			for try := 1; ; try++ {
				b := setup(t)
				var ok1, ok2 bool
				node, ok1 = run(t, b, nodeImpl, c.minutesBack, c.keep)
				dro, ok2 = run(t, b.sibling(t), droverImpl, c.minutesBack, c.keep)
				if ok1 && ok2 && node.PrevTSMin["completed"] == dro.PrevTSMin["completed"] {
					break
				}
				require.Less(t, try, 3, "a minute ended during every run")
				t.Logf("a minute ended during run %d: again", try)
			}
			require.Equal(t, node, dro)
			t.Logf("%s: %+v", c.name, node)
		})
	}
}
