package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestDerivedTimelineWaitingAfterRetryByHand: a Node job with two attempts
// fails both (failed for good), is retried by hand (Node's job.retry) and
// waits, no worker running. Its timeline's last attempt used the attempts
// up, with its error from the stack trace (the retry cleared the failed
// reason). It said "retried", as if the job had gone back to wait on its
// own, with no error.
func TestDerivedTimelineWaitingAfterRetryByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	id, err := o.Add(ctx, b.prefix, "q", "job", nil, map[string]any{"attempts": 2})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("down")}))
	_, err = o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, o.StopWorker(ctx, "w", false))
	require.NoError(t, o.RetryJob(ctx, b.prefix, "q", id, "failed", false, false))

	d, err := b.ins.Job(ctx, "q", id)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, d.State)
	type step struct{ Outcome, Error string }
	var got []step
	for _, a := range d.Timeline {
		got = append(got, step{a.Outcome, a.Error})
	}
	require.Equal(t, []step{
		{drover.OutcomeRetried.String(), "Error: down"},
		{drover.OutcomeRetriesExhausted.String(), "Error: down"},
	}, got)
}
