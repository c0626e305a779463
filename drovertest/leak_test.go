package drovertest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/drovertest"
)

// TestNothingOutlivesTheTest: once a test that used a Kit (its engine, a
// worker of its own, a Run) has ended, none of the kit's goroutines runs.
// Not parallel, so that no other test's kit is alive meanwhile.
func TestNothingOutlivesTheTest(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("UsesAKit", func(t *testing.T) {
		k := drovertest.New(t)
		k.StartWorker("mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return "sent", nil }), nil)
		added, err := k.Queue("mail").Add(context.Background(), "send", nil, nil)
		require.NoError(t, err)
		k.WaitState("mail", added.Job.ID, drover.StateCompleted)
		res := k.Run(drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return 1, nil }), "one", nil, nil)
		require.Equal(t, drover.OutcomeCompleted, res.Outcome)
	})
	goleak.VerifyNone(t, before)
}
