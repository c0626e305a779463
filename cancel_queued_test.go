package drover_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestCancelQueuedJob: Queue.CancelJob fails a job that is not running
// (waiting, paused, prioritized, delayed) for good in one step: failedReason
// "cancelled: <reason>", in the failed set with finishedOn, no attempt
// recorded, the failed event naming the state it left, drained when the
// queue is left empty; removeOnFail honoured; a worker started afterwards
// never runs it.
func TestCancelQueuedJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		opts    *drover.JobOptions
		paused  bool
		state   drover.JobState
		prev    string
		removed bool
	}{
		{name: "waiting", state: drover.StateWaiting, prev: "waiting"},
		{name: "paused queue", paused: true, state: drover.StateWaiting, prev: "waiting"},
		{name: "prioritized", opts: &drover.JobOptions{Priority: 5}, state: drover.StatePrioritized, prev: "prioritized"},
		{name: "delayed", opts: &drover.JobOptions{Delay: time.Hour}, state: drover.StateDelayed, prev: "delayed"},
		{name: "run at", opts: &drover.JobOptions{RunAt: time.Now().Add(time.Hour)}, state: drover.StateDelayed, prev: "delayed"},
		{name: "with attempts left", opts: &drover.JobOptions{Attempts: 5, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}},
			state: drover.StateWaiting, prev: "waiting"},
		{name: "removeOnFail", opts: &drover.JobOptions{RemoveOnFail: &drover.Retention{Remove: true}},
			state: drover.StateWaiting, prev: "waiting", removed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			if tc.paused {
				require.NoError(t, b.queue.Pause(ctx))
			}
			res, err := b.queue.Add(ctx, "j", map[string]int{"n": 1}, tc.opts)
			require.NoError(t, err)
			id := res.Job.ID
			b.waitState(t, id, tc.state)

			require.NoError(t, b.queue.CancelJob(ctx, id, " operator ", nil))

			evs := b.events(t)
			last := evs[len(evs)-1]
			if last.Name == drover.EventDrained {
				last = evs[len(evs)-2]
			}
			require.Equal(t, drover.EventFailed, last.Name, "events: %v", eventNames(evs))
			require.Equal(t, id, last.JobID)
			require.Equal(t, "cancelled: operator", last.FailedReason)
			require.Equal(t, tc.prev, last.Prev)
			for _, e := range evs {
				require.NotEqual(t, drover.EventRetriesExhausted, e.Name, "it never ran")
			}
			if tc.removed {
				_, err := b.queue.GetJob(ctx, id)
				require.ErrorIs(t, err, drover.ErrJobNotFound)
			} else {
				job, err := b.queue.GetJob(ctx, id)
				require.NoError(t, err)
				require.Equal(t, "cancelled: operator", job.FailedReason)
				require.Zero(t, job.AttemptsMade)
				require.Zero(t, job.AttemptsStarted)
				require.True(t, job.ProcessedOn.IsZero())
				require.False(t, job.FinishedOn.IsZero())
				require.Empty(t, job.Stacktrace)
				b.waitState(t, id, drover.StateFailed)
			}
			for _, key := range []string{"wait", "paused", "prioritized", "delayed", "active"} {
				n, err := b.rdb.Exists(ctx, b.prefix+":q:"+key).Result()
				require.NoError(t, err)
				require.Zero(t, n, "%s is empty", key)
			}

			// A worker started now finds nothing to run.
			if tc.paused {
				require.NoError(t, b.queue.Resume(ctx))
			}
			ran := make(chan string, 1)
			b.startWorker(t, func(_ context.Context, job *drover.Job) (any, error) {
				ran <- job.ID
				return nil, nil
			}, &drover.WorkerOptions{DrainDelay: 20 * time.Millisecond})
			marker, err := b.queue.Add(ctx, "after", nil, nil)
			require.NoError(t, err)
			require.Equal(t, marker.Job.ID, <-ran)
		})
	}
}

