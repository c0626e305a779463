package interoptest_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestDifferentialCleanWaitingChildrenByScore: BullMQ's clean ages a
// waiting-children job by its score there (when it started to wait), as it
// does completed and failed jobs; drover aged it by processedOn, so a
// parent that ran two hours ago and began waiting for its children just now
// was removed by a clean with a one-hour grace that Node's keeps. The same
// state (a parent moved to waiting-children by its processor, the way
// BullMQ's moveToWaitingChildren leaves it) is cleaned by each side.
func TestDifferentialCleanWaitingChildrenByScore(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	ctx := context.Background()
	removed := map[impl][]string{}
	for _, by := range []impl{nodeImpl, droverImpl} {
		b := setup(t)
		var ids []string
		now := time.Now()
		for _, tc := range []struct {
			processed, waiting time.Duration // ago
		}{
			{2 * time.Hour, 0},             // ran long ago, waits since now: kept
			{3 * time.Hour, 2 * time.Hour}, // waits for 2 h: removed
		} {
			id := b.add(t, droverImpl, jobSpec{name: "parent", data: map[string]any{"n": 1}})
			key := b.prefix + ":" + queueName + ":"
			_, err := b.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.LRem(ctx, key+"wait", 1, id)
				p.ZAdd(ctx, key+"waiting-children", redis.Z{Score: float64(now.Add(-tc.waiting).UnixMilli()), Member: id})
				p.HSet(ctx, key+id, "processedOn", strconv.FormatInt(now.Add(-tc.processed).UnixMilli(), 10), "ats", 1)
				return nil
			})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		var got []string
		var err error
		if by == nodeImpl {
			got, err = b.oracle.Clean(ctx, b.prefix, queueName, time.Hour.Milliseconds(), 0, "waiting-children")
		} else {
			got, err = b.dq.Clean(ctx, time.Hour, 0, drover.StateWaitingChildren)
		}
		require.NoError(t, err)
		removed[by] = got
		require.Equal(t, []string{ids[1]}, got, "%s clean removed", by)
	}
	require.Equal(t, len(removed[nodeImpl]), len(removed[droverImpl]))
}

// TestDifferentialCleanWithoutLimitPastOneChunk: a clean without a limit
// removes every old job, however many: Node's Queue.clean calls the script
// again while a call removes a whole chunk of 10,000. drover's Clean
// stopped after one chunk (10,000 of 10,050 completed jobs).
func TestDifferentialCleanWithoutLimitPastOneChunk(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	ctx := context.Background()
	const n = 10050
	for _, by := range []impl{nodeImpl, droverImpl} {
		b := setup(t)
		key := b.prefix + ":" + queueName + ":completed"
		old := float64(time.Now().Add(-time.Hour).UnixMilli())
		members := make([]redis.Z, n)
		for i := range members {
			members[i] = redis.Z{Score: old, Member: "c" + strconv.Itoa(i)}
		}
		require.NoError(t, b.rdb.ZAdd(ctx, key, members...).Err())
		var got []string
		var err error
		if by == nodeImpl {
			got, err = b.oracle.Clean(ctx, b.prefix, queueName, 0, 0, "completed")
		} else {
			got, err = b.dq.Clean(ctx, 0, 0, drover.StateCompleted)
		}
		require.NoError(t, err)
		require.Len(t, got, n, "%s clean removed", by)
		left, err := b.rdb.ZCard(ctx, key).Result()
		require.NoError(t, err)
		require.Zero(t, left, by)
	}
}
