package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueuesListsTheOthersWhenOneQueueIsUnreadable: one queue whose meta
// key holds a string (a key of the wrong type, written by hand or by another
// tool) made `drover queues` print nothing but a WRONGTYPE error that named
// neither the key nor the other queues. The listing now shows every
// readable queue, names the unreadable one and its key on stderr, and exits
// non-zero; Redis is left as it was.
func TestQueuesListsTheOthersWhenOneQueueIsUnreadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) (string, string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, args)
		return out.String(), errOut.String(), err
	}
	for _, q := range []string{"good", "bad"} {
		_, e, err := run("add", q, "x")
		require.NoError(t, err, e)
	}
	metaKey := prefix + ":bad:meta"
	require.NoError(t, rdb.Del(ctx, metaKey).Err())
	require.NoError(t, rdb.Set(ctx, metaKey, "oops", 0).Err())

	for _, asJSON := range []bool{false, true} {
		args := []string{"queues"}
		if asJSON {
			args = append(args, "--json")
		}
		out, errOut, err := run(args...)
		require.Error(t, err, "an unreadable queue is an error")
		require.Contains(t, out, "good", "the readable queue is listed")
		require.Contains(t, out+errOut+err.Error(), metaKey, "the error names the key of the wrong type")
		require.Contains(t, out+errOut+err.Error(), `"bad"`, "the error names the queue")
	}
	v, err := rdb.Get(ctx, metaKey).Result()
	require.NoError(t, err)
	require.Equal(t, "oops", v, "the key is left untouched")
}
