package drover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
)

func TestWorkerOrdering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("PrioritiesThenFIFOWithinPriority", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		adds := []struct {
			id       string
			priority int
		}{{"p5a", 5}, {"p1a", 1}, {"p5b", 5}, {"none", 0}, {"p1b", 1}, {"p3", 3}}
		for _, a := range adds {
			_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: a.id, Priority: a.priority})
			require.NoError(t, err)
		}
		counts, err := b.queue.GetJobCounts(ctx, drover.StateWaiting, drover.StatePrioritized)
		require.NoError(t, err)
		require.Equal(t, int64(1), counts[drover.StateWaiting])
		require.Equal(t, int64(5), counts[drover.StatePrioritized])

		rec := &recorder{}
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			rec.add(job.ID)
			return nil, nil
		}, nil)
		testkit.WaitFor(t, 5*time.Second, "all processed", func() bool { return len(rec.list()) == 6 })
		require.Equal(t, []string{"none", "p1a", "p1b", "p3", "p5a", "p5b"}, rec.list())
	})

	t.Run("LIFOGoesFirst", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		for _, id := range []string{"a", "b", "c"} {
			_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: id})
			require.NoError(t, err)
		}
		_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "urgent", LIFO: true})
		require.NoError(t, err)
		rec := &recorder{}
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			rec.add(job.ID)
			return nil, nil
		}, nil)
		testkit.WaitFor(t, 5*time.Second, "all processed", func() bool { return len(rec.list()) == 4 })
		require.Equal(t, []string{"urgent", "a", "b", "c"}, rec.list())
	})

	t.Run("DelayedRunsWhenDue", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		started := make(chan time.Time, 1)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			started <- time.Now()
			return nil, nil
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Delay: 300 * time.Millisecond})
		require.NoError(t, err)
		state, err := b.queue.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateDelayed, state)
		score, err := b.rdb.ZScore(ctx, b.prefix+":q:delayed", res.Job.ID).Result()
		require.NoError(t, err)
		require.Equal(t, float64(keys.DelayedScore(res.Job.Timestamp.UnixMilli()+300, 0)), score)
		// Due is the job's timestamp, whole milliseconds as BullMQ stores
		// it, plus the delay: a clock read before Add may be up to 1 ms
		// later than that timestamp (a run at 299.88 ms after it, CI).
		at := <-started
		require.GreaterOrEqual(t, at.Sub(res.Job.Timestamp), 300*time.Millisecond)
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Zero(t, job.Delay)
	})

	t.Run("PausedQueueHoldsJobs", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		require.NoError(t, b.queue.Pause(ctx))
		paused, err := b.queue.IsPaused(ctx)
		require.NoError(t, err)
		require.True(t, paused)
		var ran atomic.Int32
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			ran.Add(1)
			return nil, nil
		}, &drover.WorkerOptions{DrainDelay: 100 * time.Millisecond})
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		time.Sleep(300 * time.Millisecond) // a paused queue must stay untouched: nothing to wait for
		require.Zero(t, ran.Load())
		state, err := b.queue.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
		require.NoError(t, b.queue.Resume(ctx))
		b.waitState(t, res.Job.ID, drover.StateCompleted)
	})

	t.Run("BulkAddThousand", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.AddBulk(ctx, numberedJobs("bulk", 1000))
		require.NoError(t, err)
		require.Len(t, res, 1000)
		require.Equal(t, "1", res[0].Job.ID)
		require.Equal(t, "1000", res[999].Job.ID)
		var done atomic.Int32
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			done.Add(1)
			return job.ID, nil
		}, &drover.WorkerOptions{Concurrency: 50})
		testkit.WaitFor(t, 20*time.Second, "1000 completed", func() bool {
			c, err := b.queue.GetJobCounts(ctx, drover.StateCompleted)
			require.NoError(t, err)
			return c[drover.StateCompleted] == 1000
		})
		require.Equal(t, int32(1000), done.Load())
	})
}

func TestWorkerFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("PanicFailsTheJob", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			panic("kaboom")
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, "panic: kaboom", job.FailedReason)
		require.Len(t, job.Stacktrace, 1)
		require.Contains(t, job.Stacktrace[0], "worker_test.go")
	})

	t.Run("UnserialisableResultFails", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			return make(chan int), nil
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Contains(t, job.FailedReason, "not JSON-serialisable")
	})

	t.Run("RetriesThenFails", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var runs atomic.Int32
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, fmt.Errorf("attempt %d failed", runs.Add(1))
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 3})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 3, job.AttemptsMade)
		require.Equal(t, 3, job.AttemptsStarted)
		require.Equal(t, "attempt 3 failed", job.FailedReason)
		require.Equal(t, []string{"attempt 1 failed", "attempt 2 failed", "attempt 3 failed"}, job.Stacktrace)
		require.Len(t, job.Timeline, 3)
		require.Equal(t, drover.OutcomeRetried, job.Timeline[0].Outcome)
		require.Equal(t, drover.OutcomeRetriesExhausted, job.Timeline[2].Outcome)
		names := eventNames(b.events(t))
		require.Contains(t, names, "retries-exhausted:"+res.Job.ID)
	})

	t.Run("UnrecoverableSkipsRetries", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, drover.Unrecoverable(errors.New("bad input"))
		}, nil)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 5})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 1, job.AttemptsMade)
		require.NotContains(t, eventNames(b.events(t)), "retries-exhausted:"+res.Job.ID)
	})
}

func TestWorkerClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("WaitsForRunningJobs", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		started := make(chan struct{})
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			close(started)
			time.Sleep(200 * time.Millisecond)
			return "done", nil
		}), &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		<-started
		require.NoError(t, w.Close(ctx))
		state, err := b.queue.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateCompleted, state)
		exists, err := b.rdb.Exists(ctx, b.prefix+":q:marker:"+w.ID()).Result()
		require.NoError(t, err)
		require.Zero(t, exists, "the wake key must not outlive the worker")
	})

	// A result write that retries its job later wakes the fetcher through
	// the wake key. When Close began between that decision and the write,
	// the write landed after Close deleted the key, which outlived the
	// worker (CI at 953ab1b: TestDifferentialSchedulerRunRetry saw
	// q:marker:<worker> only in drover's state).
	t.Run("WakeKeyGoneWhenARetryIsWrittenDuringClose", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("later")
		}), &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		deciding, release := make(chan struct{}), make(chan struct{})
		drover.SetBeforeFinishWakeHook(w, func() {
			close(deciding)
			<-release
		})
		require.NoError(t, w.Start(ctx))
		_, err = b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}})
		require.NoError(t, err)
		<-deciding
		closed := make(chan error, 1)
		go func() { closed <- w.Close(ctx) }()
		// Close deletes the wake key without waiting for running jobs;
		// give it the time to, then let the write's wake-up go.
		time.Sleep(300 * time.Millisecond)
		close(release)
		require.NoError(t, <-closed)
		exists, err := b.rdb.Exists(ctx, b.prefix+":q:marker:"+w.ID()).Result()
		require.NoError(t, err)
		require.Zero(t, exists, "the wake key must not outlive the worker")
	})

	// Close marks the worker closing before it stops the fetcher. A job
	// that finishes in between frees its slot, and the fetcher, waiting
	// for one, took the next job (seen as a flaky differential step that
	// ran two jobs, CI at 301c990, seed 42).
	t.Run("TakesNoJobOnceClosing", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		first, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		second, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		release := make(chan struct{})
		var calls atomic.Int32
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			if calls.Add(1) == 1 {
				<-release
			}
			return nil, nil
		}), &drover.WorkerOptions{Prefix: b.prefix, Concurrency: 1})
		require.NoError(t, err)
		drover.SetCloseBegunHook(w, func() {
			// The first job finishes while Close is between the two:
			// give a fetcher that wrongly takes its slot every chance.
			close(release)
			b.waitState(t, first.Job.ID, drover.StateCompleted)
			deadline := time.Now().Add(time.Second)
			for calls.Load() < 2 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		})
		require.NoError(t, w.Start(ctx))
		testkit.WaitFor(t, 10*time.Second, "the first job to start", func() bool { return calls.Load() == 1 })
		require.NoError(t, w.Close(ctx))
		require.EqualValues(t, 1, calls.Load(), "a job was taken after Close began")
		state, err := b.queue.GetJobState(ctx, second.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
	})

	t.Run("DeadlineRequeuesWithoutSpendingAnAttempt", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		started := make(chan struct{})
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}), &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		<-started
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		require.NoError(t, w.Close(cctx))
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		state, err := job.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)
		require.Equal(t, 0, job.AttemptsMade)
		require.Equal(t, 1, job.AttemptsStarted)
		require.Equal(t, drover.OutcomeRequeued, job.Timeline[0].Outcome)
	})

	t.Run("CloseNeverStartedAndTwice", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) { return nil, nil }),
			&drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		require.NoError(t, w.Close(ctx))
		require.NoError(t, w.Close(ctx))
		require.ErrorIs(t, w.Start(ctx), drover.ErrClosed)
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	tests := []struct {
		name    string
		data    any
		opts    *drover.JobOptions
		is      error
		message string
	}{
		{"IntegerID", nil, &drover.JobOptions{JobID: "123"}, drover.ErrInvalidJobID, `job id "123" must not be an integer`},
		{"ColonID", nil, &drover.JobOptions{JobID: "a:b"}, drover.ErrInvalidJobID, `job id "a:b" must not contain ':'`},
		{"ZeroID", nil, &drover.JobOptions{JobID: "0"}, drover.ErrInvalidJobID, `reserved`},
		{"QueueKeyID", nil, &drover.JobOptions{JobID: "meta"}, drover.ErrInvalidJobID, `collides with a queue key`},
		{"NegativeDelay", nil, &drover.JobOptions{Delay: -time.Second}, drover.ErrInvalidOption, "JobOptions.Delay must not be negative, got -1s"},
		{"NegativeAttempts", nil, &drover.JobOptions{Attempts: -1}, drover.ErrInvalidOption, "JobOptions.Attempts must not be negative"},
		{"PriorityTooHigh", nil, &drover.JobOptions{Priority: drover.MaxPriority + 1}, drover.ErrInvalidOption, "JobOptions.Priority must be between 0 and 2097151"},
		{"UnknownBackoff", nil, &drover.JobOptions{Backoff: &drover.Backoff{Type: "linear", Delay: time.Second}}, drover.ErrInvalidOption, `unknown JobOptions.Backoff.Type "linear"`},
		{"JitterOutOfRange", nil, &drover.JobOptions{Backoff: &drover.Backoff{Type: "fixed", Jitter: 2}}, drover.ErrInvalidOption, "Jitter must be between 0 and 1"},
		{"DedupWithoutID", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{TTL: time.Second}}, drover.ErrInvalidOption, "Deduplication.ID must not be empty"},
		{"ChannelData", make(chan int), nil, drover.ErrInvalidData, "unsupported type: chan int"},
		{"FuncData", func() {}, nil, drover.ErrInvalidData, "unsupported type"},
		{"OverSizeLimit", map[string]string{"k": "0123456789"}, &drover.JobOptions{SizeLimit: 5}, drover.ErrInvalidData, "over SizeLimit 5"},
		// An age over 9223372036 s was stored and made the job unreadable
		// (GetJob and every GetJobs listing it failed: "age: not a finite
		// number of seconds up to 9223372036").
		{"RetentionAgeTooLong", nil, &drover.JobOptions{RemoveOnComplete: &drover.Retention{Age: math.MaxInt64}}, drover.ErrInvalidOption, "JobOptions.RemoveOnComplete.Age must be at most 2562047h47m16s"},
		// A TTL or age under 1ms was stored as none: the id held until the
		// job finished (a second add 20ms later was deduplicated, while
		// one with a 1ms TTL was created), and every job kept.
		{"DedupTTLUnderAMillisecond", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d", TTL: time.Microsecond}}, drover.ErrInvalidOption, "JobOptions.Deduplication.TTL must be at least 1ms (it is stored in ms), got 1µs"},
		{"RetentionAgeUnderAMillisecond", nil, &drover.JobOptions{RemoveOnComplete: &drover.Retention{Age: 999 * time.Microsecond}}, drover.ErrInvalidOption, "JobOptions.RemoveOnComplete.Age must be at least 1ms (it is stored in ms), got 999µs"},
		{"RetentionAgeJustTooLong", nil, &drover.JobOptions{RemoveOnFail: &drover.Retention{Age: 9223372036*time.Second + 600*time.Millisecond}}, drover.ErrInvalidOption, "JobOptions.RemoveOnFail.Age must be at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.queue.Add(ctx, "job", tt.data, tt.opts)
			require.ErrorIs(t, err, tt.is)
			require.Contains(t, err.Error(), tt.message)
		})
	}
	t.Run("BulkWithOneBadJobWritesNothing", func(t *testing.T) {
		_, err := b.queue.AddBulk(ctx, []drover.BulkJob{{Name: "ok"}, {Name: "bad", Opts: &drover.JobOptions{Delay: -1}}})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.Contains(t, err.Error(), "bulk job 1")
	})
	t.Run("ClosedQueue", func(t *testing.T) {
		q, err := drover.NewQueue(b.rdb, "closed", &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		require.NoError(t, q.Close())
		_, err = q.Add(ctx, "x", nil, nil)
		require.ErrorIs(t, err, drover.ErrClosed)
	})
	// Nothing above reached Redis.
	keys, err := b.rdb.Keys(ctx, b.prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)

	t.Run("BadQueueNames", func(t *testing.T) {
		for _, name := range []string{"", "a:b"} {
			_, err := drover.NewQueue(b.rdb, name, nil)
			require.ErrorIs(t, err, drover.ErrInvalidOption, strconv.Quote(name))
		}
	})
	t.Run("BadWorkerOptions", func(t *testing.T) {
		_, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(nil), &drover.WorkerOptions{Concurrency: -1})
		require.ErrorContains(t, err, "WorkerOptions.Concurrency must be at least 1, got -1")
		// A worker's default retention goes to Redis as a job's does, so
		// the same values are refused. Before, all were taken: an age under
		// 1ms went as none (every job kept), a negative count as keep all.
		for _, c := range []struct {
			opts drover.WorkerOptions
			want string
		}{
			{drover.WorkerOptions{RemoveOnComplete: &drover.Retention{Age: time.Microsecond}}, "WorkerOptions.RemoveOnComplete.Age must be at least 1ms (it is stored in ms), got 1µs"},
			{drover.WorkerOptions{RemoveOnFail: &drover.Retention{Age: math.MaxInt64}}, "WorkerOptions.RemoveOnFail.Age must be at most 2562047h47m16s"},
			{drover.WorkerOptions{RemoveOnFail: &drover.Retention{Count: -1}}, "WorkerOptions.RemoveOnFail fields must not be negative"},
		} {
			_, err := drover.NewWorker(b.rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }), &c.opts)
			require.ErrorIs(t, err, drover.ErrInvalidOption, c.want)
			require.ErrorContains(t, err, c.want)
		}
	})
}

