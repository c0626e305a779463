package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestSchedulerUpsertRefusesBadNumbers: `drover scheduler upsert` names a
// bad --every, --limit or --attempts as a usage error and writes nothing
// to Redis, not even an audit entry. --every 0s said "needs exactly one of
// --every and --pattern" though --every was given; a negative --every or
// --limit reached Redis (the queue's keys and a refused audit entry were
// written, exit 1); a negative --attempts was dropped without a word. A
// --pattern or --tz the scheduler refuses was the same: exit 1 after
// Redis, with a refused audit entry.
func TestSchedulerUpsertRefusesBadNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	for _, tc := range []struct {
		flags []string
		says  string
	}{
		{[]string{"--every", "0s"}, "--every must be at least 1ms, got 0s"},
		{[]string{"--every", "-5s"}, "--every must be at least 1ms, got -5s"},
		{[]string{"--every", "1m", "--limit", "-1"}, "--limit must not be negative"},
		{[]string{"--every", "1m", "--attempts", "-1"}, "--attempts must not be negative"},
		{[]string{"--pattern", "* * * * *", "--every", "1m"}, "exactly one of --every and --pattern"},
		{[]string{"--every", "1m", "--tz", "Europe/Paris"}, "--tz applies to --pattern only"},
		{[]string{"--pattern", "bad cron"}, `--pattern: cron pattern "bad cron": want 5 or 6 fields`},
		{[]string{"--pattern", "61 * * * *"}, "--pattern: "},
		{[]string{"--pattern", "* * * * *", "--tz", "Mars/Olympus"}, `--tz: time zone "Mars/Olympus"`},
	} {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append([]string{"scheduler", "upsert", "mail", "s1",
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}, tc.flags...))
		var usage *usageError
		require.ErrorAs(t, err, &usage, "%v: %s", tc.flags, out.String())
		require.ErrorContains(t, err, tc.says, tc.flags)
	}
	written, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, written, "nothing written, not even an audit entry")
}

// TestSchedulerUpsertThatWouldNeverRun: a --pattern with no next time
// (February 30th) stores nothing, and drover says why. Before, it failed
// with `get job scheduler "s1" from queue "mail": job scheduler not found`,
// the read-back of a scheduler UpsertJobScheduler had not stored.
func TestSchedulerUpsertThatWouldNeverRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	var out bytes.Buffer
	err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"scheduler", "upsert", "mail", "s1",
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix, "--pattern", "0 0 30 2 *"})
	require.EqualError(t, err, `job scheduler "s1" of queue "mail" would never run (its pattern has no next time, or --limit is reached): nothing stored`)
	n, err := rdb.Exists(ctx, prefix+":mail:repeat:s1").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestFlagsACommandDoesNotTake: `drover scheduler remove` took upsert's
// flags (--every, --data, ...) and ignored them, and `drover limits` said
// "invalid option: block and unblock exclude each other" and "block must
// not be negative", naming no flag. Each is a usage error naming the
// flags, and the scheduler stays.
func TestFlagsACommandDoesNotTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) error {
		var out bytes.Buffer
		return (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args,
			"--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
	}
	require.NoError(t, run("scheduler", "upsert", "mail", "s1", "--every", "1h"))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"scheduler", "remove", "mail", "s1", "--every", "1s", "--data", "{}"}, "scheduler remove takes none of upsert's flags, got --data, --every"},
		{[]string{"limits", "mail", "--block", "10m", "--unblock"}, "--block and --unblock exclude each other"},
		{[]string{"limits", "mail", "--block", "-1s"}, "--block must not be negative"},
		// --block 0 showed the limits and changed nothing, without a word.
		{[]string{"limits", "mail", "--block", "0"}, "--block 0 blocks nothing: give a duration of at least 1ms, or --unblock to end a block"},
		{[]string{"limits", "mail", "--block", "0s"}, "--block 0 blocks nothing"},
	} {
		err := run(tc.args...)
		require.Equal(t, 2, exitCode(err), "%q: %v", tc.args, err)
		require.ErrorContains(t, err, tc.says)
	}
	n, err := rdb.Exists(ctx, prefix+":mail:repeat:s1").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the refused remove left the scheduler")
}
