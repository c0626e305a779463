package inspect_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestNotFoundErrorsMatchTheRootSentinels: an Inspector's "no such job" and
// "no such job scheduler" errors match the root package's sentinels, as
// the Queue calls' do, so code written against either API branches with
// one errors.Is. inspect.ErrSchedulerNotFound was a sentinel of its own:
// RemoveScheduler's error did not match drover.ErrJobSchedulerNotFound.
func TestNotFoundErrorsMatchTheRootSentinels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.add(t, "q", "x", nil)

	err := b.ins.RemoveScheduler(ctx, "q", "nosuch")
	require.True(t, errors.Is(err, inspect.ErrSchedulerNotFound), "%v", err)
	require.True(t, errors.Is(err, drover.ErrJobSchedulerNotFound), "%v", err)

	_, err = b.ins.Job(ctx, "q", "nosuch")
	require.True(t, errors.Is(err, drover.ErrJobNotFound), "%v", err)
}
