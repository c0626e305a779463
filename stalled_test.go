package drover_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestStalledChildProcess is not a test on its own: TestStalledRecovery runs
// the test binary again with DROVER_STALL_CHILD set, and this function then
// becomes a worker process that takes one job and hangs until it is killed.
func TestStalledChildProcess(t *testing.T) {
	addr := os.Getenv("DROVER_STALL_CHILD")
	if addr == "" {
		return
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		fmt.Printf("started %s\n", job.ID)
		select {} // hang: only SIGKILL ends this process
	}), &drover.WorkerOptions{Prefix: os.Getenv("DROVER_STALL_PREFIX"), LockDuration: 600 * time.Millisecond, SkipStalledCheck: true})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	select {}
}

func TestStalledRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// killWorkerMidJob starts a worker process, waits until it runs job id,
	// and SIGKILLs it: the job stays active with a lock that will expire.
	killWorkerMidJob := func(t *testing.T, b *testBundle, id string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestStalledChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DROVER_STALL_CHILD="+redistest.Shared(t).Addr, "DROVER_STALL_PREFIX="+b.prefix)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "started "+id, strings.TrimSpace(line))
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		state, err := b.queue.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateActive, state, "a killed worker leaves its job active")
	}

	t.Run("KilledWorkerJobIsRecoveredAndCompletes", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 1})
		require.NoError(t, err)
		killWorkerMidJob(t, b, res.Job.ID)

		stalled := &recorder{}
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return "recovered", nil },
			&drover.WorkerOptions{StalledInterval: 200 * time.Millisecond, LockDuration: 600 * time.Millisecond,
				Hooks: &drover.WorkerHooks{Stalled: func(id string, n int) { stalled.add(id) }}})
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		j, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 1, j.StalledCount)
		require.Equal(t, 2, j.AttemptsStarted)
		require.Equal(t, 1, j.AttemptsMade, "a stall does not spend an attempt")
		require.Equal(t, `"recovered"`, string(j.ReturnValue))
		// The recovering worker records its completion (the stall before it
		// has no record: the inspector fills it in from StalledCount).
		require.Len(t, j.Timeline, 1, "the completion after a stall is recorded")
		require.Equal(t, 2, j.Timeline[0].N)
		require.Equal(t, drover.OutcomeCompleted, j.Timeline[0].Outcome)
		require.Equal(t, []string{res.Job.ID}, stalled.list())
		names := eventNames(b.events(t))
		id := res.Job.ID
		require.Equal(t, []string{"added:" + id, "waiting:" + id, "active:" + id + ":waiting",
			"waiting:" + id + ":active", "stalled:" + id, "active:" + id + ":waiting", "completed:" + id + ":active", "drained"}, names)
	})

	t.Run("PastMaxStalledCountFails", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 3})
		require.NoError(t, err)
		killWorkerMidJob(t, b, res.Job.ID)
		var ran atomic.Bool
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { ran.Store(true); return nil, nil },
			&drover.WorkerOptions{StalledInterval: 200 * time.Millisecond, LockDuration: 600 * time.Millisecond, MaxStalledCount: -1})
		b.waitState(t, res.Job.ID, drover.StateFailed)
		require.False(t, ran.Load(), "a job over the stall limit is failed without running")
		j, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, "job stalled more than allowable limit", j.FailedReason)
		require.Equal(t, 1, j.StalledCount)
		require.Equal(t, 1, j.AttemptsMade)
		require.Empty(t, j.DeferredFailure)
		require.NotContains(t, eventNames(b.events(t)), "retries-exhausted:"+res.Job.ID)
	})

	t.Run("LiveWorkerKeepsItsLock", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		// 3 lock durations: only renewals can keep the lock that long. The
		// lock is 3 s, not less, so that a test process starved for a
		// second or two on a loaded machine still renews in time: with
		// 1 s, at load 40 under -race, the lock expired unrenewed and the
		// job was counted stalled.
		const lock = 3 * time.Second
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			time.Sleep(3 * lock)
			return nil, nil
		}, &drover.WorkerOptions{StalledInterval: 100 * time.Millisecond, LockDuration: lock})
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		testkit.WaitFor(t, 60*time.Second, "the job to complete", func() bool {
			s, err := b.queue.GetJobState(ctx, res.Job.ID)
			require.NoError(t, err)
			return s == drover.StateCompleted
		})
		j, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Zero(t, j.StalledCount)
		require.Equal(t, 1, j.AttemptsStarted)
	})

	t.Run("LostLockCancelsProcessorAndWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		causes := make(chan error, 1)
		lostWhy := make(chan string, 1)
		started := make(chan struct{})
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return "should not be written", nil
		}, &drover.WorkerOptions{LockDuration: 200 * time.Millisecond, SkipStalledCheck: true,
			Hooks: &drover.WorkerHooks{LockLost: func(job *drover.Job, why string) { lostWhy <- why }}})
		res, err := b.queue.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		<-started
		require.NoError(t, b.rdb.Set(ctx, b.prefix+":q:"+res.Job.ID+":lock", "someone-else", time.Minute).Err())
		require.ErrorIs(t, <-causes, drover.ErrLockLost)
		require.Contains(t, <-lostWhy, "another worker holds the job's lock")
		time.Sleep(100 * time.Millisecond) // the worker must not write after losing the lock
		j, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Nil(t, j.ReturnValue)
		state, err := j.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StateActive, state)
	})
}