// goroutineID is the running goroutine's number, from its stack header
// ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// A job goroutine runs the next job once its own is done, so a processor
// whose stack grew (encoding/json's does) keeps it: with a new goroutine
// per job, 300 jobs at concurrency 4 ran on 187 goroutines and (with a
// json.Unmarshal processor at concurrency 100) a third of the worker's CPU
// went to copying stacks. Close stops the kept
// goroutines (TestMain's goleak check sees any left).
func TestWorkerKeepsJobGoroutines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	const jobs, concurrency = 300, 4
	_, err := b.queue.AddBulk(ctx, numberedJobs("x", jobs))
	require.NoError(t, err)
	var mu sync.Mutex
	ran := map[string]int{}
	var done atomic.Int64
	w := b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		var v map[string]int
		if err := json.Unmarshal(job.Data, &v); err != nil {
			return nil, err
		}
		mu.Lock()
		ran[goroutineID()]++
		mu.Unlock()
		done.Add(1)
		return nil, nil
	}, &drover.WorkerOptions{Concurrency: concurrency})
	testkit.WaitFor(t, 20*time.Second, "all processed", func() bool { return done.Load() == jobs })
	require.NoError(t, w.Close(ctx))
	mu.Lock()
	defer mu.Unlock()
	// About concurrency running plus the two that may be carrying results;
	// a goroutine on its way back to the kept ones can miss a hand-out, so
	// allow some more. A goroutine per job would be about 300.
	require.LessOrEqual(t, len(ran), 5*concurrency, "jobs ran on %d goroutines", len(ran))
}