// TestCancelQueuedJobRetention: removeOnFail's count and age bounds trim the
// failed set as a worker's final failure would.
func TestCancelQueuedJobRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	keep1 := &drover.JobOptions{RemoveOnFail: &drover.Retention{Count: 1}}
	first, err := b.queue.Add(ctx, "a", nil, keep1)
	require.NoError(t, err)
	second, err := b.queue.Add(ctx, "b", nil, keep1)
	require.NoError(t, err)
	require.NoError(t, b.queue.CancelJob(ctx, first.Job.ID, "", nil))
	require.NoError(t, b.queue.CancelJob(ctx, second.Job.ID, "", nil))
	_, err = b.queue.GetJob(ctx, first.Job.ID)
	require.ErrorIs(t, err, drover.ErrJobNotFound, "trimmed by the second's count bound")
	job, err := b.queue.GetJob(ctx, second.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", job.FailedReason)
}

// TestCancelQueuedJobDedup: a cancelled job's deduplication id is released
// as BullMQ releases it on a final failure: a simple-mode id at once (the
// next add creates a job), a throttle id with a TTL kept until it expires.
func TestCancelQueuedJobDedup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		dedup drover.Deduplication
		freed bool
	}{
		{name: "simple", dedup: drover.Deduplication{ID: "d"}, freed: true},
		{name: "throttle", dedup: drover.Deduplication{ID: "d", TTL: time.Hour}, freed: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			opts := &drover.JobOptions{Deduplication: &tc.dedup}
			res, err := b.queue.Add(ctx, "j", nil, opts)
			require.NoError(t, err)
			require.NoError(t, b.queue.CancelJob(ctx, res.Job.ID, "", nil))
			again, err := b.queue.Add(ctx, "j", nil, opts)
			require.NoError(t, err)
			if tc.freed {
				require.Equal(t, drover.AddCreated, again.Outcome)
				require.NotEqual(t, res.Job.ID, again.Job.ID)
			} else {
				require.Equal(t, drover.AddDeduplicated, again.Outcome)
			}
		})
	}
}

// TestCancelQueuedFlowChild: cancelling a flow child applies its
// ParentPolicy to the parent as a final failure does.
func TestCancelQueuedFlowChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		policy drover.ParentPolicy
		parent drover.JobState
		defa   bool
	}{
		{policy: drover.ParentWaits, parent: drover.StateWaitingChildren},
		{policy: drover.FailParent, parent: drover.StateWaiting, defa: true},
		{policy: drover.ContinueParent, parent: drover.StateWaiting},
		{policy: drover.IgnoreDependency, parent: drover.StateWaiting},
		{policy: drover.RemoveDependency, parent: drover.StateWaiting},
	}
	for _, tc := range cases {
		t.Run(tc.policy.String(), func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			f, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
			require.NoError(t, err)
			node, err := f.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Children: []drover.FlowJob{
				{Name: "child", QueueName: "q", Opts: &drover.JobOptions{ParentPolicy: tc.policy}},
			}})
			require.NoError(t, err)
			child := node.Children[0].Job.ID
			require.NoError(t, b.queue.CancelJob(ctx, child, "no longer needed", nil))
			b.waitState(t, child, drover.StateFailed)
			b.waitState(t, node.Job.ID, tc.parent)
			parent, err := b.queue.GetJob(ctx, node.Job.ID)
			require.NoError(t, err)
			require.Equal(t, tc.defa, parent.DeferredFailure != "", "deferred failure %q", parent.DeferredFailure)
		})
	}
}

