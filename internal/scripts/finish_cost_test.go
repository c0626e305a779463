package scripts

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestFinishRedisCommands counts the Redis commands one finishJobs call
// runs for a batch of plain completions (INFO commandstats on a server of
// its own), the worker's hot path: a change that adds a command per job,
// or per call, shows here. The call fetches nothing (count 0).
//
// A batch of one (14): HGETALL meta, MGET locks, EXISTS (the completion's
// children), LREM active, DEL lock, SREM stalled, HSET, ZADD completed,
// XTRIM events and XADD completed (BullMQ's moveToFinished trims before it
// writes the events: with a capped stream, XADD MAXLEN ~ would trim after
// the first of them and keep one node fewer); the drained check (LLEN
// wait, LLEN active, ZCARD prioritized) and XADD drained. A call that
// fetches nothing promotes no delayed job (no ZRANGEBYSCORE), as BullMQ's moveToFinished without
// fetchNext.
// A batch of 50 (114 = 2 per job + 14): the same, with LLEN + LRANGE + DEL
// of the active list in place of the LREMs, one XTRIM (before the last
// job's event: the last of BullMQ's per-job trims decides the stream), and
// per job one HSET and one XADD.
func TestFinishRedisCommands(t *testing.T) {
	t.Parallel()
	rdb := costServer(t)
	ctx := context.Background()

	run := func(t *testing.T, name string, n int) int {
		t.Helper()
		k := keys.New("cost", name)
		recs := make([]AddRecord, n)
		for i := range recs {
			recs[i] = AddRecord{Name: "j", Timestamp: 1, Data: "{}", Opts: "{}"}
		}
		_, err := AddJobs(ctx, rdb, k, NewCall(time.Minute), recs)
		require.NoError(t, err)
		now := time.Now().UnixMilli()
		f, err := MoveToActive(ctx, rdb, k, FetchArgs{Now: now, Count: n, Token: "t", LockDuration: 30000, WorkerName: "w"})
		require.NoError(t, err)
		require.Len(t, f.Jobs, n)
		fin := make([]FinishRecord, n)
		for i, j := range f.Jobs {
			fin[i] = FinishRecord{ID: j.ID, Token: "t:" + j.ID, Kind: FinishCompleted, Value: "null", AttemptsMade: 1, Attempts: 1}
		}
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		errs, _, err := FinishJobs(ctx, rdb, k, FetchArgs{Now: now, Token: "t2", LockDuration: 30000, WorkerName: "w"}, 0, fin)
		require.NoError(t, err)
		for _, e := range errs {
			require.NoError(t, e)
		}
		return redistest.ScriptCommands(t, rdb)
	}
	for _, tt := range []struct {
		n    int
		want int
	}{
		{1, 14},
		{50, 114},
	} {
		got := run(t, "q"+strconv.Itoa(tt.n), tt.n)
		t.Logf("finishJobs of %d plain completions: %d redis commands", tt.n, got)
		require.Equal(t, tt.want, got, "commands of a finishJobs call of %d plain completions", tt.n)
	}
}

// TestFinishAndFetchOneRedisCommands counts the commands of a worker's
// call at concurrency 1: one completion and the fetch of the next job.
// 16: the completion's 10 of TestFinishRedisCommands less the drained
// check (a job was fetched), ZRANGEBYSCORE (due delayed jobs), one LMOVE
// from wait to active (an RPOP and an LPUSH for a batch), HGETALL, SET
// lock, HSET, XADD active.
func TestFinishAndFetchOneRedisCommands(t *testing.T) {
	t.Parallel()
	rdb := costServer(t)
	ctx := context.Background()
	k := keys.New("cost", "c1")
	_, err := AddJobs(ctx, rdb, k, NewCall(time.Minute), []AddRecord{
		{Name: "j", Timestamp: 1, Data: "{}", Opts: "{}"}, {Name: "j", Timestamp: 1, Data: "{}", Opts: "{}"},
	})
	require.NoError(t, err)
	now := time.Now().UnixMilli()
	f, err := MoveToActive(ctx, rdb, k, FetchArgs{Now: now, Count: 1, Token: "t", LockDuration: 30000, WorkerName: "w"})
	require.NoError(t, err)
	require.Len(t, f.Jobs, 1)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	errs, next, err := FinishJobs(ctx, rdb, k, FetchArgs{Now: now, Count: 1, Token: "t2", LockDuration: 30000, WorkerName: "w"}, 0,
		[]FinishRecord{{ID: f.Jobs[0].ID, Token: "t:" + f.Jobs[0].ID, Kind: FinishCompleted, Value: "null", AttemptsMade: 1, Attempts: 1}})
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}
	require.Len(t, next.Jobs, 1)
	require.NotEqual(t, f.Jobs[0].ID, next.Jobs[0].ID)
	calls := redistest.CommandCalls(t, rdb)
	t.Logf("finish one, fetch one: %d redis commands: %v", redistest.ScriptCommands(t, rdb), calls)
	require.Equal(t, 1, calls["lmove"], "the next job moves from wait to active with one LMOVE")
	require.Zero(t, calls["rpop"]+calls["lpush"], "no RPOP and LPUSH for one job")
	require.Equal(t, 16, redistest.ScriptCommands(t, rdb), "commands of a finish of one job that fetches one")
	active, err := rdb.LRange(ctx, k.Active(), 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{next.Jobs[0].ID}, active)
}

// TestIdlePickupRedisCommands counts the commands of the fetch an idle
// worker makes when a marker wakes it: one job waits, the worker asks for
// its free slots (10). 12: EXISTS (the settled-call mark), HMGET meta,
// ZRANGEBYSCORE (due delayed jobs), RPOP, ZPOPMIN (the rest of the slots:
// none prioritized), DEL of the priority counter (prioritized is empty: a
// Node worker's next fetch for its free slots deletes it too, at once),
// LPUSH active, HGETALL, SET lock, HSET, XADD active, and ZRANGE (the
// earliest delayed job: the worker waits with slots left, and no marker may
// come when it is due).
func TestIdlePickupRedisCommands(t *testing.T) {
	t.Parallel()
	rdb := costServer(t)
	ctx := context.Background()
	k := keys.New("cost", "idle")
	_, err := AddJobs(ctx, rdb, k, NewCall(time.Minute), []AddRecord{{Name: "j", Timestamp: 1, Data: "{}", Opts: "{}"}})
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	f, err := MoveToActive(ctx, rdb, k, FetchArgs{Now: time.Now().UnixMilli(), Count: 10, Token: "t", LockDuration: 30000, WorkerName: "w"})
	require.NoError(t, err)
	require.Len(t, f.Jobs, 1)
	calls := redistest.CommandCalls(t, rdb)
	t.Logf("idle pickup fetch: %d redis commands: %v", redistest.ScriptCommands(t, rdb), calls)
	require.Equal(t, 1, calls["del"], "DELs of the priority counter")
	require.Equal(t, 12, redistest.ScriptCommands(t, rdb), "commands of an idle worker's fetch of one job")
}

// costServer is a redis-server of the test's own, so that INFO
// commandstats counts only its commands, with the scripts loaded.
func costServer(t *testing.T) *redis.Client {
	t.Helper()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	require.NoError(t, Load(context.Background(), rdb))
	return rdb
}
