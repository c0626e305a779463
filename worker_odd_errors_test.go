package drover_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// nilPtrError's Error dereferences its receiver: returned as a typed nil
// it panics when called.
type nilPtrError struct{ msg string }

func (e *nilPtrError) Error() string { return e.msg }

// panicMarshaler's MarshalJSON panics.
type panicMarshaler struct{}

func (panicMarshaler) MarshalJSON() ([]byte, error) { panic("marshal boom") }

// A processor's odd returns fail its job, and the worker goes on: a typed
// nil error (whose Error panics) and a result whose MarshalJSON panics
// crashed the whole process, as their outcome was decided outside the
// processor's recover, leaving the job active for the next worker to crash on.
func TestWorkerOddReturnsFailTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		proc   drover.ProcessorFunc
		reason string
	}{
		{"TypedNilError", func(ctx context.Context, job *drover.Job) (any, error) {
			var e *nilPtrError
			if job.Name == "odd" {
				return nil, e
			}
			return "ok", nil
		}, "processor returned a *drover_test.nilPtrError error whose Error method panics"},
		{"PanickingMarshalJSON", func(ctx context.Context, job *drover.Job) (any, error) {
			if job.Name == "odd" {
				return panicMarshaler{}, nil
			}
			return "ok", nil
		}, "marshal boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			b.startWorker(t, tc.proc, nil)
			odd, err := b.queue.Add(ctx, "odd", nil, nil)
			require.NoError(t, err)
			b.waitState(t, odd.Job.ID, drover.StateFailed)
			job, err := b.queue.GetJob(ctx, odd.Job.ID)
			require.NoError(t, err)
			require.Contains(t, job.FailedReason, tc.reason)
			next, err := b.queue.Add(ctx, "fine", nil, nil)
			require.NoError(t, err)
			b.waitState(t, next.Job.ID, drover.StateCompleted)
		})
	}
}

// A custom backoff strategy that panics fails the job for good, as one
// that returns an error does, instead of crashing the process (it runs
// outside the processor's recover).
func TestWorkerPanickingBackoffFailsTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "odd" {
			return nil, errors.New("try again")
		}
		return "ok", nil
	}, &drover.WorkerOptions{BackoffStrategies: map[string]drover.BackoffFunc{
		"boom": func(int, string, error, *drover.Job) time.Duration { panic("strategy boom") },
	}})
	q, err := drover.NewQueue(b.rdb, b.name, &drover.QueueOptions{Prefix: b.prefix, BackoffTypes: []string{"boom"}})
	require.NoError(t, err)
	odd, err := q.Add(ctx, "odd", nil, &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "boom"}})
	require.NoError(t, err)
	b.waitState(t, odd.Job.ID, drover.StateFailed)
	job, err := b.queue.GetJob(ctx, odd.Job.ID)
	require.NoError(t, err)
	require.Contains(t, job.FailedReason, "strategy boom")
	next, err := b.queue.Add(ctx, "fine", nil, nil)
	require.NoError(t, err)
	b.waitState(t, next.Job.ID, drover.StateCompleted)
}

// A job whose lock is lost is reported once (WorkerHooks.LockLost, the
// lock-lost metric built on it), however long its processor takes to
// return: the lock keeper went on renewing it, failing and reporting the
// loss again every LockDuration/4.
func TestWorkerLockLostReportedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	var lost atomic.Int32
	started := make(chan struct{})
	returned := make(chan struct{})
	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		close(started)
		<-ctx.Done()
		time.Sleep(time.Second) // slow to notice: 20 renewals at 50ms
		close(returned)
		return nil, context.Cause(ctx)
	}, &drover.WorkerOptions{LockDuration: 200 * time.Millisecond, SkipStalledCheck: true,
		Hooks: &drover.WorkerHooks{LockLost: func(*drover.Job, string) { lost.Add(1) }}})
	res, err := b.queue.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	<-started
	require.NoError(t, b.rdb.Set(ctx, b.prefix+":q:"+res.Job.ID+":lock", "someone-else", time.Minute).Err())
	<-returned
	require.EqualValues(t, 1, lost.Load(), "one lost lock, one report")
}

