package bullmqoracle_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const waitLong = 15 * time.Second

// testBundle is what every oracle subtest works with: one Node driver shared
// by the parent test, and a Redis client and key prefix of its own.
type testBundle struct {
	oracle *bullmqoracle.Oracle
	rdb    *redis.Client
	prefix string
	queue  string
}

// newSetup starts one driver for the calling top-level test and returns a
// setup function handing each subtest its own prefix.
func newSetup(t *testing.T) func(t *testing.T) *testBundle {
	t.Helper()
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	return func(t *testing.T) *testBundle {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		return &testBundle{oracle: o, rdb: rdb, prefix: prefix, queue: "q"}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()

	require.Equal(t, "6.7.0", bullmqoracle.Version())
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	var v string
	require.NoError(t, o.Call(context.Background(), "version", nil, &v))
	require.Equal(t, bullmqoracle.Version(), v)
}

func TestOracleQueue(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	t.Run("OpenQueueCapped", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		require.NoError(t, b.oracle.OpenQueueCapped(ctx, b.prefix, b.queue, nil, 7))
		got, err := b.rdb.HGet(ctx, b.prefix+":"+b.queue+":meta", "opts.maxLenEvents").Result()
		require.NoError(t, err)
		require.Equal(t, "7", got, "the Queue's streams.events.maxLen is written into meta as it starts")
	})

	t.Run("AddThenStateAndCounts", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		o, p, q := b.oracle, b.prefix, b.queue

		plain, err := o.Add(ctx, p, q, "plain", map[string]any{"n": 1}, nil)
		require.NoError(t, err)
		delayed, err := o.Add(ctx, p, q, "delayed", map[string]any{"n": 2}, map[string]any{"delay": 60000})
		require.NoError(t, err)
		prio, err := o.Add(ctx, p, q, "prio", map[string]any{"n": 3}, map[string]any{"priority": 5})
		require.NoError(t, err)
		lifo, err := o.Add(ctx, p, q, "lifo", nil, map[string]any{"lifo": true})
		require.NoError(t, err)
		require.Equal(t, []string{"1", "2", "3", "4"}, []string{plain, delayed, prio, lifo})

		for id, want := range map[string]string{plain: "waiting", delayed: "delayed", prio: "prioritized", lifo: "waiting", "nope": "unknown"} {
			state, err := o.GetState(ctx, p, q, id)
			require.NoError(t, err)
			require.Equal(t, want, state, "job %s", id)
		}

		counts, err := o.GetJobCounts(ctx, p, q)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{
			"active": 0, "completed": 0, "delayed": 1, "failed": 0,
			"prioritized": 1, "waiting": 2, "waiting-children": 0,
		}, counts)
		counts, err = o.GetJobCounts(ctx, p, q, "waiting", "delayed")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"waiting": 2, "delayed": 1}, counts)

		// The LIFO job was RPUSHed: it is taken next, so it is last in desc order.
		ids, err := o.GetJobs(ctx, p, q, []string{"wait"}, 0, -1, false)
		require.NoError(t, err)
		require.Equal(t, []string{plain, lifo}, ids)
		ids, err = o.GetRanges(ctx, p, q, []string{"wait"}, 0, -1, true)
		require.NoError(t, err)
		require.Equal(t, []string{lifo, plain}, ids)

		job, err := o.GetJob(ctx, p, q, delayed)
		require.NoError(t, err)
		require.Equal(t, delayed, job.ID)
		require.Equal(t, "delayed", job.Name)
		require.JSONEq(t, `{"n":2}`, string(job.Data))
		require.Equal(t, map[string]any{"attempts": float64(0), "delay": float64(60000)}, job.Opts)
		require.InDelta(t, time.Now().UnixMilli(), job.Timestamp, 60000)
		require.EqualValues(t, 60000, job.Delay)
		require.Zero(t, job.AttemptsMade)
		require.Nil(t, job.ProcessedOn)
		require.Nil(t, job.FinishedOn)
		require.Empty(t, job.NonFinite)

		// The hash as stored, for comparison with Node's view.
		h, err := b.rdb.HGetAll(ctx, p+":q:"+delayed).Result()
		require.NoError(t, err)
		require.Equal(t, "60000", h["delay"])
		require.Equal(t, strconv.FormatInt(job.Timestamp, 10), h["timestamp"])

		missing, err := o.GetJob(ctx, p, q, "nope")
		require.NoError(t, err)
		require.Nil(t, missing)
	})

	t.Run("DuplicateCustomID", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		id1, err := b.oracle.Add(ctx, b.prefix, b.queue, "a", map[string]any{"v": 1}, map[string]any{"jobId": "custom-1"})
		require.NoError(t, err)
		id2, err := b.oracle.Add(ctx, b.prefix, b.queue, "a", map[string]any{"v": 2}, map[string]any{"jobId": "custom-1"})
		require.NoError(t, err)
		require.Equal(t, "custom-1", id1)
		require.Equal(t, id1, id2)
		job, err := b.oracle.GetJob(ctx, b.prefix, b.queue, id1)
		require.NoError(t, err)
		require.JSONEq(t, `{"v":1}`, string(job.Data))
		// Every add attempt bumps the id counter.
		n, err := b.rdb.Get(ctx, b.prefix+":q:id").Result()
		require.NoError(t, err)
		require.Equal(t, "2", n)
	})

	t.Run("NodeErrorsComeBackWithNodesMessage", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		_, err := b.oracle.Add(ctx, b.prefix, b.queue, "a", nil, map[string]any{"priority": 1.5})
		var nerr *bullmqoracle.NodeError
		require.ErrorAs(t, err, &nerr)
		require.Equal(t, "add", nerr.Cmd)
		require.Contains(t, nerr.Message, "Priority should not be float")

		_, err = b.oracle.GetState(ctx, b.prefix, "a:b", "1")
		require.ErrorAs(t, err, &nerr)
		require.Contains(t, nerr.Message, "Queue name cannot contain :")

		err = b.oracle.Promote(ctx, b.prefix, b.queue, "missing")
		require.ErrorContains(t, err, "job missing not found")

		err = b.oracle.Call(ctx, "noSuchCommand", nil, nil)
		require.ErrorContains(t, err, `unknown command "noSuchCommand"`)
	})

	t.Run("AddBulkAndConcurrentCalls", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		ids, err := b.oracle.AddBulk(ctx, b.prefix, b.queue, []bullmqoracle.BulkJob{
			{Name: "a", Data: 1},
			{Name: "b", Data: "two", Opts: map[string]any{"jobId": "b-id"}},
			{Name: "c", Data: []int{3}, Opts: map[string]any{"delay": 1000}},
		})
		require.NoError(t, err)
		require.Equal(t, []string{"1", "b-id", "3"}, ids)

		const n = 40
		var wg sync.WaitGroup
		got := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = b.oracle.Add(ctx, b.prefix, b.queue, "c", map[string]any{"i": i}, nil)
			}()
		}
		wg.Wait()
		seen := map[string]bool{}
		for i := range n {
			require.NoError(t, errs[i])
			seen[got[i]] = true
		}
		require.Len(t, seen, n)
		counts, err := b.oracle.GetJobCounts(ctx, b.prefix, b.queue, "waiting", "delayed")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"waiting": n + 2, "delayed": 1}, counts)
	})

	t.Run("AdminOperations", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		o, p, q := b.oracle, b.prefix, b.queue
		state := func(id string) string {
			t.Helper()
			s, err := o.GetState(ctx, p, q, id)
			require.NoError(t, err)
			return s
		}

		require.NoError(t, o.Pause(ctx, p, q))
		paused, err := o.IsPaused(ctx, p, q)
		require.NoError(t, err)
		require.True(t, paused)
		require.NoError(t, o.Resume(ctx, p, q))
		paused, err = o.IsPaused(ctx, p, q)
		require.NoError(t, err)
		require.False(t, paused)

		d1, err := o.Add(ctx, p, q, "d", nil, map[string]any{"delay": 60000})
		require.NoError(t, err)
		require.NoError(t, o.Promote(ctx, p, q, d1))
		require.Equal(t, "waiting", state(d1))

		d2, err := o.Add(ctx, p, q, "d", nil, map[string]any{"delay": 60000})
		require.NoError(t, err)
		require.NoError(t, o.ChangeDelay(ctx, p, q, d2, 120000))
		job, err := o.GetJob(ctx, p, q, d2)
		require.NoError(t, err)
		require.EqualValues(t, 120000, job.Delay)
		require.NoError(t, o.PromoteJobs(ctx, p, q, 0))
		require.Equal(t, "waiting", state(d2))

		pr, err := o.Add(ctx, p, q, "p", nil, map[string]any{"priority": 3})
		require.NoError(t, err)
		require.NoError(t, o.ChangePriority(ctx, p, q, pr, 0, false))
		require.Equal(t, "waiting", state(pr))
		require.NoError(t, o.ChangePriority(ctx, p, q, pr, 7, false))
		require.Equal(t, "prioritized", state(pr))
		job, err = o.GetJob(ctx, p, q, pr)
		require.NoError(t, err)
		require.EqualValues(t, 7, job.Priority)

		require.NoError(t, o.UpdateProgress(ctx, p, q, pr, map[string]any{"pct": 50}))
		job, err = o.GetJob(ctx, p, q, pr)
		require.NoError(t, err)
		require.JSONEq(t, `{"pct":50}`, string(job.Progress))

		lg, err := o.Add(ctx, p, q, "l", nil, map[string]any{"keepLogs": 2})
		require.NoError(t, err)
		for i := range 3 {
			n, err := o.Log(ctx, p, q, lg, fmt.Sprintf("line %d", i))
			require.NoError(t, err)
			require.EqualValues(t, min(i+1, 2), n)
		}
		logs, count, err := o.GetJobLogs(ctx, p, q, lg)
		require.NoError(t, err)
		require.Equal(t, []string{"line 1", "line 2"}, logs)
		require.EqualValues(t, 2, count)

		code, err := o.Remove(ctx, p, q, lg)
		require.NoError(t, err)
		require.Equal(t, 1, code)
		require.Equal(t, "unknown", state(lg))

		cleaned, err := o.Clean(ctx, p, q, 0, 0, "wait")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{d1, d2}, cleaned)

		_, err = o.Add(ctx, p, q, "d", nil, map[string]any{"delay": 60000})
		require.NoError(t, err)
		require.NoError(t, o.Drain(ctx, p, q, true))
		counts, err := o.GetJobCounts(ctx, p, q)
		require.NoError(t, err)
		for typ, n := range counts {
			require.Zero(t, n, "count of %s after drain", typ)
		}

		_, err = o.Add(ctx, p, q, "x", nil, nil)
		require.NoError(t, err)
		require.NoError(t, o.Obliterate(ctx, p, q, false))
		keys, err := b.rdb.Keys(ctx, p+":*").Result()
		require.NoError(t, err)
		require.Empty(t, keys)
	})
}

