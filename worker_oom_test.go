package drover_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWorkerHoldsFetchWhileLocksCannotBeRenewed: a real redis-server runs
// out of memory (maxmemory, noeviction) while a worker runs a long job.
// The lock renewals are refused, so the worker must take no new job (the
// fetch script would still move due jobs to active: its first write is
// allowed) until a renewal succeeds again; then it takes them all.
func TestWorkerHoldsFetchWhileLocksCannotBeRenewed(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil, "--maxmemory-policy", "noeviction")
	ctx := context.Background()

	const short = 20
	release := make(chan struct{})
	var releaseOnce sync.Once
	started := make(chan string, short+1)
	held := make(chan bool, 10)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		started <- job.Name
		if job.Name == "long" {
			<-release
		}
		return nil, nil
	}), &drover.WorkerOptions{
		Concurrency:      short + 1,
		LockDuration:     10 * time.Second, // renewed every 2.5 s; outlasts the outage
		SkipStalledCheck: true,
		Hooks:            &drover.WorkerHooks{FetchHeld: func(h bool, _ error) { held <- h }},
	})
	require.NoError(t, err)

	_, err = q.Add(ctx, "long", nil, nil)
	require.NoError(t, err)
	startHeld(t, w, release, &releaseOnce)
	require.Equal(t, "long", <-started)
	// Due only once Redis is out of memory. Added once the long job runs:
	// added before the worker started, they were due before it took its
	// first job when a loaded machine took 4 s to start it ("short"
	// started first).
	due := 4 * time.Second
	dueAt := time.Now().Add(due)
	for range short {
		_, err = q.Add(ctx, "short", nil, &drover.JobOptions{Delay: due})
		require.NoError(t, err)
	}

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	select {
	case h := <-held:
		require.True(t, h, "renewals fail: fetching is held")
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not notice that it cannot renew its locks")
	}
	// Past the delayed jobs' due time: none taken. (The outage must end
	// before the fourth failed renewal, when the long job's lock expires.)
	time.Sleep(time.Until(dueAt) + 700*time.Millisecond)
	require.Empty(t, started, "no job is taken while locks cannot be renewed")
	require.Equal(t, int64(1), rdb.LLen(ctx, "bull:q:active").Val(), "only the long job is active")

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	select {
	case h := <-held:
		require.False(t, h, "renewals succeed: fetching resumes")
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not resume after renewals succeeded")
	}
	releaseOnce.Do(func() { close(release) })
	testkit.WaitFor(t, 10*time.Second, "every job to complete", func() bool {
		return rdb.ZCard(ctx, "bull:q:completed").Val() == short+1
	})
}

