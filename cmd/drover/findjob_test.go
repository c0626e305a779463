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

// TestJobWithoutQueueSkipsADamagedQueue: `drover job <id>` with no queue
// searches every queue. A job hash of that id in another queue that another
// program overwrote with a string made the whole search fail with that
// queue's WRONGTYPE error, so the job in the healthy queue could not be
// shown by id alone. The search now shows the readable match, then names
// the damaged queue in its error (exit 1: the search was not complete, as
// with drover jobs over every queue).
func TestJobWithoutQueueSkipsADamagedQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) (stdout, stderr string, err error) {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		err = (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, args)
		return out.String(), errOut.String(), err
	}
	for _, q := range []string{"broken", "good"} {
		_, _, err := run("add", q, "x", "--opts", `{"jobId":"j1"}`)
		require.NoError(t, err)
	}
	damaged := prefix + ":broken:j1"
	require.NoError(t, rdb.Del(ctx, damaged).Err())
	require.NoError(t, rdb.Set(ctx, damaged, "oops", 0).Err())

	out, _, err := run("job", "j1")
	require.Error(t, err)
	require.Contains(t, out, `job j1 "x" in queue good`)
	require.Contains(t, err.Error(), `the search for job "j1" was not complete`)
	require.Contains(t, err.Error(), `queue "broken": job key `+damaged+" holds a string, not a hash")
	require.Equal(t, 1, exitCode(err))

	out, _, err = run("job", "j1", "--json")
	require.Error(t, err)
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &d), out)
	require.Equal(t, "good", d["queue"])
	require.Contains(t, err.Error(), damaged)

	// Only the damaged queue holds the id: not found, and why it may be.
	require.NoError(t, rdb.Del(ctx, prefix+":good:j1").Err())
	require.NoError(t, rdb.LRem(ctx, prefix+":good:wait", 0, "j1").Err())
	_, _, err = run("job", "j1")
	require.ErrorIs(t, err, drover.ErrJobNotFound)
	require.Contains(t, err.Error(), damaged+" holds a string, not a hash")
}