func TestOracleWorker(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	type outcome struct {
		state        string
		attemptsMade int64
		returnvalue  string // JSON, checked when state is completed
		failedReason string
		stacktraces  int
		// local worker events, in order, ignoring active/progress
		events []string
	}

	tests := []struct {
		name     string
		behavior bullmqoracle.Behavior
		strategy string
		data     any
		opts     map[string]any
		want     outcome
	}{
		{
			name:     "Return",
			behavior: bullmqoracle.Return(map[string]any{"ok": true}),
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `{"ok":true}`, events: []string{"completed"}},
		},
		{
			name:     "ReturnUndefinedIsNull",
			behavior: bullmqoracle.Return(nil),
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `null`, events: []string{"completed"}},
		},
		{
			name:     "Echo",
			behavior: bullmqoracle.Echo(),
			data:     map[string]any{"path": "a/b", "n": 1},
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `{"path":"a/b","n":1}`, events: []string{"completed"}},
		},
		{
			name:     "FailTimesThenSucceed",
			behavior: bullmqoracle.FailTimes(2, "boom", "done"),
			opts:     map[string]any{"attempts": 3},
			want: outcome{
				state: "completed", attemptsMade: 3, returnvalue: `"done"`, failedReason: "boom", stacktraces: 2,
				events: []string{"failed", "failed", "completed"},
			},
		},
		{
			name:     "FailExhaustsAttempts",
			behavior: bullmqoracle.Fail("nope"),
			opts:     map[string]any{"attempts": 2},
			want:     outcome{state: "failed", attemptsMade: 2, failedReason: "nope", stacktraces: 2, events: []string{"failed", "failed"}},
		},
		{
			name:     "UnrecoverableStopsRetries",
			behavior: bullmqoracle.Unrecoverable("fatal"),
			opts:     map[string]any{"attempts": 5},
			want:     outcome{state: "failed", attemptsMade: 1, failedReason: "fatal", stacktraces: 1, events: []string{"failed"}},
		},
		{
			name:     "Sleep",
			behavior: bullmqoracle.Sleep(50*time.Millisecond, "slept"),
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `"slept"`, events: []string{"completed"}},
		},
		{
			name:     "ProgressThenReturn",
			behavior: bullmqoracle.Progress(42, &bullmqoracle.Behavior{Kind: "return", Value: 7}),
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `7`, events: []string{"completed"}},
		},
		{
			name:     "CustomBackoffLinear",
			behavior: bullmqoracle.FailTimes(1, "once", "ok"),
			strategy: "linear100",
			opts:     map[string]any{"attempts": 3, "backoff": map[string]any{"type": "custom"}},
			want: outcome{
				state: "completed", attemptsMade: 2, returnvalue: `"ok"`, failedReason: "once", stacktraces: 1,
				events: []string{"failed", "completed"},
			},
		},
		{
			name:     "CustomBackoffStop",
			behavior: bullmqoracle.Fail("halt"),
			strategy: "stop",
			opts:     map[string]any{"attempts": 3, "backoff": map[string]any{"type": "custom"}},
			want:     outcome{state: "failed", attemptsMade: 1, failedReason: "halt", stacktraces: 1, events: []string{"failed"}},
		},
		{
			name:     "CustomBackoffByType",
			behavior: bullmqoracle.FailTimes(1, "once", "ok"),
			strategy: "byType",
			opts:     map[string]any{"attempts": 3, "backoff": map[string]any{"type": "zero"}},
			want: outcome{
				state: "completed", attemptsMade: 2, returnvalue: `"ok"`, failedReason: "once", stacktraces: 1,
				events: []string{"failed", "completed"},
			},
		},
		{
			name: "SequenceByStart",
			behavior: bullmqoracle.Sequence(
				bullmqoracle.Fail("first"),
				bullmqoracle.Return("second"),
			),
			opts: map[string]any{"attempts": 2},
			want: outcome{
				state: "completed", attemptsMade: 2, returnvalue: `"second"`, failedReason: "first", stacktraces: 1,
				events: []string{"failed", "completed"},
			},
		},
		{
			name:     "FromData",
			behavior: bullmqoracle.FromData(""),
			data:     map[string]any{"behavior": bullmqoracle.Return("from data")},
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `"from data"`, events: []string{"completed"}},
		},
		{
			name:     "MoveToDelayedThenReturn",
			behavior: bullmqoracle.MoveToDelayed(50*time.Millisecond, 1, &bullmqoracle.Behavior{Kind: "return", Value: "late"}),
			want:     outcome{state: "completed", attemptsMade: 1, returnvalue: `"late"`, events: []string{"completed"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b := setup(t)
			ctx := context.Background()
			id, err := b.oracle.Add(ctx, b.prefix, b.queue, tt.name, tt.data, tt.opts)
			require.NoError(t, err)
			workerID := b.prefix + "-w"
			require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, b.queue, bullmqoracle.WorkerOptions{
				ID:              workerID,
				Name:            "oracle-worker",
				Behavior:        tt.behavior,
				BackoffStrategy: tt.strategy,
			}))
			finalKind := "completed"
			if tt.want.state == "failed" {
				finalKind = "failed"
			}
			var final []bullmqoracle.WorkerEvent
			if finalKind == "failed" {
				final, err = b.oracle.WaitWorkerEvents(ctx, workerID, len(tt.want.events), waitLong, "failed")
			} else {
				final, err = b.oracle.WaitWorkerEvents(ctx, workerID, 1, waitLong, "completed")
			}
			require.NoError(t, err)
			require.NoError(t, b.oracle.StopWorker(ctx, workerID, false))

			state, err := b.oracle.GetState(ctx, b.prefix, b.queue, id)
			require.NoError(t, err)
			require.Equal(t, tt.want.state, state)

			job, err := b.oracle.GetJob(ctx, b.prefix, b.queue, id)
			require.NoError(t, err)
			require.Equal(t, tt.want.attemptsMade, job.AttemptsMade)
			require.Equal(t, tt.want.failedReason, job.FailedReason)
			require.Len(t, job.Stacktrace, tt.want.stacktraces)
			require.Equal(t, "oracle-worker", job.ProcessedBy)
			require.NotNil(t, job.ProcessedOn)
			require.NotNil(t, job.FinishedOn)
			if tt.want.state == "completed" {
				require.JSONEq(t, tt.want.returnvalue, string(job.ReturnValue))
			}

			evs, err := b.oracle.WorkerEvents(ctx, workerID)
			require.NoError(t, err)
			var kinds []string
			for _, e := range evs {
				switch e.Event {
				case "completed", "failed":
					kinds = append(kinds, e.Event)
					require.Equal(t, id, e.JobID)
				case "error":
					t.Fatalf("worker error event: %s", e.Message)
				}
			}
			require.Equal(t, tt.want.events, kinds)
			last := final[len(final)-1]
			require.Equal(t, tt.want.attemptsMade, last.AttemptsMade)
			if finalKind == "failed" {
				require.Equal(t, tt.want.failedReason, last.FailedReason)
			}
			if tt.name == "ProgressThenReturn" {
				var sawProgress bool
				for _, e := range evs {
					if e.Event == "progress" {
						sawProgress = true
						require.JSONEq(t, `42`, string(e.Progress))
					}
				}
				require.True(t, sawProgress)
				require.JSONEq(t, `42`, string(job.Progress))
			}
		})
	}

	t.Run("RetryFinishedJobs", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		o, p, q := b.oracle, b.prefix, b.queue
		fail := map[string]any{"behavior": bullmqoracle.Fail("bad")}
		f1, err := o.Add(ctx, p, q, "f1", fail, nil)
		require.NoError(t, err)
		f2, err := o.Add(ctx, p, q, "f2", fail, nil)
		require.NoError(t, err)
		c1, err := o.Add(ctx, p, q, "c1", map[string]any{"behavior": bullmqoracle.Return("r")}, nil)
		require.NoError(t, err)
		w := bullmqoracle.WorkerOptions{ID: p + "-w", Behavior: bullmqoracle.FromData("behavior")}
		require.NoError(t, o.StartWorker(ctx, p, q, w))
		_, err = o.WaitWorkerEvents(ctx, w.ID, 3, waitLong, "completed", "failed")
		require.NoError(t, err)
		require.NoError(t, o.StopWorker(ctx, w.ID, false))

		require.NoError(t, o.RetryJob(ctx, p, q, f1, "failed", true, false))
		job, err := o.GetJob(ctx, p, q, f1)
		require.NoError(t, err)
		require.Zero(t, job.AttemptsMade, "resetAttemptsMade")
		require.EqualValues(t, 1, job.AttemptsStarted)
		require.Empty(t, job.FailedReason)
		require.Nil(t, job.FinishedOn)
		require.Len(t, job.Stacktrace, 1, "job.retry keeps the stacktrace")

		require.NoError(t, o.RetryJob(ctx, p, q, c1, "completed", false, false))
		job, err = o.GetJob(ctx, p, q, c1)
		require.NoError(t, err)
		require.EqualValues(t, 1, job.AttemptsMade)
		require.JSONEq(t, `null`, string(job.ReturnValue))

		err = o.RetryJob(ctx, p, q, f1, "failed", false, false)
		require.ErrorContains(t, err, "is not in the failed state")

		require.NoError(t, o.RetryJobs(ctx, p, q, bullmqoracle.RetryJobsOptions{State: "failed"}))
		job, err = o.GetJob(ctx, p, q, f2)
		require.NoError(t, err)
		require.EqualValues(t, 1, job.AttemptsMade, "retryJobs keeps atm")

		ids, err := o.GetRanges(ctx, p, q, []string{"wait"}, 0, -1, true)
		require.NoError(t, err)
		require.Equal(t, []string{f1, c1, f2}, ids, "oldest (next to run) first")
		counts, err := o.GetJobCounts(ctx, p, q, "waiting", "failed", "completed")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"waiting": 3, "failed": 0, "completed": 0}, counts)
	})

	t.Run("RemoveOnCompleteAndFail", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		o, p, q := b.oracle, b.prefix, b.queue
		ok, err := o.Add(ctx, p, q, "ok", map[string]any{"behavior": bullmqoracle.Return(1)}, nil)
		require.NoError(t, err)
		var failed []string
		for range 3 {
			id, err := o.Add(ctx, p, q, "bad", map[string]any{"behavior": bullmqoracle.Fail("x")}, nil)
			require.NoError(t, err)
			failed = append(failed, id)
		}
		w := bullmqoracle.WorkerOptions{
			ID: p + "-w", Behavior: bullmqoracle.FromData("behavior"),
			RemoveOnComplete: map[string]any{"count": 0}, RemoveOnFail: map[string]any{"count": 1},
		}
		require.NoError(t, o.StartWorker(ctx, p, q, w))
		_, err = o.WaitWorkerEvents(ctx, w.ID, 4, waitLong, "completed", "failed")
		require.NoError(t, err)
		require.NoError(t, o.StopWorker(ctx, w.ID, false))

		job, err := o.GetJob(ctx, p, q, ok)
		require.NoError(t, err)
		require.Nil(t, job)
		ids, err := o.GetRanges(ctx, p, q, []string{"failed"}, 0, -1, true)
		require.NoError(t, err)
		require.Equal(t, failed[2:], ids, "removeOnFail 1 keeps the newest")
		exists, err := b.rdb.Exists(ctx, p+":q:"+failed[0]).Result()
		require.NoError(t, err)
		require.Zero(t, exists)
	})

	t.Run("StopUnknownWorker", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		err := b.oracle.StopWorker(context.Background(), "nobody", false)
		require.ErrorContains(t, err, "no worker nobody")
	})
}

