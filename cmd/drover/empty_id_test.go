package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestEmptyJobIDIsAUsageError: an empty job id (an unset shell variable,
// `drover retry q "$ID"`) answered "job not found" with exit 1, and retry,
// promote and cancel wrote an audit entry for it. It is now a usage error
// (exit 2) naming the empty id, before anything connects: no audit entry.
func TestEmptyJobIDIsAUsageError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "send", nil, nil)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"job", "mail", ""},
		{"job", " "},
		{"retry", "mail", "1", ""},
		{"promote", "mail", ""},
		{"cancel", "mail", " "},
	} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		var usage *usageError
		require.ErrorAs(t, err, &usage, "%q: %v", args, err)
		require.ErrorContains(t, err, "is empty", "%q", args)
	}
	n, err := rdb.Exists(ctx, keys.DashboardOf(prefix).AuditLog()).Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing was audited: nothing was done")
	s, err := q.GetJobState(ctx, "1")
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, s, "job 1 was not retried")
}