// Kept job goroutines do not outlive their use: once the queue is empty,
// those kept longer than the keep time are stopped.
func TestWorkerStopsIdleJobGoroutines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	_, err := b.queue.AddBulk(ctx, numberedJobs("x", 50))
	require.NoError(t, err)
	var done atomic.Int64
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		done.Add(1)
		return nil, nil
	}), &drover.WorkerOptions{Prefix: b.prefix, Concurrency: 8, DrainDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	drover.SetWorkerRunnerKeep(w, time.Second)
	require.NoError(t, w.Start(ctx))
	defer func() { require.NoError(t, w.Close(ctx)) }()
	testkit.WaitFor(t, 10*time.Second, "all processed", func() bool { return done.Load() == 50 })
	testkit.WaitFor(t, time.Second, "job goroutines kept after the jobs", func() bool { return drover.KeptRunners(w) > 0 })
	testkit.WaitFor(t, 10*time.Second, "kept goroutines stopped", func() bool { return drover.KeptRunners(w) == 0 })
}

// A processor runs on few drover frames: the stack it starts on is the one
// it parks on, and frames under it that push its work past the goroutine's
// stack double the stack (10,000 jobs in flight with a json.Unmarshal
// processor: 8 KB stacks instead of 4 KB, 117 MB resident instead of 84).
// Only the job goroutine's loop and the panic-catching call are under it,
// for the first job of a goroutine, for a kept goroutine's next one, and
// with a time limit armed.
func TestProcessorRunsOnFewFrames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts drover.WorkerOptions
	}{
		{"NoTimeout", drover.WorkerOptions{Concurrency: 2}},
		{"JobTimeout", drover.WorkerOptions{Concurrency: 2, JobTimeout: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			const jobs = 20
			_, err := b.queue.AddBulk(ctx, numberedJobs("x", jobs))
			require.NoError(t, err)
			var mu sync.Mutex
			under := map[string]int{} // drover frames under the processor, joined
			var done atomic.Int64
			b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
				pcs := make([]uintptr, 64)
				frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
				var names []string
				for {
					f, more := frames.Next()
					if strings.HasPrefix(f.Function, "github.com/seed40057009/drover.") {
						names = append(names, strings.TrimPrefix(f.Function, "github.com/seed40057009/drover."))
					}
					if !more {
						break
					}
				}
				mu.Lock()
				under[strings.Join(names, " < ")]++
				mu.Unlock()
				done.Add(1)
				return nil, nil
			}, &tc.opts)
			testkit.WaitFor(t, 20*time.Second, "all processed", func() bool { return done.Load() == jobs })
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, map[string]int{"(*Worker).call < (*Worker).runJobs": jobs}, under)
		})
	}
}
