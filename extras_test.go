package drover_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestQueueExtrasRefusals: the extras refuse bad input before touching
// Redis, the zero Job has no queue to act on, and a meta value no BullMQ
// writes is an error naming the field. What they answer on good input is
// Node's (internal/interoptest/queue_extras_test.go).
func TestQueueExtrasRefusals(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	res, err := b.queue.Add(ctx, "j", nil, &drover.JobOptions{JobID: "j"})
	require.NoError(t, err)
	_, err = res.Job.Log(ctx, "kept")
	require.NoError(t, err)
	keys := func() []string {
		k, err := b.rdb.Keys(ctx, b.prefix+":*").Result()
		require.NoError(t, err)
		return k
	}
	before := keys()

	_, err = b.queue.GetDeduplicationJobID(ctx, "")
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	_, err = b.queue.RemoveDeduplicationKey(ctx, "")
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	_, err = b.queue.GetCountsPerPriority(ctx, 0, drover.MaxPriority+1)
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorIs(t, b.queue.Job("j").ClearLogs(ctx, -1), drover.ErrInvalidOption)
	require.ElementsMatch(t, before, keys())
	_, n, err := b.queue.GetJobLogs(ctx, "j", 0, -1)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	var zero drover.Job
	_, err = zero.RemoveDeduplicationKey(ctx)
	require.ErrorIs(t, err, drover.ErrNoQueue)
	_, err = zero.RemoveChildDependency(ctx)
	require.ErrorIs(t, err, drover.ErrNoQueue)
	_, err = zero.RemoveUnprocessedChildren(ctx)
	require.ErrorIs(t, err, drover.ErrNoQueue)
	for range 3 {
		_, _ = zero.Log(ctx, "line")
	}
	require.NoError(t, zero.ClearLogs(ctx, 1))
	lines, _ := zero.Log(ctx, "another")
	require.Equal(t, 2, lines, "the zero Job kept 1 line, then logged one more")

	meta := b.prefix + ":q:meta"
	require.NoError(t, b.rdb.HSet(ctx, meta, "concurrency", "lots", "max", "5", "duration", "1.5").Err())
	_, _, err = b.queue.GetGlobalConcurrency(ctx)
	require.ErrorContains(t, err, `concurrency is "lots"`)
	_, err = b.queue.GetGlobalRateLimit(ctx)
	require.ErrorContains(t, err, `duration is "1.5"`)

	require.NoError(t, b.queue.Close())
	_, err = b.queue.GetCountsPerPriority(ctx, 1)
	require.ErrorIs(t, err, drover.ErrClosed)
}
