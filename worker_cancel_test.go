package drover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/scripts"
)

// TestAttemptStop covers the race between a cancel (or timeout) and the
// processor's return: whichever comes first decides the attempt.
func TestAttemptStop(t *testing.T) {
	t.Parallel()

	newRJ := func() *runningJob {
		rj := &runningJob{}
		rj.ctx, rj.cancel = context.WithCancelCause(context.Background())
		return rj
	}
	cancel := cancelledError(scripts.CancelMessage{Token: "t", Reason: " why "})

	t.Run("ReturnedFirst", func(t *testing.T) {
		t.Parallel()
		rj := newRJ()
		require.Nil(t, rj.returned())
		require.False(t, rj.stop(cancel), "a cancel after the return is ignored")
		require.NoError(t, rj.ctx.Err())
	})

	t.Run("CancelFirst", func(t *testing.T) {
		t.Parallel()
		rj := newRJ()
		require.True(t, rj.stop(cancel))
		require.ErrorIs(t, context.Cause(rj.ctx), ErrJobCancelled)
		require.False(t, rj.stop(timedOutError(1, "job timeout")), "the first stop wins")
		require.Same(t, cancel, rj.returned())
		require.Equal(t, "cancelled: why", rj.returned().Error())
	})

	t.Run("Messages", func(t *testing.T) {
		t.Parallel()
		m, ok := scripts.ParseCancelMessage("w1:2:7\nr\nline1\nline2")
		require.True(t, ok)
		require.Equal(t, scripts.CancelMessage{Token: "w1:2:7", Retry: true, Reason: "line1\nline2"}, m)
		for _, bad := range []string{"", "token-only", "\n\nno token"} {
			_, ok := scripts.ParseCancelMessage(bad)
			require.False(t, ok, bad)
		}
	})
}