func TestOracleQueueEvents(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	t.Run("CollectsEventsInOrder", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		o, p, q := b.oracle, b.prefix, b.queue
		require.NoError(t, o.StartQueueEvents(ctx, p, q))
		id, err := o.Add(ctx, p, q, "job", map[string]any{"x": 1}, nil)
		require.NoError(t, err)
		delayedID, err := o.Add(ctx, p, q, "later", nil, map[string]any{"delay": 60000})
		require.NoError(t, err)
		require.NoError(t, o.StartWorker(ctx, p, q, bullmqoracle.WorkerOptions{
			ID: p + "-w", Behavior: bullmqoracle.Progress(map[string]any{"half": true}, &bullmqoracle.Behavior{Kind: "echo"}),
		}))
		_, err = o.WaitQueueEvents(ctx, p, q, 1, waitLong, "completed")
		require.NoError(t, err)
		require.NoError(t, o.StopWorker(ctx, p+"-w", false))

		evs, err := o.QueueEvents(ctx, p, q)
		require.NoError(t, err)
		var names []string
		byName := map[string]bullmqoracle.QueueEvent{}
		for _, e := range evs {
			names = append(names, e.Name)
			if _, ok := byName[e.Name]; !ok {
				byName[e.Name] = e
			}
			require.NotEmpty(t, e.ID)
		}
		t.Logf("events: %v", names)
		require.GreaterOrEqual(t, len(names), 7)
		require.Equal(t, []string{"added", "waiting", "added", "delayed", "active", "progress", "completed"}, names[:7])

		require.Equal(t, map[string]any{"jobId": id, "name": "job"}, byName["added"].Fields)
		require.Equal(t, map[string]any{"jobId": id}, byName["waiting"].Fields)
		require.Equal(t, delayedID, byName["delayed"].JobID())
		delay, ok := byName["delayed"].Fields["delay"].(float64)
		require.True(t, ok, "delayed.delay is a number: %#v", byName["delayed"].Fields["delay"])
		require.InDelta(t, time.Now().UnixMilli()+60000, delay, 60000)
		require.Equal(t, map[string]any{"jobId": id, "prev": "waiting"}, byName["active"].Fields)
		require.Equal(t, map[string]any{"jobId": id, "data": map[string]any{"half": true}}, byName["progress"].Fields)
		require.Equal(t, map[string]any{"jobId": id, "returnvalue": map[string]any{"x": float64(1)}, "prev": "active"}, byName["completed"].Fields)
	})

	t.Run("WaitUntilFinished", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		o, p, q := b.oracle, b.prefix, b.queue
		ok, err := o.Add(ctx, p, q, "ok", map[string]any{"v": "a/b"}, nil)
		require.NoError(t, err)
		bad, err := o.Add(ctx, p, q, "bad", map[string]any{"behavior": bullmqoracle.Fail("broken")}, nil)
		require.NoError(t, err)
		require.NoError(t, o.StartWorker(ctx, p, q, bullmqoracle.WorkerOptions{
			ID: p + "-w", Behavior: bullmqoracle.FromData("behavior"), Concurrency: 2,
		}))

		var wg sync.WaitGroup
		var okRes, badRes *bullmqoracle.FinishResult
		var okErr, badErr error
		wg.Add(2)
		go func() { defer wg.Done(); okRes, okErr = o.WaitUntilFinished(ctx, p, q, ok, waitLong) }()
		go func() { defer wg.Done(); badRes, badErr = o.WaitUntilFinished(ctx, p, q, bad, waitLong) }()
		wg.Wait()
		require.NoError(t, okErr)
		require.NoError(t, badErr)
		require.Equal(t, "completed", okRes.State)
		require.JSONEq(t, `null`, string(okRes.ReturnValue))
		require.Equal(t, &bullmqoracle.FinishResult{State: "failed", FailedReason: "broken"}, badRes)

		// Already finished: answered from isFinished without waiting for an event.
		again, err := o.WaitUntilFinished(ctx, p, q, bad, time.Second)
		require.NoError(t, err)
		require.Equal(t, "failed", again.State)
	})

	t.Run("WaitUntilFinishedTimesOut", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		id, err := b.oracle.Add(ctx, b.prefix, b.queue, "never", nil, nil)
		require.NoError(t, err)
		_, err = b.oracle.WaitUntilFinished(ctx, b.prefix, b.queue, id, 200*time.Millisecond)
		require.ErrorContains(t, err, "timed out before finishing")
	})

	t.Run("QueueEventsBeforeStart", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		_, err := b.oracle.QueueEvents(context.Background(), b.prefix, b.queue)
		require.ErrorContains(t, err, "call startQueueEvents first")
	})

	t.Run("ContextCancelDoesNotBreakOracle", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		id, err := b.oracle.Add(context.Background(), b.prefix, b.queue, "never", nil, nil)
		require.NoError(t, err)
		_, err = b.oracle.WaitUntilFinished(ctx, b.prefix, b.queue, id, 2*time.Second)
		require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
		// The driver still answers, and the late response is dropped.
		state, err := b.oracle.GetState(context.Background(), b.prefix, b.queue, id)
		require.NoError(t, err)
		require.Equal(t, "waiting", state)
	})
}

