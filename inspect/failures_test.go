package inspect_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

func TestNormalizeError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"Numbers", "order 4711: timeout after 30012ms", "order <n>: timeout after <n>ms"},
		{"UUID", "user 3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b not found", "user <id> not found"},
		{"Hex", "object 5f3c9a2be1d04f7a missing", "object <hex> missing"},
		{"Quoted", `unknown field "amount_cents" in request`, "unknown field <s> in request"},
		{"FirstLineAndSpaces", "Error: boom   now\n    at x (y.js:1:2)", "Error: boom now"},
		{"WordsStay", "card declined", "card declined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, inspect.NormalizeError(tc.in))
		})
	}
}

func TestFailureGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		var n int
		require.NoError(t, job.DecodeData(&n))
		switch n % 3 {
		case 0:
			return nil, drover.Unrecoverable(fmt.Errorf("card %d declined", n))
		case 1:
			return nil, fmt.Errorf("gateway timeout after %dms", 1000+n)
		}
		return nil, errors.New("refused")
	}, nil)
	var ids []string
	q := b.queue(t, "q")
	for n := range 9 {
		res, err := q.Add(ctx, "charge", n, nil)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	for _, id := range ids {
		b.waitState(t, "q", id, drover.StateFailed)
	}
	rep, err := b.ins.FailureGroups(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, 9, rep.Scanned)
	require.Len(t, rep.Groups, 3)
	got := map[string]inspect.FailureGroup{}
	for _, g := range rep.Groups {
		got[g.Error] = g
		require.Equal(t, 3, g.Count)
		require.False(t, g.FirstSeen.After(g.LastSeen.Time))
	}
	require.Equal(t, 3, got["card <n> declined"].Unrecoverable)
	require.Equal(t, `error="gateway timeout after <n>ms"`, got["gateway timeout after <n>ms"].Filter)
	// The group's filter selects exactly its jobs, in lists and retries.
	f, err := inspect.ParseFilter(got["gateway timeout after <n>ms"].Filter)
	require.NoError(t, err)
	res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{Filter: f, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 3, res.Matched)
	for _, j := range res.Sample {
		require.Contains(t, j.FailedReason, "gateway timeout")
	}

	matches, err := b.ins.FindJob(ctx, ids[4])
	require.NoError(t, err)
	require.Equal(t, []inspect.JobMatch{{Queue: "q", ID: ids[4], Name: "charge", State: drover.StateFailed}}, matches)
	matches, err = b.ins.FindJob(ctx, "no-such-id")
	require.NoError(t, err)
	require.Empty(t, matches)
}

// TestConflicts: a retry refused because a worker still holds the job's lock
// is recorded with the holder, the lock's TTL and how long the job ran.
func TestConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("boom")
	}, nil)
	id := b.add(t, "q", "x", nil)
	b.waitState(t, "q", id, drover.StateFailed)
	// A worker that kept the lock of the job it finished.
	require.NoError(t, b.rdb.Set(ctx, b.prefix+":q:"+id+":lock", "sticky-worker:1", 20*time.Second).Err())
	_, err := b.ins.RetryJob(ctx, "q", id, false)
	require.ErrorIs(t, err, drover.ErrJobLocked)
	res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{Filter: inspect.Filter{Name: "x"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Conflicts)
	cs := b.ins.Conflicts("q")
	require.Len(t, cs, 2)
	require.Equal(t, "bulk-retry", cs[0].Op)
	require.Equal(t, "retry", cs[1].Op)
	for _, c := range cs {
		require.Equal(t, id, c.JobID)
		require.Equal(t, "sticky-worker", c.Worker)
		require.Greater(t, c.LockTTL, 10*time.Second)
		require.Positive(t, c.HeldFor)
	}
	require.Empty(t, b.ins.Conflicts("other"))
}

// TestThroughput counts finished jobs per minute from the finish times.
func TestThroughput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "bad" {
			return nil, errors.New("no")
		}
		return nil, nil
	}, nil)
	var ids []string
	for range 5 {
		ids = append(ids, b.add(t, "q", "good", nil))
	}
	for range 3 {
		ids = append(ids, b.add(t, "q", "bad", &drover.JobOptions{Attempts: 1}))
	}
	for k, id := range ids {
		b.waitState(t, "q", id, map[bool]drover.JobState{true: drover.StateCompleted, false: drover.StateFailed}[k < 5])
	}
	// Two old finishes, an hour and a half and 30 minutes ago.
	k := b.prefix + ":q:"
	require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(float64(time.Now().Add(-90*time.Minute).UnixMilli()), "old")).Err())
	require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(time.Now().Add(-30*time.Minute).UnixMilli()), "older")).Err())
	rep, err := b.ins.Throughput(ctx, "q", time.Hour, time.Minute)
	require.NoError(t, err)
	require.Len(t, rep.Buckets, 60)
	var done, failed int64
	for _, bk := range rep.Buckets {
		done += bk.Completed
		failed += bk.Failed
	}
	require.EqualValues(t, 5, done, "the one finished 90 minutes ago is outside the hour")
	require.EqualValues(t, 4, failed)
	last := rep.Buckets[59]
	require.EqualValues(t, 5, last.Completed+rep.Buckets[58].Completed)
	require.True(t, last.Start.Before(time.Now()) && time.Since(last.Start.Time) <= time.Minute)
	_, err = b.ins.Throughput(ctx, "nosuch", 0, 0)
	require.ErrorIs(t, err, inspect.ErrQueueNotFound)
}

// TestWorkers lists worker connections named as BullMQ's workers name them
// (what a Node worker does; drover's workers once they name theirs).
func TestWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	connect := func(name string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: b.rdb.Options().Addr, ClientName: name, PoolSize: 1})
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Ping(ctx).Err())
		return c
	}
	enc := func(q string) string { return base64.StdEncoding.EncodeToString([]byte(q)) }
	connect(b.prefix + ":" + enc("mail") + ":w:node-worker-1")
	waiting := connect(b.prefix + ":" + enc("mail"))
	connect(b.prefix + ":" + enc("mail") + ":qe")               // QueueEvents: not a worker
	connect("other:" + enc("mail") + ":w:elsewhere")            // another prefix
	connect(b.prefix + ":" + enc("pdf:render") + ":w:renderer") // a name with a colon
	go func() { _ = waiting.BZPopMin(ctx, 3*time.Second, "nothing").Err() }()
	var ws []inspect.WorkerInfo
	require.Eventually(t, func() bool {
		var err error
		ws, err = b.ins.Workers(ctx, "")
		require.NoError(t, err)
		return len(ws) == 3 && ws[0].Waiting
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "mail", ws[0].Queue)
	require.Empty(t, ws[0].Name)
	require.Equal(t, "bzpopmin", ws[0].LastCommand)
	require.Equal(t, "node-worker-1", ws[1].Name)
	require.False(t, ws[1].Waiting)
	require.NotEmpty(t, ws[1].Addr)
	require.Equal(t, "pdf:render", ws[2].Queue)
	only, err := b.ins.Workers(ctx, "pdf:render")
	require.NoError(t, err)
	require.Len(t, only, 1)
	require.Equal(t, "renderer", only[0].Name)
}
