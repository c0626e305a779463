package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
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
		var out testkit.SyncBuffer
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
	// A good id: watch runs until its context ends. The context ends once
	// it says it is watching (a fixed short deadline failed under load:
	// the deadline came before the first read).
	for _, from := range []string{"0", "0-0", "$", "1700000000000", "1700000000000-5"} {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		var out testkit.SyncBuffer
		done := make(chan error, 1)
		go func() {
			done <- (&Main{Stdout: &out, Stderr: &out}).Run(wctx, []string{"watch", "mail", "--from", from,
				"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
		}()
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "watching mail") },
			30*time.Second, 10*time.Millisecond, "--from %q: %s", from, out.String())
		cancel()
		require.NoError(t, <-done, "--from %q: %s", from, out.String())
	}
}
