package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWrongTypeKeysNamed: a queue key or a job hash that another program
// overwrote with a string. The read commands (jobs, job, stalled, workers,
// orphans, queues) answered with Redis's raw "WRONGTYPE Operation against a
// key holding the wrong kind of value script: <sha>, on @user_script:23.",
// which names no key; each now names the key, its type and the type BullMQ
// keeps there. `promote <id>` and `retry <id>` on a job whose hash is a
// string took the id out of delayed (failed) and then failed, leaving it in
// no state; they now refuse before any write, saying which key, and the id
// stays where it was. cancel and remove name the key too. A line read
// "drover: job d1: not promoted: ...: drover: job key ...", the scripts'
// "drover: " inside the CLI's; the inner one is dropped. `drover jobs`
// over every queue lists the readable ones and names the broken one; the
// broken one's error hid them all.
func TestWrongTypeKeysNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix)
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(ctx, args)
		msg := errOut.String()
		if err != nil {
			msg += err.Error()
		}
		return out.String() + msg, err
	}
	for _, q := range []string{"broken", "jobs"} {
		_, err := run("add", q, "x")
		require.NoError(t, err)
	}

	// The wait list of "broken" is a string.
	wait := prefix + ":broken:wait"
	require.NoError(t, rdb.Del(ctx, wait).Err())
	require.NoError(t, rdb.Set(ctx, wait, "oops", 0).Err())
	for _, args := range [][]string{
		{"queues"}, {"jobs", "broken", "--state", "waiting"}, {"stalled", "broken"}, {"workers", "broken"},
		{"orphans", "broken"}, {"limits", "broken"},
	} {
		out, err := run(args...)
		require.Error(t, err, args)
		require.Contains(t, out, "queue key "+wait+" holds a string, not a list", args)
		require.NotContains(t, out, "@user_script", args)
	}

	// Listing every queue: the readable one's jobs are shown, the broken
	// one named (the broken queue's error hid every other queue's jobs).
	for _, asJSON := range []bool{false, true} {
		args := []string{"jobs", "--state", "waiting"}
		if asJSON {
			args = append(args, "--json")
		}
		out, err := run(args...)
		require.Error(t, err, args)
		require.Contains(t, out, "queue key "+wait+" holds a string, not a list", args)
		if asJSON {
			require.Contains(t, out, `"queue": "jobs"`)
		} else {
			require.Contains(t, out, "jobs: 1 waiting jobs, 1 shown")
		}
	}

	// In "jobs", job hashes that are strings: one delayed, one failed, one
	// waiting.
	for id, set := range map[string]string{"d1": "delayed", "f1": "failed"} {
		require.NoError(t, rdb.Set(ctx, prefix+":jobs:"+id, "oops", 0).Err())
		require.NoError(t, rdb.ZAdd(ctx, prefix+":jobs:"+set, redis.Z{Score: 1, Member: id}).Err())
	}
	require.NoError(t, rdb.Set(ctx, prefix+":jobs:w1", "oops", 0).Err())
	require.NoError(t, rdb.LPush(ctx, prefix+":jobs:wait", "w1").Err())
	for _, tc := range []struct {
		args []string
		key  string
	}{
		{[]string{"job", "jobs", "w1"}, "w1"},
		{[]string{"jobs", "jobs", "--state", "failed"}, "f1"},
		{[]string{"promote", "jobs", "d1"}, "d1"},
		{[]string{"retry", "jobs", "f1"}, "f1"},
		{[]string{"cancel", "jobs", "w1"}, "w1"},
		{[]string{"remove", "jobs", "w1"}, "w1"},
	} {
		out, err := run(tc.args...)
		require.Error(t, err, tc.args)
		require.Contains(t, out, "job key "+prefix+":jobs:"+tc.key+" holds a string, not a hash", tc.args)
		require.NotContains(t, out, "@user_script", tc.args)
		// The scripts' refusals begin "drover: ", and so does every line
		// the CLI prints: one is enough.
		require.NotContains(t, out, ": drover: ", tc.args)
	}
	_, err := rdb.ZScore(ctx, prefix+":jobs:delayed", "d1").Result()
	require.NoError(t, err, "the refused promote left the id in delayed")
	_, err = rdb.ZScore(ctx, prefix+":jobs:failed", "f1").Result()
	require.NoError(t, err, "the refused retry left the id in failed")
	wl, err := rdb.LRange(ctx, prefix+":jobs:wait", 0, -1).Result()
	require.NoError(t, err)
	require.Contains(t, wl, "w1", "the refused cancel and remove left the id in wait")
	require.NotContains(t, wl, "d1")
	require.NotContains(t, wl, "f1")
}