// TestCancelJobRefused: a finished job, a parent waiting for its children,
// a job scheduler's next run and an unknown id are refused with an error naming the state, and Redis
// is left exactly as it was.
func TestCancelJobRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		if job.Name == "bad" {
			return nil, drover.Unrecoverable(fmt.Errorf("no"))
		}
		return "ok", nil
	}), &drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	done, err := b.queue.Add(ctx, "done", nil, nil)
	require.NoError(t, err)
	bad, err := b.queue.Add(ctx, "bad", nil, nil)
	require.NoError(t, err)
	b.waitState(t, done.Job.ID, drover.StateCompleted)
	b.waitState(t, bad.Job.ID, drover.StateFailed)
	require.NoError(t, w.Close(ctx))
	f, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	node, err := f.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "other", Children: []drover.FlowJob{
		{Name: "child", QueueName: "other", Opts: &drover.JobOptions{Delay: time.Hour}},
	}})
	require.NoError(t, err)
	other, err := drover.NewQueue(b.rdb, "other", &drover.QueueOptions{Prefix: b.prefix})
	require.NoError(t, err)
	run, err := b.queue.UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)

	before, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	for _, tc := range []struct {
		q     *drover.Queue
		id    string
		is    error
		state string
	}{
		{q: b.queue, id: done.Job.ID, is: drover.ErrNotInState, state: "it is completed"},
		{q: b.queue, id: bad.Job.ID, is: drover.ErrNotInState, state: "it is failed"},
		{q: other, id: node.Job.ID, is: drover.ErrNotInState, state: "it is waiting-children"},
		{q: b.queue, id: "404", is: drover.ErrJobNotFound},
		{q: b.queue, id: run.ID, is: drover.ErrSchedulerJob, state: "pending iteration of a job scheduler"},
	} {
		err := tc.q.CancelJob(ctx, tc.id, "x", nil)
		require.ErrorIs(t, err, tc.is, tc.id)
		require.ErrorContains(t, err, tc.state)
	}
	after, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	require.Empty(t, statedump.Diff(before, after))
}

// TestCancelJobRacesAWorker: cancels sent while a worker takes the same jobs
// each land once, on one side of the take: a job the worker had not taken
// fails without running (no attempt), a job it had taken is cancelled in its
// processor (one attempt). No job is lost, runs after its cancel, or ends
// any other way. A cancel that reached the worker between its fetch (in
// Redis) and the fetch's reply was dropped, and the job ran on (job 12 of
// 60 still active after 10 s, 1 run in 5).
func TestCancelJobRacesAWorker(t *testing.T) {
	t.Parallel()
	// Rounds: each has a few cancels that meet the worker's fetch.
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			cancelRacesAWorker(t)
		})
	}
}

func cancelRacesAWorker(t *testing.T) {
	ctx := context.Background()
	b := setupQueue(t)
	const n = 60
	var mu sync.Mutex
	started := map[string]bool{}
	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		started[job.ID] = true
		mu.Unlock()
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}, &drover.WorkerOptions{Concurrency: 8, DrainDelay: 20 * time.Millisecond})
	ids := make([]string, n)
	for i := range ids {
		res, err := b.queue.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		ids[i] = res.Job.ID
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.queue.CancelJob(ctx, id, "race", nil); err != nil {
				t.Errorf("cancel %s: %v", id, err)
			}
		}()
	}
	wg.Wait()
	taken := 0
	for _, id := range ids {
		b.waitState(t, id, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "cancelled: race", job.FailedReason)
		mu.Lock()
		ran := started[id]
		mu.Unlock()
		if ran {
			taken++
			require.Equal(t, 1, job.AttemptsMade, id)
		} else {
			require.Zero(t, job.AttemptsMade, id)
			require.True(t, job.ProcessedOn.IsZero(), id)
		}
	}
	t.Logf("%d of %d jobs were taken by the worker before their cancel", taken, n)
	testkit.WaitFor(t, 10*time.Second, "nothing left active", func() bool {
		c, err := b.queue.GetJobCounts(ctx, drover.StateActive, drover.StateWaiting)
		require.NoError(t, err)
		return c[drover.StateActive] == 0 && c[drover.StateWaiting] == 0
	})
}

