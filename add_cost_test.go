package drover_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestAddRedisCommands counts the Redis commands the add script runs per
// job (INFO commandstats on a server of its own), so a change to the
// producers' hot path shows its cost: a single Add, and AddBulk per job.
// The exactly-once token costs one GET and one SET per script call; one
// HMGET reads the meta hash for the event cap and the pause check.
func TestAddRedisCommands(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()
	_, err := q.Add(ctx, "warm-up", nil, nil) // loads the script
	require.NoError(t, err)

	count := func(run func()) int {
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		run()
		return redistest.ScriptCommands(t, rdb)
	}
	const n = 200
	single := count(func() {
		for range n {
			_, err := q.Add(ctx, "j", nil, nil)
			require.NoError(t, err)
		}
	})
	bulk := count(func() {
		jobs := make([]drover.BulkJob, n)
		_, err := q.AddBulk(ctx, jobs)
		require.NoError(t, err)
	})
	t.Logf("redis commands per job: Add %.2f, AddBulk %.2f", float64(single)/n, float64(bulk)/n)
	require.LessOrEqual(t, single, 9*n, "Add's commands per job")
	require.LessOrEqual(t, bulk, 4*n, "AddBulk's commands per job")
}

// TestAddDuplicatesReadInOneRoundTrip: an add that hits an existing job (a
// custom id that exists, or a deduplication id owned by another job)
// returns that job, read back after the script. Every hit of one AddBulk
// chunk is read in one round trip: a bulk re-add of n jobs is two round
// trips, not n + 1. The results still carry each existing job's own data.
func TestAddDuplicatesReadInOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()

	const n = 100
	first := make([]drover.BulkJob, n)
	again := make([]drover.BulkJob, n)
	for i := range n {
		id := "order-" + strconv.Itoa(i)
		first[i] = drover.BulkJob{Name: "j", Data: map[string]int{"v": i}, Opts: &drover.JobOptions{JobID: id}}
		again[i] = drover.BulkJob{Name: "j", Data: map[string]int{"v": -1}, Opts: &drover.JobOptions{JobID: id}}
	}
	_, err := q.AddBulk(ctx, first)
	require.NoError(t, err)

	reads := func() int64 {
		info, err := rdb.Info(ctx, "stats").Result()
		require.NoError(t, err)
		return infoInt(t, info, "total_reads_processed")
	}
	before := reads()
	res, err := q.AddBulk(ctx, again)
	require.NoError(t, err)
	// The two INFO calls are reads too: one is counted in the delta.
	used := reads() - before - 1
	require.Len(t, res, n)
	for i, r := range res {
		require.Equal(t, drover.AddDuplicate, r.Outcome, "job %d", i)
		require.Equal(t, "order-"+strconv.Itoa(i), r.Job.ID)
		require.JSONEq(t, `{"v":`+strconv.Itoa(i)+`}`, string(r.Job.Data), "job %d carries the stored data, not the re-add's", i)
	}
	require.LessOrEqual(t, used, int64(2), "round trips of a bulk re-add of %d jobs (the add, then one read of the existing jobs)", n)

	// Deduplicated single adds: the result names the owner with its data.
	owner, err := q.Add(ctx, "d", map[string]string{"who": "owner"}, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "once"}})
	require.NoError(t, err)
	hit, err := q.Add(ctx, "d", map[string]string{"who": "late"}, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "once"}})
	require.NoError(t, err)
	require.Equal(t, drover.AddDeduplicated, hit.Outcome)
	require.Equal(t, owner.Job.ID, hit.Job.ID)
	require.JSONEq(t, `{"who":"owner"}`, string(hit.Job.Data))
	require.Equal(t, drover.StateWaiting, hit.ExistingState)
}

