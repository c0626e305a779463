package inspect_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keys"
)

func TestDelayedStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.UnixMilli(1_800_000_000_000)

	type bundle struct {
		*testBundle
		now time.Time
	}
	setupStorm := func(t *testing.T) *bundle {
		t.Helper()
		b := &bundle{testBundle: setup(t, nil), now: t0}
		inspect.SetNow(b.ins, func() time.Time { return b.now })
		return b
	}
	// addDue puts n jobs in the delayed set, due at due(k) for the k-th.
	addDue := func(t *testing.T, b *bundle, from, n int, due func(k int) time.Time) {
		t.Helper()
		zs := make([]redis.Z, n)
		for k := range n {
			zs[k] = redis.Z{Score: float64(keys.DelayedScore(due(k).UnixMilli(), int64(k%keys.DelayedSeqSpan))), Member: "j" + strconv.Itoa(from+k)}
		}
		require.NoError(t, b.rdb.ZAdd(ctx, b.prefix+":q:delayed", zs...).Err())
	}

	t.Run("ClusteredRaisesAlert", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		// 500 jobs due within 2s a minute from now, 100 spread over the horizon.
		addDue(t, b, 0, 500, func(k int) time.Time { return t0.Add(time.Minute + time.Duration(k)*4*time.Millisecond) })
		addDue(t, b, 500, 100, func(k int) time.Time { return t0.Add(time.Duration(k) * 5 * time.Second) })
		addDue(t, b, 600, 7, func(k int) time.Time { return t0.Add(-time.Second) })
		addDue(t, b, 607, 3, func(k int) time.Time { return t0.Add(time.Hour) })

		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.Equal(t, int64(610), st.Count)
		require.Equal(t, int64(7), st.Overdue)
		require.Equal(t, int64(3), st.Later)
		require.Equal(t, int64(607), st.Considered)
		require.Len(t, st.Buckets, 120)
		require.Equal(t, t0, st.Buckets[0].Start.Time)
		var sum int64
		for _, bk := range st.Buckets {
			sum += bk.Count
		}
		require.Equal(t, int64(600), sum)
		require.GreaterOrEqual(t, st.PeakCount, int64(500))
		require.False(t, st.PeakOverdue)
		require.WithinDuration(t, t0.Add(time.Minute), st.PeakStart.Time, 5*time.Second)
		require.InDelta(t, float64(st.PeakCount)/607, st.Clustering, 1e-9)
		require.True(t, st.Storm())
		require.Equal(t, inspect.AlertClustering, st.Alerts[0].Kind)
		require.Contains(t, st.Alerts[0].Message, "retry storm")
	})

	// addJobsDue puts n jobs with hashes in the delayed set, due together a
	// minute from now; retry(k) says whether the k-th failed before.
	addJobsDue := func(t *testing.T, b *bundle, n int, retry func(k int) bool) {
		t.Helper()
		addDue(t, b, 0, n, func(k int) time.Time { return t0.Add(time.Minute + time.Duration(k)*time.Millisecond) })
		_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k := range n {
				fields := []any{"name", "send", "data", "{}", "opts", "{}", "timestamp", t0.UnixMilli(), "delay", 60000}
				if retry(k) {
					fields = append(fields, "atm", 1, "ats", 1, "failedReason", "timeout")
				}
				p.HSet(ctx, b.prefix+":q:j"+strconv.Itoa(k), fields...)
			}
			return nil
		})
		require.NoError(t, err)
	}

	t.Run("JobsScheduledTogetherAreNoRetryStorm", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		addJobsDue(t, b, 150, func(int) bool { return false })
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.True(t, st.Storm())
		require.NotContains(t, st.Alerts[0].Message, "retry storm")
		require.Contains(t, st.Alerts[0].Message, "150 delayed jobs (100% of 150) are due within 5s from ")
		require.Contains(t, st.Alerts[0].Message, "(none of 20 sampled has failed before: a burst of scheduled jobs, not retries)")
		require.Equal(t, inspect.PeakSampleSize, st.PeakSampled)
		require.Zero(t, st.PeakRetries)
	})

	t.Run("RetriesComingBackTogether", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		addJobsDue(t, b, 150, func(int) bool { return true })
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(st.Alerts[0].Message, "retry storm: 150 delayed jobs"), st.Alerts[0].Message)
		require.NotContains(t, st.Alerts[0].Message, "sampled")
		require.Equal(t, inspect.PeakSampleSize, st.PeakSampled)
		require.Equal(t, inspect.PeakSampleSize, st.PeakRetries)
	})

	t.Run("SomeRetriesAmongThePeak", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		addJobsDue(t, b, 150, func(k int) bool { return k%4 == 0 })
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(st.Alerts[0].Message, "retry storm: "), st.Alerts[0].Message)
		require.True(t, strings.HasSuffix(st.Alerts[0].Message, " (5 of 20 sampled are retries)"), st.Alerts[0].Message)
		require.Equal(t, 5, st.PeakRetries)
	})

	t.Run("SpreadStaysBelowThreshold", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		// 600 jobs spread evenly over 30s (a 50% jitter on a 60s backoff).
		addDue(t, b, 0, 600, func(k int) time.Time { return t0.Add(30*time.Second + time.Duration(k)*50*time.Millisecond) })
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.InDelta(t, 5.0/30, st.Clustering, 0.02)
		require.False(t, st.Storm())
	})

	t.Run("SmallClusterIsNoStorm", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		addDue(t, b, 0, 20, func(k int) time.Time { return t0.Add(time.Minute) })
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.Equal(t, 1.0, st.Clustering)
		require.False(t, st.Storm(), "fewer than ClusterMinJobs jobs")
	})

	t.Run("OverdueJobsAreOneWindow", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		addDue(t, b, 0, 300, func(k int) time.Time { return t0.Add(-time.Duration(k+1) * time.Second) })
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.True(t, st.PeakOverdue)
		require.Equal(t, 1.0, st.Clustering)
		require.Contains(t, st.Alerts[0].Message, "overdue")
		// Jobs past due were not promoted: no worker fetched, which is not
		// a storm of retries (these never ran).
		require.NotContains(t, st.Alerts[0].Message, "retry storm")
		require.Contains(t, st.Alerts[0].Message, "no worker has moved them to wait (none is running, or all are busy)")
	})

	t.Run("GrowthFromSamples", func(t *testing.T) {
		t.Parallel()
		b := setupStorm(t)
		far := func(k int) time.Time { return t0.Add(time.Hour) }
		b.add(t, "q", "waiting", nil) // the queue exists, with no delayed job
		st, err := b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.False(t, st.GrowthKnown)
		b.now = t0.Add(5 * time.Second)
		addDue(t, b, 0, 100, far)
		st, err = b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.False(t, st.GrowthKnown, "samples span less than GrowthMinSpan")
		b.now = t0.Add(10 * time.Second)
		addDue(t, b, 100, 200, far)
		st, err = b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.True(t, st.GrowthKnown)
		require.InDelta(t, 30.0, st.Growth, 1e-9)
		require.Len(t, st.Alerts, 1)
		require.Equal(t, inspect.AlertGrowth, st.Alerts[0].Kind)

		// Two minutes later, nothing grew: the old samples are gone.
		b.now = t0.Add(2 * time.Minute)
		_, err = b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		b.now = t0.Add(2*time.Minute + 20*time.Second)
		st, err = b.ins.DelayedStats(ctx, "q")
		require.NoError(t, err)
		require.True(t, st.GrowthKnown)
		require.Zero(t, st.Growth)
		require.False(t, st.Storm())
	})
}