// TestCancelQueuedJobUnderClientRetry: a proxy lets the cancel script run,
// then loses its reply and resets the connection; go-redis sends the
// command again. The job is failed once and CancelJob reports the first
// run's success, also for a job removed on failure.
func TestCancelQueuedJobUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts *drover.JobOptions
	}{
		{name: "kept", opts: &drover.JobOptions{Delay: time.Hour}},
		{name: "removeOnFail", opts: &drover.JobOptions{RemoveOnFail: &drover.Retention{Remove: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy, rdb := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{MaxRetries: 3})
			direct, prefix := redistest.Client(t)
			q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
			require.NoError(t, err)
			// Load the script first, so the dropped reply is the cancel's own.
			warm, err := q.Add(ctx, "warm-up", nil, nil)
			require.NoError(t, err)
			require.NoError(t, q.CancelJob(ctx, warm.Job.ID, "", nil))

			res, err := q.Add(ctx, "j", nil, tc.opts)
			require.NoError(t, err)
			proxy.DropReplyTo("evalsha")
			require.NoError(t, q.CancelJob(ctx, res.Job.ID, "once", nil))
			require.Equal(t, int64(1), proxy.Dropped(), "the reply was lost once")
			failed := 0
			entries, err := direct.XRange(ctx, prefix+":q:events", "-", "+").Result()
			require.NoError(t, err)
			for _, e := range entries {
				if e.Values["event"] == "failed" && e.Values["jobId"] == res.Job.ID {
					failed++
				}
			}
			require.Equal(t, 1, failed, "one failed event")
		})
	}
}

// TestCancelJobNotRunning: CancelOptions.NotRunning cancels a job not
// running yet as CancelJob does, and refuses one a worker runs
// (ErrNotInState naming it active) without a word to the worker or a write
// to Redis: its attempt goes on and ends as the processor says. Combined
// with Retry it is refused before any I/O.
func TestCancelJobNotRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	opts := &drover.CancelOptions{NotRunning: true}
	waiting, err := b.queue.Add(ctx, "waiting", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	require.NoError(t, b.queue.CancelJob(ctx, waiting.Job.ID, "stop", opts))
	b.waitState(t, waiting.Job.ID, drover.StateFailed)

	release := make(chan struct{})
	cancelled := make(chan error, 1)
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	}), &drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	running, err := b.queue.Add(ctx, "running", nil, nil)
	require.NoError(t, err)
	b.waitState(t, running.Job.ID, drover.StateActive)

	err = b.queue.CancelJob(ctx, running.Job.ID, "stop", opts)
	require.ErrorIs(t, err, drover.ErrNotInState)
	require.ErrorContains(t, err, "it is active")
	require.ErrorIs(t, b.queue.CancelJob(ctx, running.Job.ID, "stop", &drover.CancelOptions{NotRunning: true, Retry: true}), drover.ErrInvalidOption)
	close(release)
	b.waitState(t, running.Job.ID, drover.StateCompleted)
	select {
	case err := <-cancelled:
		t.Fatalf("the running attempt was cancelled: %v", err)
	default:
	}
}

// TestCancelJobRunning: CancelOptions.Running refuses a job no worker runs
// (waiting or delayed) with ErrNotInState naming its state, leaving it
// queued, and cancels a running attempt as CancelJob does. Combined with
// NotRunning it is refused before any I/O.
func TestCancelJobRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	opts := &drover.CancelOptions{Running: true}
	for _, o := range []*drover.JobOptions{nil, {Delay: time.Hour}} {
		res, err := b.queue.Add(ctx, "queued", nil, o)
		require.NoError(t, err)
		want, err := b.queue.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		err = b.queue.CancelJob(ctx, res.Job.ID, "stop", opts)
		require.ErrorIs(t, err, drover.ErrNotInState)
		require.ErrorContains(t, err, "it is "+string(want))
		st, err := b.queue.GetJobState(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, want, st)
		require.NoError(t, b.queue.Job(res.Job.ID).Remove(ctx, nil))
	}
	require.ErrorIs(t, b.queue.CancelJob(ctx, "x", "stop", &drover.CancelOptions{NotRunning: true, Running: true}), drover.ErrInvalidOption)

	cancelled := make(chan error, 1)
	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	}), &drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	running, err := b.queue.Add(ctx, "running", nil, nil)
	require.NoError(t, err)
	b.waitState(t, running.Job.ID, drover.StateActive)
	require.NoError(t, b.queue.CancelJob(ctx, running.Job.ID, "stop", opts))
	select {
	case err := <-cancelled:
		require.ErrorIs(t, err, drover.ErrJobCancelled)
	case <-time.After(10 * time.Second):
		t.Fatal("the running attempt was not cancelled")
	}
	b.waitState(t, running.Job.ID, drover.StateFailed)
}
