package drover_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestCleanFinishedInSmallCalls: a clean of 2500 completed jobs removes
// them all, in script calls of at most 1000 (a "cleaned" event each): one
// call removed up to 10000 jobs and held Redis for about 50 ms (one event
// of 2500).
func TestCleanFinishedInSmallCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	k := b.prefix + ":q:"
	const n = 2500
	p := b.rdb.Pipeline()
	for i := range n {
		id := strconv.Itoa(i + 1)
		p.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000+i, "returnvalue", "1", "finishedOn", 2000+i)
		p.ZAdd(ctx, k+"completed", redis.Z{Score: float64(2000 + i), Member: id})
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
	ids, err := b.queue.Clean(ctx, 0, 0, drover.StateCompleted)
	require.NoError(t, err)
	require.Len(t, ids, n)
	require.Equal(t, "1", ids[0], "oldest first")
	left, err := b.rdb.ZCard(ctx, k+"completed").Result()
	require.NoError(t, err)
	require.Zero(t, left)
	var counts []int
	for _, e := range b.events(t) {
		if e.Name == "cleaned" {
			counts = append(counts, e.Count)
		}
	}
	require.Equal(t, []int{1000, 1000, 500}, counts)

	// A limit is still never exceeded.
	for i := range 1500 {
		p.HSet(ctx, k+"l"+strconv.Itoa(i), "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000+i, "failedReason", "x", "finishedOn", 2000+i)
		p.ZAdd(ctx, k+"failed", redis.Z{Score: float64(2000 + i), Member: "l" + strconv.Itoa(i)})
	}
	_, err = p.Exec(ctx)
	require.NoError(t, err)
	ids, err = b.queue.Clean(ctx, 0, 1200, drover.StateFailed)
	require.NoError(t, err)
	require.Len(t, ids, 1200)
}
