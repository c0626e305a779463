package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueuesListsAQueueAddedWhileADashboardRuns: `drover add` then
// `drover queues` lists the new queue while a dashboard (an Inspector that
// publishes its queue list) runs. The listing took the dashboard's
// published list, up to two discovery intervals old, as the whole answer
// and left out the queue the add had just put in the registry.
func TestQueuesListsAQueueAddedWhileADashboardRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, args), out.String())
		return out.String()
	}
	run("add", "old", "x")
	// The dashboard lists the queues once and publishes that list; its
	// next refresh is a minute away.
	dash, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dash.Close(ctx) })
	names, err := dash.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"old"}, names)

	run("add", "fresh", "x")
	out := run("queues")
	require.Contains(t, out, "old")
	require.Contains(t, out, "fresh", "a queue drover just added is listed")

	// A queue obliterated since the dashboard's list is not listed.
	run("add", "doomed", "x")
	_, err = dash.Rescan(ctx)
	require.NoError(t, err)
	q, err := dash.Queue("doomed")
	require.NoError(t, err)
	require.NoError(t, q.Obliterate(ctx, nil))
	require.NotContains(t, run("queues"), "doomed", "a queue gone since the published list is not listed")
}
