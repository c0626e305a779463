package inspect_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestUnfilteredPageStopsAtTheScanLimit: a page without a filter reads at
// most Options.ScanLimit ids, as a filtered one does, when the state's ids
// have no job hash left (deleted by hand, or evicted by a maxmemory
// policy): it says Truncated and offers the next page. It read the whole
// state to fill the page: 1.2M such ids in a wait list took the dashboard's
// queue page 8 s and `drover jobs` 50 s, one HMGET per id.
func TestUnfilteredPageStopsAtTheScanLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit, dangling = 100, 1000
	b := setup(t, nil)
	ins, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix, ScanLimit: limit})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(ctx)) })
	real := b.add(t, "q", "real", nil) // the oldest: the far end of the newest-first list
	ids := make([]any, dangling)
	for n := range ids {
		ids[n] = "gone" + strconv.Itoa(n)
	}
	require.NoError(t, b.rdb.LPush(ctx, b.prefix+":q:wait", ids...).Err())

	page, err := ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateWaiting, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, int64(dangling+1), page.Total)
	require.Equal(t, limit, page.Scanned, "a page reads at most the scan limit")
	require.Empty(t, page.Jobs)
	require.True(t, page.Truncated)
	require.True(t, page.More)

	// Paging on reaches the job behind them, the limit at a time.
	var found []string
	for pages := 0; len(found) == 0; pages++ {
		require.Less(t, pages, dangling/limit+2, "paging ends")
		page, err = ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateWaiting, Limit: 10, After: page.NextCursor})
		require.NoError(t, err)
		require.LessOrEqual(t, page.Scanned, limit)
		for _, j := range page.Jobs {
			found = append(found, j.ID)
		}
	}
	require.Equal(t, []string{real}, found)
	require.False(t, page.More)

	// A healthy page is unchanged: Limit jobs, not truncated.
	for range 20 {
		b.add(t, "q", "more", nil)
	}
	page, err = ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateWaiting, Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 10)
	require.Equal(t, 10, page.Scanned)
	require.False(t, page.Truncated)
	require.True(t, page.More)
}
