package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestUnknownQueue is issue 15 item 15: commands on a queue that does not
// exist say so and write nothing (no phantom queue).
func TestUnknownQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "real", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, args)
		return out.String(), err
	}
	for _, args := range [][]string{
		{"clean", "nosuch"}, {"promote", "nosuch"}, {"retry", "nosuch"}, {"retry", "nosuch", "1"},
		{"jobs", "nosuch"}, {"job", "nosuch", "1"}, {"watch", "nosuch"},
		{"schedulers", "nosuch"}, {"scheduler", "remove", "nosuch", "x"}, {"pause", "nosuch"}, {"resume", "nosuch"}, {"cancel", "nosuch", "1"},
	} {
		out, err := run(args...)
		require.Error(t, err, "%v: %s", args, out)
		require.Contains(t, err.Error()+out, `no queue "nosuch"`, args)
	}
	written, err := rdb.Keys(ctx, prefix+":nosuch:*").Result()
	require.NoError(t, err)
	require.Empty(t, written, "nothing written")
	out, err := run("queues")
	require.NoError(t, err)
	require.NotContains(t, out, "nosuch", "no phantom queue")
}
