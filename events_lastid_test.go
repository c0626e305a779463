package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueueEventsRefusesABadLastEventID: NewQueueEvents names a
// LastEventID that is no stream id, where it took it and every read then
// failed with Redis's "ERR Invalid stream ID". The ids XREAD takes still
// read.
func TestQueueEventsRefusesABadLastEventID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	open := func(id string) (*drover.QueueEvents, error) {
		return drover.NewQueueEvents(rdb, "mail", &drover.QueueEventsOptions{Prefix: prefix, LastEventID: id, BlockTimeout: 10 * time.Millisecond})
	}
	for _, id := range []string{"garbage", "1-", "-1", "1-2-3", " 0", "+"} {
		_, err := open(id)
		require.ErrorIs(t, err, drover.ErrInvalidOption, id)
		require.ErrorContains(t, err, "LastEventID", id)
	}
	for _, id := range []string{"0", "0-0", "1"} {
		qe, err := open(id)
		require.NoError(t, err, id)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := qe.Next(rctx)
		cancel()
		require.NoError(t, err, id)
		require.Equal(t, drover.EventAdded, ev.Name, id)
	}
}