// roundTrips counts the commands and pipelines a client sends.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestAddHitIsOneRoundTrip: an add that finds its job id taken or its
// deduplication id owned answers with the existing job, read by the add
// script itself. It used to read that job in a second round trip after the
// add, which made a producer adding duplicates half as fast.
func TestAddHitIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()
	_, err := q.Add(ctx, "first", map[string]int{"v": 1}, &drover.JobOptions{JobID: "a"})
	require.NoError(t, err)
	_, err = q.Add(ctx, "owner", map[string]int{"v": 2}, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d"}})
	require.NoError(t, err)

	var rt roundTrips
	rdb.AddHook(&rt)
	dup, err := q.Add(ctx, "second", map[string]int{"v": 3}, &drover.JobOptions{JobID: "a"})
	require.NoError(t, err)
	require.Equal(t, drover.AddDuplicate, dup.Outcome)
	require.Equal(t, "first", dup.Job.Name)
	require.JSONEq(t, `{"v":1}`, string(dup.Job.Data))
	require.Equal(t, drover.StateWaiting, dup.ExistingState)

	hit, err := q.Add(ctx, "again", map[string]int{"v": 4}, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d"}})
	require.NoError(t, err)
	require.Equal(t, drover.AddDeduplicated, hit.Outcome)
	require.Equal(t, "owner", hit.Job.Name)
	require.JSONEq(t, `{"v":2}`, string(hit.Job.Data))
	require.Equal(t, "d", hit.Job.DeduplicationID)
	require.Equal(t, int64(2), rt.n.Load(), "round trips for two adds that hit")

	// In one bulk call: a hit on a job created earlier in the same call.
	rt.n.Store(0)
	res, err := q.AddBulk(ctx, []drover.BulkJob{
		{Name: "b1", Data: map[string]int{"v": 5}, Opts: &drover.JobOptions{JobID: "b"}},
		{Name: "b2", Data: map[string]int{"v": 6}, Opts: &drover.JobOptions{JobID: "b"}},
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), rt.n.Load(), "round trips for a bulk add with a hit")
	require.Equal(t, drover.AddDuplicate, res[1].Outcome)
	require.Equal(t, "b1", res[1].Job.Name)
	require.JSONEq(t, `{"v":5}`, string(res[1].Job.Data))
}

// TestAddDuplicateWithinOneCall: a duplicate (custom id) or deduplicated
// add whose existing job an earlier add of the same call created answers
// with that job as a read of it would give, and the script does not read
// back the hash it has just written (add_dedup50: most duplicates meet
// their owner in the same group-committed call). Priorities, LIFO and a
// deduplication id on the owner, and an owner made by an earlier call, too.
func TestAddDuplicateWithinOneCall(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()

	_, err := q.Add(ctx, "earlier", map[string]int{"v": 0}, &drover.JobOptions{JobID: "old"})
	require.NoError(t, err)

	dedup := func(id string) *drover.JobOptions {
		return &drover.JobOptions{Deduplication: &drover.Deduplication{ID: id}}
	}
	jobs := []drover.BulkJob{
		{Name: "a", Data: map[string]int{"v": 1}, Opts: &drover.JobOptions{JobID: "a", Priority: 7}},
		{Name: "b", Data: map[string]int{"v": 2}, Opts: &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "op-b"}, LIFO: true}},
		{Name: "a2", Data: map[string]int{"v": -1}, Opts: &drover.JobOptions{JobID: "a"}},
		{Name: "b2", Data: map[string]int{"v": -2}, Opts: dedup("op-b")},
		{Name: "old2", Data: map[string]int{"v": -3}, Opts: &drover.JobOptions{JobID: "old"}},
	}
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	res, err := q.AddBulk(ctx, jobs)
	require.NoError(t, err)
	require.Equal(t, 1, redistest.CommandCalls(t, rdb)["hgetall"], "HGETALLs: the earlier call's job only")

	want := []struct {
		outcome drover.AddOutcome
		state   drover.JobState
		of      int // the result whose job is the existing one
	}{
		{drover.AddCreated, "", 0},
		{drover.AddCreated, "", 1},
		{drover.AddDuplicate, drover.StatePrioritized, 0},
		{drover.AddDeduplicated, drover.StateWaiting, 1},
		{drover.AddDuplicate, drover.StateWaiting, -1},
	}
	for i, w := range want {
		r := res[i]
		require.Equal(t, w.outcome, r.Outcome, "result %d", i)
		require.Equal(t, w.state, r.ExistingState, "result %d", i)
		if w.of < 0 {
			continue
		}
		require.Equal(t, res[w.of].Job.ID, r.Job.ID, "result %d", i)
		if i == w.of {
			continue
		}
		// The job as a read of it gives, field by field.
		read, err := q.GetJob(ctx, r.Job.ID)
		require.NoError(t, err)
		got := *r.Job
		require.Equal(t, read.Name, got.Name, "result %d", i)
		require.JSONEq(t, string(read.Data), string(got.Data), "result %d", i)
		require.Equal(t, read.RawOpts, got.RawOpts, "result %d", i)
		require.Equal(t, read.Opts, got.Opts, "result %d", i)
		require.True(t, read.Timestamp.Equal(got.Timestamp), "result %d", i)
		require.Equal(t, read.Delay, got.Delay, "result %d", i)
		require.Equal(t, read.Priority, got.Priority, "result %d", i)
		require.Equal(t, read.DeduplicationID, got.DeduplicationID, "result %d", i)
	}
	require.JSONEq(t, `{"v":0}`, string(res[4].Job.Data), "the earlier call's job, read by the script")
}
