package drover_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestSetEventsMaxLen: the cap SetEventsMaxLen stores bounds the events
// stream as later adds write their events (approximately: Redis trims
// whole stream nodes of 100 entries), and a cap that is not positive is
// refused with Redis untouched.
func TestSetEventsMaxLen(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	for _, bad := range []int64{0, -5} {
		err := b.queue.SetEventsMaxLen(ctx, bad)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, "must be positive")
	}
	m, err := b.queue.GetMeta(ctx)
	require.NoError(t, err)
	require.False(t, m.MaxLenEventsSet, "a refused cap wrote meta")

	require.NoError(t, b.queue.SetEventsMaxLen(ctx, 10))
	m, err = b.queue.GetMeta(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 10, m.MaxLenEvents)
	for range 300 {
		_, err := b.queue.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
	}
	n, err := b.rdb.XLen(ctx, b.prefix+":q:events").Result()
	require.NoError(t, err)
	t.Logf("600 events written under a cap of 10: %d kept", n)
	require.Less(t, n, int64(300), "the events stream kept growing past the cap")
}
