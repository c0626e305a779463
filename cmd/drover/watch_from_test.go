package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWatchRefusesABadFrom: `drover watch q --from garbage` is a usage
// error naming --from, before it says it is watching. It printed
// "watching q" and then failed with Redis's "ERR Invalid stream ID
// specified as stream command argument" (exit 1). The ids it takes still
// work.
func TestWatchRefusesABadFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	watch := func(ctx context.Context, from string) (string, error) {
		var out syncBuffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"watch", "mail", "--from", from,
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
		return out.String(), err
	}
	for _, from := range []string{"garbage", "1-", "-1", "1-2-3", "12ab", " 0"} {
		out, err := watch(ctx, from)
		var usage *usageError
		require.ErrorAs(t, err, &usage, "--from %q: %s", from, out)
		require.ErrorContains(t, err, "--from", from)
		require.NotContains(t, out, "watching", from)
	}
	for _, from := range []string{"0", "0-0", "$", "1700000000000", "1700000000000-5"} {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		out, err := watch(wctx, from)
		cancel()
		require.NoError(t, err, "--from %q: %s", from, out)
		require.Contains(t, out, "watching mail", from)
	}
}
