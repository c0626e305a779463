package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestPauseSaysWhatItChanged: `drover pause` on a paused queue said "q:
// paused" and `drover resume` on a running one "q: resumed", as if they had
// changed something, and a queue named twice was reported twice. Each
// queue is now reported once, as changed or as already in that state
// (--json lists the unchanged ones), and the queue ends in the state asked.
func TestPauseSaysWhatItChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	for _, name := range []string{"a", "b"} {
		q, err := drover.NewQueue(rdb, name, &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		_, err = q.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
	}
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args,
			"--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)), out.String())
		return out.String()
	}
	require.Equal(t, "a: not paused, nothing to resume\n", run("resume", "a"))
	require.Equal(t, "a: paused\n", run("pause", "a"))
	require.Equal(t, "a: already paused\nb: paused\n", run("pause", "a", "b", "a"))
	var got struct {
		Queues    []string `json:"queues"`
		Unchanged []string `json:"unchanged"`
	}
	require.NoError(t, json.Unmarshal([]byte(run("resume", "a", "b", "--json")), &got))
	require.Equal(t, []string{"a", "b"}, got.Queues)
	require.Equal(t, []string{}, got.Unchanged)
	paused, err := rdb.HExists(ctx, prefix+":a:meta", "paused").Result()
	require.NoError(t, err)
	require.False(t, paused)
}
