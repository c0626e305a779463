package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestDifferentialOddNumericHashFields: a job whose hash has a numeric
// field that is no number ("abc", as another tool or an old version may
// leave it), processed by a Node worker and, on a twin prefix, by a drover
// worker. BullMQ parses such a field to NaN in JavaScript and runs the job
// all the same; drover reads it as 0 (absent) and runs it too, and where
// Node's outcome is a sane one both leave the same Redis state and events.
//
// Two fields are written by BullMQ's scripts with HINCRBY, which refuses a
// value that is no integer, and there Node's outcome is not sane, so drover
// does not follow it: with atm "abc" Node's finish fails after taking the
// job out of active (the job is in no state at all), and with ats "abc"
// its fetch fails after moving the job to active (the job stalls, goes
// back to wait and fails the same way again, for ever). drover runs both
// jobs to their end, counting the field from 0. attemptsMade (the pre-v5 name) NaN
// never passes BullMQ's attemptsMade+1 < attempts, so Node never retries
// such a job; drover counts from 0 and does.
func TestDifferentialOddNumericHashFields(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	const odd = "abc"
	fields := []struct {
		field string
		// nodeSane: Node's outcome is the one drover must reach.
		nodeSane bool
		// nodeRetries: Node retries a failed attempt (attemptsMade NaN
		// never passes BullMQ's attemptsMade+1 < attempts).
		nodeRetries bool
	}{
		{"timestamp", true, true},
		{"delay", true, true},
		{"priority", true, true},
		{"processedOn", true, true},
		{"finishedOn", true, true},
		{"stc", true, true},
		{"attemptsMade", true, false},
		{"atm", false, false},
		{"ats", false, false},
	}
	behaviors := []struct {
		name string
		bh   bullmqoracle.Behavior
		// final is the state the job ends in when it is run normally.
		final string
	}{
		{"Completes", bullmqoracle.Echo(), "completed"},
		{"FailsTwice", bullmqoracle.Fail("boom"), "failed"},
	}
	for _, f := range fields {
		for _, bh := range behaviors {
			t.Run(f.field+"/"+bh.name, func(t *testing.T) {
				t.Parallel()
				run := func(by impl) (string, *statedump.Snapshot) {
					b := setup(t)
					id := b.add(t, droverImpl, jobSpec{name: "n", data: map[string]any{"a": 1}, attempts: 2,
						backoff: &drover.Backoff{Type: "fixed", Delay: 100 * time.Millisecond}})
					require.NoError(t, b.rdb.HSet(ctx, b.prefix+":"+queueName+":"+id, f.field, odd).Err())
					stop := b.startWorker(t, by, workerSpec{behavior: bh.bh, lockDuration: time.Second, stalledInterval: 500 * time.Millisecond})
					state := waitSettled(t, b, id, 5*time.Second)
					stop()
					return state, comparableDump(t, b.rdb, b.prefix, dumpOptions{workersRan: true})
				}
				nodeState, nodeDump := run(nodeImpl)
				drvState, drvDump := run(droverImpl)
				require.Equal(t, bh.final, drvState, "drover runs the job, reading %s %q as 0", f.field, odd)
				switch {
				case f.nodeSane && (f.nodeRetries || bh.final == "completed"):
					require.Equal(t, bh.final, nodeState)
					requireSameState(t, nodeDump, drvDump)
				case f.nodeSane:
					// Node fails the job for good at its first failure.
					require.Equal(t, "failed", nodeState)
					require.Equal(t, "1", nodeDump.Keys["q:1"].Hash["atm"], "Node did not retry")
					require.Equal(t, "2", drvDump.Keys["q:1"].Hash["atm"], "drover retried")
				case f.field == "atm":
					require.Equal(t, "", nodeState, "Node's finish fails on HINCRBY atm and loses the job")
				case f.field == "ats":
					require.Contains(t, []string{"wait", "active"}, nodeState, "Node's fetch fails on HINCRBY ats, again and again")
				}
				t.Logf("Node: %q, drover: %q", nodeState, drvState)
			})
		}
	}
}

// TestDifferentialOddStalledCounter: a job left active without a lock (its
// worker died) whose stc field is no number. BullMQ's stalled check takes
// it out of active, then fails on HINCRBY stc: the job is in no state, lost.
// drover's check counts the stall from 0, puts the job back in wait and
// runs it.
func TestDifferentialOddStalledCounter(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	run := func(by impl) (string, map[string]string) {
		b := setup(t)
		id := b.add(t, droverImpl, jobSpec{name: "n", data: map[string]any{"a": 1}})
		key := func(s string) string { return b.prefix + ":" + queueName + ":" + s }
		require.NoError(t, b.rdb.LMove(ctx, key("wait"), key("active"), "RIGHT", "LEFT").Err())
		require.NoError(t, b.rdb.HSet(ctx, key(id), "stc", "abc", "ats", 1, "processedOn", time.Now().UnixMilli()).Err())
		stop := b.startWorker(t, by, workerSpec{lockDuration: time.Second, stalledInterval: 300 * time.Millisecond})
		state := waitSettled(t, b, id, 5*time.Second)
		stop()
		h, err := b.rdb.HGetAll(ctx, key(id)).Result()
		require.NoError(t, err)
		return state, h
	}
	nodeState, _ := run(nodeImpl)
	require.Equal(t, "", nodeState, "Node's stalled check fails on HINCRBY stc after taking the job out of active")
	drvState, h := run(droverImpl)
	require.Equal(t, "completed", drvState)
	require.Equal(t, "1", h["stc"], "the stall counted from 0")
	require.Equal(t, "2", h["ats"])
}

// TestDifferentialNaNPriority: a job whose priority is "NaN", retried after
// a backoff. BullMQ's promotion of the retry reads the priority with Lua's
// tonumber (NaN, not 0), sends the job to prioritized with a NaN score, and
// ZADD refuses it after the job left delayed: the job is lost. drover reads
// such a priority as 0 and the retry runs.
func TestDifferentialNaNPriority(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	run := func(by impl) string {
		b := setup(t)
		id := b.add(t, droverImpl, jobSpec{name: "n", attempts: 2, backoff: &drover.Backoff{Type: "fixed", Delay: 100 * time.Millisecond}})
		require.NoError(t, b.rdb.HSet(ctx, b.prefix+":"+queueName+":"+id, "priority", "NaN").Err())
		stop := b.startWorker(t, by, workerSpec{behavior: bullmqoracle.Fail("boom")})
		state := waitSettled(t, b, id, 5*time.Second)
		stop()
		return state
	}
	require.Equal(t, "", run(nodeImpl), "Node loses the job")
	require.Equal(t, "failed", run(droverImpl), "drover retries it, then fails it for good")
}

// waitSettled waits up to timeout for job id to be completed or failed
// and returns the state it is in then: a state key's name ("wait",
// "active", "delayed", …) or "" when no state lists it.
func waitSettled(t *testing.T, b *bundle, id string, timeout time.Duration) string {
	t.Helper()
	ctx := context.Background()
	key := func(s string) string { return b.prefix + ":" + queueName + ":" + s }
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range []string{"completed", "failed"} {
			if _, err := b.rdb.ZScore(ctx, key(s), id).Result(); err == nil {
				return s
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range []string{"wait", "paused", "active"} {
		if _, err := b.rdb.LPos(ctx, key(s), id, redis.LPosArgs{}).Result(); err == nil {
			return s
		}
	}
	for _, s := range []string{"delayed", "prioritized", "waiting-children"} {
		if _, err := b.rdb.ZScore(ctx, key(s), id).Result(); err == nil {
			return s
		}
	}
	return ""
}