// A processor that calls runtime.Goexit (t.FailNow, testify's require in a
// processor under test) fails its attempt, and the worker goes on and
// closes: the goroutine ended without returning, so the job stayed in
// flight for good, its lock renewed (never recovered as stalled), and
// Close waited for it forever.
func TestWorkerProcessorGoexitFailsTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "odd" {
			runtime.Goexit()
		}
		return "ok", nil
	}, &drover.WorkerOptions{Concurrency: 2})
	odd, err := b.queue.Add(ctx, "odd", nil, nil)
	require.NoError(t, err)
	b.waitState(t, odd.Job.ID, drover.StateFailed)
	job, err := b.queue.GetJob(ctx, odd.Job.ID)
	require.NoError(t, err)
	require.Contains(t, job.FailedReason, "runtime.Goexit")
	for range 3 {
		next, err := b.queue.Add(ctx, "fine", nil, nil)
		require.NoError(t, err)
		b.waitState(t, next.Job.ID, drover.StateCompleted)
	}
}

// The Job a processor gets names the worker that took it (ProcessedBy, as
// the fetch wrote pb): a job retried by a worker named "b" after one named
// "a" ran it showed "a", the hash's value before this fetch.
func TestWorkerJobNamesItsWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	// The backoff keeps worker "a" from taking the retry before it closes.
	res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 2,
		Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 300 * time.Millisecond}})
	require.NoError(t, err)
	seen := make(chan string, 2)
	proc := func(ctx context.Context, job *drover.Job) (any, error) {
		seen <- job.ProcessedBy
		if job.AttemptsMade == 0 {
			return nil, errors.New("again")
		}
		return "ok", nil
	}
	wa, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(proc), &drover.WorkerOptions{Prefix: b.prefix, Name: "a"})
	require.NoError(t, err)
	require.NoError(t, wa.Start(ctx))
	require.Equal(t, "a", <-seen)
	require.NoError(t, wa.Close(ctx))
	b.startWorker(t, proc, &drover.WorkerOptions{Name: "b"})
	require.Equal(t, "b", <-seen, "the job the second worker runs names it")
	b.waitState(t, res.Job.ID, drover.StateCompleted)
	job, err := b.queue.GetJob(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "b", job.ProcessedBy)
}

// TestJobProcessedOnIsTheStoredOne: the Job a processor (or NextJob) gets
// carries the processedOn its take stored, to the millisecond, at
// concurrency 1 and 10, and on a retry. It used to carry the worker's clock
// read after the reply, about a millisecond later, so the processor's
// job.ProcessedOn and a read of the job (drover's or Node's) disagreed.
func TestJobProcessedOnIsTheStoredOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, conc := range []int{1, 10} {
		t.Run(fmt.Sprintf("c%d", conc), func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			type seenAt struct {
				id      string
				attempt int
				at      time.Time
			}
			seen := make(chan seenAt, 100)
			var ids []string
			for i := range 20 {
				res, err := b.queue.Add(ctx, "x", i, &drover.JobOptions{Attempts: 2})
				require.NoError(t, err)
				ids = append(ids, res.Job.ID)
			}
			b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
				seen <- seenAt{job.ID, job.AttemptsStarted, job.ProcessedOn}
				// Let the stored value move on: a retry's take writes a later one.
				time.Sleep(2 * time.Millisecond)
				if job.AttemptsMade == 0 && job.ID == ids[3] {
					return nil, errors.New("again")
				}
				return nil, nil
			}, &drover.WorkerOptions{Concurrency: conc})
			for _, id := range ids {
				b.waitState(t, id, drover.StateCompleted)
			}
			close(seen)
			last := map[string]seenAt{}
			for s := range seen {
				if s.attempt > last[s.id].attempt {
					last[s.id] = s
				}
			}
			require.Equal(t, 2, last[ids[3]].attempt, "the retried job ran twice")
			for _, id := range ids {
				job, err := b.queue.GetJob(ctx, id)
				require.NoError(t, err)
				require.Equal(t, job.ProcessedOn.UnixMilli(), last[id].at.UnixMilli(),
					"job %s (attempt %d): the processor's processedOn is the stored one", id, last[id].attempt)
			}
		})
	}
	t.Run("NextJob", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		_, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		w, err := drover.NewWorker(b.rdb, b.name, nil, &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		t.Cleanup(func() { _ = w.Close(ctx) })
		job, err := w.NextJob(ctx, "tok-1", time.Second)
		require.NoError(t, err)
		require.NotNil(t, job)
		stored, err := b.queue.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, stored.ProcessedOn.UnixMilli(), job.ProcessedOn.UnixMilli())
	})
}
