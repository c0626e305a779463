package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestSetLimits: each change shows in QueueInfo.Limits (and in what the
// workers read: the drover Queue's getters), and a change Validate refuses
// leaves Redis untouched.
func TestSetLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	q := b.queue(t, "mail")
	_, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		change inspect.LimitsChange
		want   inspect.Limits // RateLimitedFor: > 0 when set here
	}{
		{"SetBoth", inspect.LimitsChange{Concurrency: 2, RateLimit: &inspect.RateLimit{Max: 5, Duration: time.Second}},
			inspect.Limits{Concurrency: ptr(2), RateLimit: &inspect.RateLimit{Max: 5, Duration: time.Second}}},
		{"Block", inspect.LimitsChange{Block: time.Minute},
			inspect.Limits{Concurrency: ptr(2), RateLimit: &inspect.RateLimit{Max: 5, Duration: time.Second}, RateLimitedFor: 1}},
		{"RemoveAndUnblock", inspect.LimitsChange{RemoveConcurrency: true, RemoveRateLimit: true, Unblock: true}, inspect.Limits{}},
	} {
		info, err := b.ins.SetLimits(ctx, "mail", tc.change)
		require.NoError(t, err, tc.name)
		got := info.Limits
		if tc.want.RateLimitedFor > 0 {
			require.Greater(t, got.RateLimitedFor, 50*time.Second, tc.name)
			got.RateLimitedFor = 1
		}
		require.Equal(t, tc.want, got, tc.name)
	}
	_, set, err := q.GetGlobalConcurrency(ctx)
	require.NoError(t, err)
	require.False(t, set)

	before, err := b.rdb.HGetAll(ctx, b.prefix+":mail:meta").Result()
	require.NoError(t, err)
	for _, c := range []inspect.LimitsChange{
		{},
		{Concurrency: -1},
		{Concurrency: 2, RemoveConcurrency: true},
		{RateLimit: &inspect.RateLimit{Max: 1, Duration: time.Second}, RemoveRateLimit: true},
		{RateLimit: &inspect.RateLimit{Max: 0, Duration: time.Second}},
		{RateLimit: &inspect.RateLimit{Max: 1}},
		{Block: -time.Second},
		{Block: time.Microsecond},
		{Block: time.Second, Unblock: true},
	} {
		_, err := b.ins.SetLimits(ctx, "mail", c)
		require.ErrorIs(t, err, drover.ErrInvalidOption, "%+v", c)
	}
	after, err := b.rdb.HGetAll(ctx, b.prefix+":mail:meta").Result()
	require.NoError(t, err)
	require.Equal(t, before, after, "refused changes wrote nothing")
	_, err = b.ins.SetLimits(ctx, "nosuch", inspect.LimitsChange{Concurrency: 1})
	require.ErrorIs(t, err, inspect.ErrQueueNotFound)
	require.Equal(t, "concurrency=3 rate=none block=1m0s", inspect.LimitsChange{Concurrency: 3, RemoveRateLimit: true, Block: time.Minute}.String())
}
