package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestNotInStateSaysWhichState: an admin call refused because the job is in
// another state says which state it is in and which the call needed, as
// CancelJob does (before: "job not in the expected state", nothing more).
func TestNotInStateSaysWhichState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	res, err := b.queue.Add(ctx, "j", nil, nil)
	require.NoError(t, err)
	job := b.queue.Job(res.Job.ID)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"Promote", func() error { return job.Promote(ctx) }, "it is waiting, not delayed"},
		{"ChangeDelay", func() error { return job.ChangeDelay(ctx, 0) }, "it is waiting, not delayed"},
		{"RetryNow", func() error { return job.RetryNow(ctx, nil) }, "it is waiting, not delayed"},
		{"Retry", func() error { return job.Retry(ctx, drover.StateFailed, nil) }, "it is waiting, not failed"},
	} {
		err := tc.call()
		require.ErrorIs(t, err, drover.ErrNotInState, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

// TestPromoteEarliest: at most n delayed jobs run now, the earliest due
// first; a count that is not positive is refused before anything moves.
func TestPromoteEarliest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	var ids []string
	for _, d := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour} {
		res, err := b.queue.Add(ctx, "d", nil, &drover.JobOptions{Delay: d})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	for _, n := range []int{0, -1} {
		_, err := b.queue.PromoteEarliest(ctx, n)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	}
	n, err := b.queue.PromoteEarliest(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for i, want := range []drover.JobState{drover.StateDelayed, drover.StateWaiting, drover.StateWaiting} {
		st, err := b.queue.GetJobState(ctx, ids[i])
		require.NoError(t, err)
		require.Equal(t, want, st, "job due in %d h", []int{3, 1, 2}[i])
	}
}