// TestFinishAndPromoteWhileRedisIsOutOfMemory: a real redis-server runs
// out of memory (maxmemory, noeviction) while a worker's jobs finish and
// delayed jobs come due, and Job.Promote is called. Redis refuses a
// script's first write when it would grow memory, and lets the rest run
// once one write is done (so no script stops half-way): each job must
// stay in exactly one state, whole (a job in active or delayed has no
// finishedOn, a completed one has its return value); a refused Promote
// names OOM and leaves the job delayed; the worker logs no line per job;
// and once memory frees, every job completes, each in one attempt.
// Checked on redis-server 7: the finish and promotion scripts start with
// a write that frees memory (removing the job from active or delayed), so
// Redis lets them run, and they did, whole.
func TestFinishAndPromoteWhileRedisIsOutOfMemory(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil, "--maxmemory-policy", "noeviction")
	ctx := context.Background()

	const running, delayed = 10, 5
	release := make(chan struct{})
	var releaseOnce sync.Once
	started := make(chan string, running+delayed+1)
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		started <- job.ID
		<-release
		return "done-" + job.ID, nil
	}), &drover.WorkerOptions{
		Concurrency:      running + delayed + 1,
		LockDuration:     30 * time.Second, // outlasts the outage
		SkipStalledCheck: true,
		Logger:           slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)
	ids := map[string]bool{}
	for range running {
		res, err := q.Add(ctx, "run", nil, nil)
		require.NoError(t, err)
		ids[res.Job.ID] = true
	}
	due := 2 * time.Second // due only once Redis is out of memory
	for range delayed {
		res, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: due})
		require.NoError(t, err)
		ids[res.Job.ID] = true
	}
	manual, err := q.Add(ctx, "promote-me", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	ids[manual.Job.ID] = true
	startHeld(t, w, release, &releaseOnce)
	for range running {
		recv(t, started)
	}

	// consistent checks that every job is in one state, and whole.
	consistent := func() {
		t.Helper()
		// One read-only script reads every state at one instant (it runs
		// while Redis is out of memory, as a MULTI does not): the worker
		// may move a job from active to completed between two separate
		// reads, which would show it in both.
		// The job hashes are read by the same script: a job read in wait
		// may otherwise be taken and completed before its hash is read
		// (job 16 read in wait with a finishedOn, 2 loaded cores).
		states := []string{"active", "wait", "delayed", "completed", "failed", "prioritized"}
		args := make([]any, 0, len(ids))
		for id := range ids {
			args = append(args, id)
		}
		snap, err := rdb.Eval(ctx, `local out = {}
for i, k in ipairs(KEYS) do
  if i <= 2 then out[i] = redis.call("LRANGE", k, 0, -1) else out[i] = redis.call("ZRANGE", k, 0, -1) end
end
local hashes = {}
for i, id in ipairs(ARGV) do
  hashes[i] = redis.call("HMGET", "bull:q:" .. id, "finishedOn", "returnvalue")
end
out[#KEYS + 1] = hashes
return out`, []string{"bull:q:active", "bull:q:wait", "bull:q:delayed", "bull:q:completed", "bull:q:failed", "bull:q:prioritized"}, args...).Slice()
		require.NoError(t, err)
		where := map[string][]string{}
		for i, ids := range snap[:len(states)] {
			for _, id := range ids.([]any) {
				where[id.(string)] = append(where[id.(string)], states[i])
			}
		}
		for i, h := range snap[len(states)].([]any) {
			id := args[i].(string)
			require.Len(t, where[id], 1, "job %s in one state: %v", id, where[id])
			f := h.([]any) // finishedOn, returnvalue; nil when absent
			finishedOn, _ := f[0].(string)
			returnValue, _ := f[1].(string)
			if where[id][0] == "completed" {
				require.NotEmpty(t, finishedOn, "job %s", id)
				require.Equal(t, `"done-`+id+`"`, returnValue, "job %s", id)
				continue
			}
			require.Empty(t, finishedOn, "job %s in %s", id, where[id][0])
			require.Empty(t, returnValue, "job %s in %s", id, where[id][0])
		}
	}

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	_, err = q.Add(ctx, "refused", nil, nil)
	require.ErrorContains(t, err, "OOM", "Redis is out of memory: an add is refused")
	releaseOnce.Do(func() { close(release) })
	time.Sleep(due + time.Second) // the finishes run or are retried; the delayed jobs come due
	consistent()
	t.Logf("completed while out of memory: %d of %d", rdb.ZCard(ctx, "bull:q:completed").Val(), len(ids)-1)
	err = q.Job(manual.Job.ID).Promote(ctx)
	st, serr := q.GetJobState(ctx, manual.Job.ID)
	require.NoError(t, serr)
	if err != nil {
		require.ErrorContains(t, err, "OOM")
		require.Equal(t, drover.StateDelayed, st, "a refused promotion leaves the job delayed")
	} else {
		require.NotEqual(t, drover.StateDelayed, st, "a promotion that returned nil moved the job")
	}
	consistent()
	require.Less(t, strings.Count(logs.String(), "\n"), running, "no log line per job:\n%s", logs.String())

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	if st == drover.StateDelayed {
		require.NoError(t, q.Job(manual.Job.ID).Promote(ctx))
	}
	testkit.WaitFor(t, 15*time.Second, "every job to complete", func() bool {
		return rdb.ZCard(ctx, "bull:q:completed").Val() == int64(len(ids))
	})
	consistent()
	for id := range ids {
		job, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, 1, job.AttemptsStarted, "job %s ran once", id)
	}
}