func TestWorkerProcess(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		oracle *bullmqoracle.Oracle
		rdb    *redis.Client
		prefix string
		addr   string
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		addr := redistest.Shared(t).Addr
		return &testBundle{oracle: bullmqoracle.Start(t, addr), rdb: rdb, prefix: prefix, addr: addr}
	}

	t.Run("PrintsLinesAndStopsGracefully", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		for i := range 3 {
			_, err := b.oracle.Add(ctx, b.prefix, "q", "j", map[string]any{"i": i}, nil)
			require.NoError(t, err)
		}
		w := bullmqoracle.StartWorkerProcess(t, b.addr, b.prefix, "q", bullmqoracle.WorkerOptions{Behavior: bullmqoracle.Echo()})
		require.Positive(t, w.PID())
		wctx, cancel := context.WithTimeout(ctx, waitLong)
		defer cancel()
		done, err := w.WaitForCount(wctx, 3, func(e bullmqoracle.WorkerEvent) bool { return e.Event == "completed" })
		require.NoError(t, err)
		for i, e := range done {
			require.Equal(t, strconv.Itoa(i+1), e.JobID)
			require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(e.ReturnValue))
			require.EqualValues(t, 1, e.AttemptsMade)
		}
		require.Equal(t, "ready", w.Events()[0].Event)

		require.NoError(t, w.Stop(wctx))
		require.NoError(t, w.ExitErr())
		evs := w.Events()
		require.Equal(t, "closed", evs[len(evs)-1].Event)
	})

	t.Run("SIGKILLMidJobLeavesItStalled", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		p := b.prefix
		id, err := b.oracle.Add(ctx, p, "q", "slow", map[string]any{"v": 1}, nil)
		require.NoError(t, err)

		victim := bullmqoracle.StartWorkerProcess(t, b.addr, p, "q", bullmqoracle.WorkerOptions{
			Name:         "victim",
			LockDuration: time.Second,
			// The stalled-check key is shared by all workers of the queue and
			// lives for the checker's stalledInterval: a victim with the
			// default 30 s interval would silence the rescuer's checks.
			SkipStalledCheck: true,
			Behavior:         bullmqoracle.Sleep(time.Minute, nil),
		})
		wctx, cancel := context.WithTimeout(ctx, waitLong)
		defer cancel()
		_, err = victim.WaitFor(wctx, func(e bullmqoracle.WorkerEvent) bool { return e.Event == "active" && e.JobID == id })
		require.NoError(t, err)
		require.NoError(t, victim.Kill())
		require.ErrorContains(t, victim.ExitErr(), "signal: killed")

		state, err := b.oracle.GetState(ctx, p, "q", id)
		require.NoError(t, err)
		require.Equal(t, "active", state)
		lockTTL, err := b.rdb.PTTL(ctx, p+":q:"+id+":lock").Result()
		require.NoError(t, err)
		require.Positive(t, lockTTL)

		// Another worker's stalled checker moves the job back once the lock
		// expires, and the job runs again.
		rescuer := bullmqoracle.StartWorkerProcess(t, b.addr, p, "q", bullmqoracle.WorkerOptions{
			Name:            "rescuer",
			StalledInterval: 300 * time.Millisecond,
			MaxStalledCount: bullmqoracle.Ptr(1),
			Behavior:        bullmqoracle.Echo(),
		})
		done, err := rescuer.WaitFor(wctx, func(e bullmqoracle.WorkerEvent) bool { return e.Event == "completed" && e.JobID == id })
		require.NoError(t, err)
		require.EqualValues(t, 2, done.AttemptsStarted)
		stalled, err := rescuer.WaitFor(wctx, func(e bullmqoracle.WorkerEvent) bool { return e.Event == "stalled" })
		require.NoError(t, err)
		require.Equal(t, id, stalled.JobID)

		job, err := b.oracle.GetJob(ctx, p, "q", id)
		require.NoError(t, err)
		require.EqualValues(t, 1, job.StalledCounter)
		require.EqualValues(t, 2, job.AttemptsStarted)
		require.EqualValues(t, 1, job.AttemptsMade)
		require.Equal(t, "rescuer", job.ProcessedBy)
	})
}
