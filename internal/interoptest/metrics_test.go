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
