package drover_test

import (
	"context"
	"testing"

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
