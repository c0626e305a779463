package drover_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestZeroJobIsSafe: a processor's first unit test hands it a Job built by
// hand. Every method must work or return an error; before, Log,
// UpdateProgress and the admin calls panicked on the nil queue.
func TestZeroJobIsSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var job drover.Job

	n, err := job.Log(ctx, "first")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = job.Log(ctx, "second")
	require.NoError(t, err)
	require.Equal(t, 2, n)

	require.NoError(t, job.UpdateProgress(ctx, map[string]int{"done": 3}))
	require.JSONEq(t, `{"done":3}`, string(job.Progress))
	require.ErrorIs(t, job.UpdateProgress(ctx, func() {}), drover.ErrInvalidData)

	state, err := job.GetState(ctx)
	require.NoError(t, err)
	require.Equal(t, drover.StateUnknown, state)
	require.Nil(t, job.Queue())

	var v struct{ To string }
	require.Error(t, job.DecodeData(&v), "no data is an error, not a panic")
	hand := drover.Job{ID: "h", Data: []byte(`{"To":"ada@example.com"}`)}
	require.NoError(t, hand.DecodeData(&v))
	require.Equal(t, "ada@example.com", v.To)

	for name, call := range map[string]func() error{
		"Retry":          func() error { return job.Retry(ctx, drover.StateFailed, nil) },
		"RetryNow":       func() error { return job.RetryNow(ctx, nil) },
		"Promote":        func() error { return job.Promote(ctx) },
		"ChangeDelay":    func() error { return job.ChangeDelay(ctx, 0) },
		"ChangePriority": func() error { return job.ChangePriority(ctx, 1, false) },
		"Remove":         func() error { return job.Remove(ctx, nil) },
	} {
		require.ErrorIs(t, call(), drover.ErrNoQueue, name)
	}
}
