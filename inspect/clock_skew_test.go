package inspect_test

import (
	"context"
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
