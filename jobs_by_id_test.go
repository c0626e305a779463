package drover_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGetJobsByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("InOrderSkippingMissing", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var ids []string
		for _, name := range []string{"a", "b", "c"} {
			res, err := b.queue.Add(ctx, name, nil, nil)
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		require.NoError(t, b.queue.Job(ids[1]).Remove(ctx, nil))
		jobs, err := b.queue.GetJobsByID(ctx, []string{ids[2], ids[1], "missing", ids[0]})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		require.Equal(t, "c", jobs[0].Name)
		require.Equal(t, "a", jobs[1].Name)
		require.Equal(t, b.queue, jobs[0].Queue())

		jobs, err = b.queue.GetJobsByID(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, jobs)
	})
}
