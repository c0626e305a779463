package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueueNameNoQueueCanHave: `drover add` and `drover scheduler upsert`
// (the commands that create a queue) with a name no queue can have ("a:b",
// "") exited 1 after connecting to Redis, "invalid option: queue name ...";
// it is a usage error (exit 2) said before Redis is opened, and nothing is
// written.
func TestQueueNameNoQueueCanHave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	for _, args := range [][]string{
		{"add", "a:b", "x"},
		{"add", "", "x"},
		{"scheduler", "upsert", "a:b", "s1", "--every", "1s"},
	} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args,
			"--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		require.Equal(t, 2, exitCode(err), "%q: %v", args, err)
		require.ErrorContains(t, err, "queue name", "%q", args)
		require.NotContains(t, err.Error(), "invalid option", "%q", args)
	}
	written, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, written)
}
