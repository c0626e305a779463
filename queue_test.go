package drover_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

func TestAddAndProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("CompletesWithReturnValue", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "greet", map[string]string{"who": "world"}, nil)
		require.NoError(t, err)
		require.Equal(t, drover.AddCreated, res.Outcome)
		require.Equal(t, "1", res.Job.ID)

		counts, err := b.queue.GetJobCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), counts[drover.StateWaiting])

		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			var in struct{ Who string }
			require.NoError(t, job.DecodeData(&in))
			return map[string]string{"hello": in.Who}, nil
		}, nil)
		b.waitState(t, "1", drover.StateCompleted)

		job, err := b.queue.GetJob(ctx, "1")
		require.NoError(t, err)
		require.JSONEq(t, `{"hello":"world"}`, string(job.ReturnValue))
		require.Equal(t, 1, job.AttemptsMade)
		require.Equal(t, 1, job.AttemptsStarted)
		require.False(t, job.ProcessedOn.IsZero())
		require.False(t, job.FinishedOn.IsZero())
		require.Equal(t, "greet", job.Name)

		require.Eventually(t, func() bool {
			return len(eventNames(b.events(t))) >= 5
		}, 5*time.Second, 10*time.Millisecond)
		require.Equal(t, []string{"added:1", "waiting:1", "active:1:waiting", "completed:1:active", "drained"}, eventNames(b.events(t))[:5])
	})

	t.Run("DuplicateCustomID", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		first, err := b.queue.Add(ctx, "a", 1, &drover.JobOptions{JobID: "order-7"})
		require.NoError(t, err)
		require.Equal(t, drover.AddCreated, first.Outcome)
		second, err := b.queue.Add(ctx, "b", 2, &drover.JobOptions{JobID: "order-7"})
		require.NoError(t, err)
		require.Equal(t, drover.AddDuplicate, second.Outcome)
		require.Equal(t, drover.StateWaiting, second.ExistingState)
		require.Equal(t, "a", second.Job.Name)
		require.Equal(t, json.RawMessage("1"), second.Job.Data)
		require.Equal(t, []string{"added:order-7", "waiting:order-7", "duplicated:order-7"}, eventNames(b.events(t)))
	})
}