// startHeld starts w, whose processor waits for release, and at the test's
// end releases it (once) and closes w.
func startHeld(t *testing.T, w *drover.Worker, release chan struct{}, releaseOnce *sync.Once) {
	t.Helper()
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})
}

// TestWorkerWarnsOfAnEvictingRedis: a Redis whose maxmemory-policy lets it
// evict keys (allkeys-lru here) drops job hashes, locks and list entries
// when its memory fills, so jobs vanish or are left half-moved without an
// error anywhere; under noeviction it refuses writes instead, which the
// worker waits out. Starting a worker against it must say so, as BullMQ
// warns when it connects ("IMPORTANT! Eviction policy is allkeys-lru. It
// should be \"noeviction\""). Before, nothing was logged. A worker against
// a noeviction server says nothing.
func TestWorkerWarnsOfAnEvictingRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := func(t *testing.T, rdb *redis.Client) string {
		logs := &testkit.SyncBuffer{}
		w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
			return nil, nil
		}), &drover.WorkerOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		require.NoError(t, w.Close(ctx))
		return logs.String()
	}

	rdb, _ := ownServer(t, nil, "--maxmemory-policy", "allkeys-lru")
	require.Regexp(t, `level=WARN msg="Redis may evict the queue's keys when its memory is full, `+
		`losing jobs without an error; set maxmemory-policy to noeviction" .*maxmemory_policy=allkeys-lru\n`, start(t, rdb))

	rdb, _ = ownServer(t, nil, "--maxmemory-policy", "noeviction")
	require.NotContains(t, start(t, rdb), "maxmemory")
}

// TestQueueWarnsOfAnEvictingRedis: a process that only adds jobs (an API
// server with a Queue and no Worker) against a Redis that may evict keys
// must be warned as a worker's start is, and as BullMQ's Queue warns when
// it connects: once, after its first add, whatever it adds next (Add,
// AddBulk, a second Add), and so must one that only adds flows
// (FlowProducer). Before, only Worker.Start warned, so such a process
// logged nothing while its jobs could vanish. Against a noeviction server
// it says nothing.
func TestQueueWarnsOfAnEvictingRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	adds := func(t *testing.T, args ...string) string {
		srv, err := redistest.Start(args...)
		require.NoError(t, err)
		t.Cleanup(srv.Stop)
		logs := &testkit.SyncBuffer{}
		q, err := drover.NewQueue(srv.Client(t), "q", &drover.QueueOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)
		_, err = q.Add(ctx, "a", nil, nil)
		require.NoError(t, err)
		_, err = q.AddBulk(ctx, []drover.BulkJob{{Name: "b"}, {Name: "c"}})
		require.NoError(t, err)
		_, err = q.Add(ctx, "d", nil, nil)
		require.NoError(t, err)
		return logs.String()
	}

	logs := adds(t, "--maxmemory-policy", "volatile-lru")
	require.Regexp(t, `level=WARN msg="Redis may evict the queue's keys when its memory is full, `+
		`losing jobs without an error; set maxmemory-policy to noeviction" queue=q maxmemory_policy=volatile-lru\n`, logs)
	require.Equal(t, 1, strings.Count(logs, "maxmemory_policy="), "warned once: %s", logs)

	require.NotContains(t, adds(t, "--maxmemory-policy", "noeviction"), "maxmemory")

	// A process that only adds flows is warned too, once.
	srv, err := redistest.Start("--maxmemory-policy", "allkeys-random")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	flowLogs := &testkit.SyncBuffer{}
	fp, err := drover.NewFlowProducer(srv.Client(t), &drover.FlowProducerOptions{Logger: slog.New(slog.NewTextHandler(flowLogs, nil))})
	require.NoError(t, err)
	for range 2 {
		_, err = fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{{Name: "c", QueueName: "q"}}})
		require.NoError(t, err)
	}
	require.Regexp(t, `level=WARN msg="Redis may evict the queue's keys when its memory is full, `+
		`losing jobs without an error; set maxmemory-policy to noeviction" queue=q maxmemory_policy=allkeys-random\n`, flowLogs.String())
	require.Equal(t, 1, strings.Count(flowLogs.String(), "maxmemory_policy="), "warned once: %s", flowLogs)
}
