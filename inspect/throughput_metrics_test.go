package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestThroughputFromMetrics: with BullMQ's metrics lists written (a worker
// with Metrics), Throughput reads them and says so; the buckets follow
// BullMQ's layout (the list's first point is the minute before prevTS's).
func TestThroughputFromMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "bad" {
			return nil, errors.New("no")
		}
		return nil, nil
	}, &drover.WorkerOptions{Metrics: &drover.MetricsOptions{MaxDataPoints: 120}})
	var ids []string
	for range 5 {
		ids = append(ids, b.add(t, "q", "good", nil))
	}
	for range 3 {
		ids = append(ids, b.add(t, "q", "bad", &drover.JobOptions{Attempts: 1}))
	}
	for k, id := range ids {
		b.waitState(t, "q", id, map[bool]drover.JobState{true: drover.StateCompleted, false: drover.StateFailed}[k < 5])
	}
	// A finished job the metrics did not count (its worker had no Metrics):
	// the finished sets would count it, the metrics do not.
	k := b.prefix + ":q:"
	require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(float64(time.Now().UnixMilli()), "uncounted")).Err())
	rep, err := b.ins.Throughput(ctx, "q", time.Hour, time.Minute)
	require.NoError(t, err)
	require.Equal(t, inspect.ThroughputFromMetrics, rep.Source)
	var done, failed int64
	for _, bk := range rep.Buckets {
		done += bk.Completed
		failed += bk.Failed
	}
	require.EqualValues(t, 5, done)
	require.EqualValues(t, 3, failed)

	// The layout, written by hand: 3 jobs in prevTS's minute, then 4, 0
	// and 2 in the three minutes before.
	b.add(t, "m", "x", nil)
	now := time.Now()
	prev := now.Truncate(time.Minute)
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":m:metrics:completed", "count", 10, "prevCount", 7, "prevTS", prev.UnixMilli()+1).Err())
	require.NoError(t, b.rdb.RPush(ctx, b.prefix+":m:metrics:completed:data", 4, 0, 2).Err())
	rep, err = b.ins.Throughput(ctx, "m", time.Hour, time.Minute)
	require.NoError(t, err)
	require.Equal(t, inspect.ThroughputFromMetrics, rep.Source)
	byMinute := map[time.Time]int64{}
	for _, bk := range rep.Buckets {
		byMinute[bk.Start.Time] = bk.Completed
		require.Zero(t, bk.Failed)
	}
	require.EqualValues(t, 3, byMinute[prev])
	require.EqualValues(t, 4, byMinute[prev.Add(-time.Minute)])
	require.EqualValues(t, 0, byMinute[prev.Add(-2*time.Minute)])
	require.EqualValues(t, 2, byMinute[prev.Add(-3*time.Minute)])

	// No metrics: the finished sets, as before.
	b.add(t, "plain", "x", nil)
	rep, err = b.ins.Throughput(ctx, "plain", time.Hour, time.Minute)
	require.NoError(t, err)
	require.Equal(t, inspect.ThroughputFromFinishedSets, rep.Source)
}
