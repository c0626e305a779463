package inspect_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestInspectorClockSkew: an Inspector on a machine whose clock is 30 s
// ahead of Redis's (a dashboard or scraper host with a wrong clock) reads
// the delayed set by Redis's clock, as drover's producers and workers
// schedule by it: a job due in 10 s is not overdue, and the throughput's
// last bucket is the minute Redis is in.
func TestInspectorClockSkew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	inspect.SetHostClock(b.ins, func() time.Time { return time.Now().Add(30 * time.Second) })
	b.add(t, "q", "later", &drover.JobOptions{Delay: 10 * time.Second})
	b.add(t, "q", "due", &drover.JobOptions{Delay: 10 * time.Second})
	// One job already due and not promoted (no worker runs): overdue.
	k := b.prefix + ":q:"
	ids, err := b.rdb.ZRange(ctx, k+"delayed", 1, 1).Result()
	require.NoError(t, err)
	require.NoError(t, b.rdb.ZAdd(ctx, k+"delayed", redisZ(float64((time.Now().UnixMilli()-5000)*0x1000), ids[0])).Err())

	st, err := b.ins.DelayedStats(ctx, "q")
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Count)
	require.EqualValues(t, 1, st.Overdue, "a job due in 10 s by Redis's clock counted as overdue")
	require.WithinDuration(t, time.Now(), st.At.Time, 5*time.Second, "At is Redis's time")
}

// TestFailureGroupsWithinUsesRedisTime: "what failed in the last 10
// minutes" counts back from Redis's time, which finishedOn is written by.
// From a host clock 30 minutes slow, the window used to start 40 minutes
// back and took in a job that failed 20 minutes ago (2 vs 1).
func TestFailureGroupsWithinUsesRedisTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	inspect.SetHostClock(b.ins, func() time.Time { return time.Now().Add(-30 * time.Minute) })
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("declined")
	}, nil)
	old, recent := b.add(t, "q", "x", nil), b.add(t, "q", "x", nil)
	b.waitState(t, "q", old, drover.StateFailed)
	b.waitState(t, "q", recent, drover.StateFailed)
	k := b.prefix + ":q:"
	now := time.Now()
	for id, ago := range map[string]time.Duration{old: 20 * time.Minute, recent: 5 * time.Minute} {
		at := now.Add(-ago).UnixMilli()
		require.NoError(t, b.rdb.HSet(ctx, k+id, "finishedOn", at).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(at), id)).Err())
	}
	rep, err := b.ins.FailureGroupsWithin(ctx, "q", 10*time.Minute)
	require.NoError(t, err)
	require.Len(t, rep.Groups, 1)
	require.Equal(t, 1, rep.Groups[0].Count, "only the job that failed 5 minutes ago")
	require.WithinDuration(t, now.Add(-10*time.Minute), rep.Since.Time, 5*time.Second)
	// What the CLI's --since and the dashboard's ?since= asked before: a
	// window from the host's clock.
	host, err := b.ins.FailureGroupsSince(ctx, "q", time.Now().Add(-30*time.Minute).Add(-10*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 2, host.Groups[0].Count, "the host-clock window takes in the older failure")
	all, err := b.ins.FailureGroupsWithin(ctx, "q", 0)
	require.NoError(t, err)
	require.Equal(t, 2, all.Groups[0].Count)
}

// TestInspectorClockStepBack: the Inspector's host clock steps back an
// hour after its first read. Before, the next measurement waited for the
// host clock to pass a deadline set by the old reading, an hour away, and
// DelayedStats meanwhile read by a clock an hour slow (At an hour back).
func TestInspectorClockStepBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	var step atomic.Int64
	inspect.SetHostClock(b.ins, func() time.Time { return time.Now().Add(time.Duration(step.Load())) })
	b.add(t, "q", "later", &drover.JobOptions{Delay: 10 * time.Second})
	st, err := b.ins.DelayedStats(ctx, "q")
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), st.At.Time, 5*time.Second)
	step.Store(int64(-time.Hour))
	st, err = b.ins.DelayedStats(ctx, "q")
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), st.At.Time, 5*time.Second, "At is Redis's time after the host's clock stepped back")
}
