package inspect_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("RefusesBadOptions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		for _, tt := range []struct {
			name string
			opts inspect.Options
			want string
		}{
			{"ScanLimit", inspect.Options{ScanLimit: -1}, "ScanLimit must be at least 1, got -1"},
			{"BudgetThreshold", inspect.Options{BudgetThreshold: 1.5}, "BudgetThreshold must be in (0, 1), got 1.5"},
			// NaN passed the range checks (every comparison with it is
			// false) and was taken.
			{"BudgetThresholdNaN", inspect.Options{BudgetThreshold: math.NaN()}, "BudgetThreshold must be in (0, 1), got NaN"},
			{"StormGrowthNaN", inspect.Options{Storm: &inspect.StormOptions{GrowthPerSecond: math.NaN()}}, "GrowthPerSecond must be a positive finite number, got NaN"},
			{"StormGrowthInf", inspect.Options{Storm: &inspect.StormOptions{GrowthPerSecond: math.Inf(1)}}, "GrowthPerSecond must be a positive finite number, got +Inf"},
			{"StormShare", inspect.Options{Storm: &inspect.StormOptions{ClusterShare: 2}}, "ClusterShare must be in (0, 1], got 2"},
			{"StormHorizon", inspect.Options{Storm: &inspect.StormOptions{Window: 10e9, Horizon: 1e9}}, "Horizon must be at least Window"},
		} {
			_, err := inspect.New(b.rdb, &tt.opts)
			require.ErrorIs(t, err, drover.ErrInvalidOption, tt.name)
			require.ErrorContains(t, err, tt.want, tt.name)
		}
		_, err := inspect.New(nil, nil)
		require.Error(t, err)
	})
}

func TestQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("DiscoversQueuesUnderThePrefixOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.add(t, "mail", "send", nil)
		b.add(t, "mail", "send", &drover.JobOptions{JobID: "custom"})
		b.add(t, "{reports}", "build", nil)
		// A queue Node BullMQ left with only its meta hash.
		require.NoError(t, b.rdb.HSet(ctx, b.prefix+":node-only:meta", "opts.maxLenEvents", 10000).Err())
		// Another prefix sharing the start of ours is not ours.
		require.NoError(t, b.rdb.HSet(ctx, b.prefix+"x:other:meta", "k", 1).Err())
		t.Cleanup(func() { b.rdb.Del(context.Background(), b.prefix+"x:other:meta") })

		names, err := b.ins.Queues(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"mail", "node-only", "{reports}"}, names)
	})

	t.Run("OverviewCountsPerState", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.add(t, "a", "x", nil)
		b.add(t, "a", "x", nil)
		b.add(t, "a", "x", &drover.JobOptions{Delay: 3600e9})
		b.add(t, "a", "x", &drover.JobOptions{Priority: 3})
		b.add(t, "b", "x", nil)
		require.NoError(t, b.queue(t, "b").Pause(ctx))

		infos, err := b.ins.Overview(ctx)
		require.NoError(t, err)
		require.Len(t, infos, 2)
		require.Equal(t, inspect.QueueInfo{Name: "a", Counts: inspect.Counts{Waiting: 2, Delayed: 1, Prioritized: 1}}, infos[0])
		require.WithinDuration(t, time.Now(), infos[1].PausedSince.Time, time.Minute)
		require.Equal(t, inspect.QueueInfo{Name: "b", Paused: true, PausedSince: infos[1].PausedSince, Counts: inspect.Counts{Waiting: 1}}, infos[1])
		require.Equal(t, int64(1), infos[0].Counts.Get(drover.StateDelayed))
		require.NoError(t, b.ins.Ping(ctx))
	})
}
