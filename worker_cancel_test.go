package drover

import (
	"context"
	"fmt"
	"testing"
	"time"

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

	// A request that comes while the fetch that locked the job has not
	// reached the worker yet stops the job as it starts (it was dropped:
	// TestCancelJobRacesAWorker left such a job running).
	t.Run("BeforeTheJobStarts", func(t *testing.T) {
		t.Parallel()
		f := newInflight(2, time.Minute)
		require.Equal(t, 2, f.take(2))
		job, stopped := f.stopByToken("w:1:7", cancel, time.Now())
		require.Nil(t, job)
		require.False(t, stopped)
		rj, other := newRJ(), newRJ()
		rj.token, other.token = "w:1:7", "w:1:8"
		f.start(2, []*runningJob{rj, other})
		require.ErrorIs(t, context.Cause(rj.ctx), ErrJobCancelled)
		require.Same(t, cancel, rj.returned())
		require.NoError(t, other.ctx.Err())
		require.Empty(t, f.early)

		// Requests for tokens no job takes expire; the map stays bounded.
		f = newInflight(1, time.Minute)
		t0 := time.Now()
		for i := range maxEarly + 10 {
			f.stopByToken(fmt.Sprint("gone:", i), cancel, t0)
		}
		require.Len(t, f.early, maxEarly)
		f.stopByToken("fresh", cancel, t0.Add(2*time.Minute))
		require.Len(t, f.early, 1)
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
