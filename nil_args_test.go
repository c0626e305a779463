package drover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// callNoPanic runs fn and turns a panic into a test failure naming it.
func callNoPanic(t *testing.T, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
			t.Errorf("%v", err)
		}
	}()
	return fn()
}

// TestNilArgumentsAreRefused: a nil function or job where one is needed is
// an error naming it (ErrInvalidOption), never a panic. Before,
// QueueEvents.Run(ctx, nil) read the next event and panicked calling nil
// (the event was read past: a later Next started after it), and
// Kinds.Process(ctx, nil) panicked on the nil job.
func TestNilArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	qe, err := drover.NewQueueEvents(b.rdb, b.name, &drover.QueueEventsOptions{Prefix: b.prefix, LastEventID: "0"})
	require.NoError(t, err)
	_, err = b.queue.Add(ctx, "x", 1, &drover.JobOptions{JobID: "first"})
	require.NoError(t, err)

	t.Run("QueueEvents.Run", func(t *testing.T) {
		runCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := callNoPanic(t, func() error { return qe.Run(runCtx, nil) })
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, "QueueEvents.Run needs a function")
		// The event is still the next one.
		ev, err := qe.Next(runCtx)
		require.NoError(t, err)
		require.Equal(t, "first", ev.JobID)
	})
	t.Run("Kinds.Process", func(t *testing.T) {
		var k drover.Kinds
		drover.Work(&k, func(context.Context, *drover.Job, nilArgsKind) (any, error) { return nil, nil })
		err := callNoPanic(t, func() error { _, err := k.Process(ctx, nil); return err })
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, "Kinds.Process needs a job")
	})
}

type nilArgsKind struct{}

func (nilArgsKind) Kind() string { return "nil-args" }
