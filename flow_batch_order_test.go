package drover_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// batchOrderRun runs the scenario of the flow batch-order tests: a job x
// adds a child y of the same queue while it runs (FlowJob.Parent), a
// worker with concurrency 4 takes y, and y's processor returns childFn's
// result before x's returns; Redis is paused meanwhile, with two earlier
// results (jobs a and b) in flight, so the worker writes y's result and
// x's in one script call, y's first. It returns x's state and failed
// reason once both are written.
func batchOrderRun(t *testing.T, childOpts *drover.JobOptions, childFn func() (any, error)) (drover.JobState, string) {
	t.Helper()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	ctl := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(rdb, nil)
	require.NoError(t, err)

	gates := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "x": make(chan struct{}), "y": make(chan struct{})}
	var mu sync.Mutex
	running := map[string]bool{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.ID == "x" {
			ref := job.Ref()
			if _, err := fp.Add(ctx, drover.FlowJob{Name: "y", QueueName: "q", Parent: &ref, Opts: childOpts}); err != nil {
				return nil, err
			}
		}
		mu.Lock()
		running[job.Name] = true
		mu.Unlock()
		<-gates[job.Name]
		if job.Name == "y" {
			return childFn()
		}
		return job.Name, nil
	}), &drover.WorkerOptions{Concurrency: 4})
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "x"} {
		_, err := q.Add(ctx, id, nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := w.Close(cctx); err != nil {
			t.Logf("close: %v", err)
		}
	})
	testkit.WaitFor(t, 10*time.Second, "a, b, x and y running", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(running) == 4
	})

	// Redis pauses: a's and b's results take the worker's two writers,
	// then y's and x's results wait, in that order, for the next call.
	require.NoError(t, ctl.Do(ctx, "CLIENT", "PAUSE", 1500, "ALL").Err())
	for _, id := range []string{"a", "b", "y", "x"} {
		close(gates[id])
		time.Sleep(200 * time.Millisecond)
	}
	var state drover.JobState
	testkit.WaitFor(t, 10*time.Second, "x finished", func() bool {
		s, err := q.GetJobState(ctx, "x")
		require.NoError(t, err)
		state = s
		return s == drover.StateCompleted || s == drover.StateFailed
	})
	job, err := q.GetJob(ctx, "x")
	require.NoError(t, err)
	return state, job.FailedReason
}

// TestWorkerBatchChildBeforeParent: a child's result and then its
// parent's, written in one script call, must end as two calls in that
// order end (as Node's worker writes them, one moveToFinished each): the
// child completes first, so the parent, no longer waiting for it,
// completes. Before, the call checked the parent's pending children before
// writing any result of the batch and failed the parent with "has pending
// dependencies".
//
//	go test -count=1 -run 'TestWorkerBatch' .
func TestWorkerBatchChildBeforeParent(t *testing.T) {
	t.Parallel()
	state, reason := batchOrderRun(t, nil, func() (any, error) { return "y", nil })
	require.Equal(t, drover.StateCompleted, state, "x failed: %s", reason)
}

// TestWorkerBatchFailedChildBeforeParent: as TestWorkerBatchChildBeforeParent,
// the child failing: with FailParent its failure, written first, makes the
// parent's completion refused as BullMQ refuses it ("at least one failed
// child", for good); with IgnoreDependency the parent no longer waits for
// it and completes. Before, the parent was refused as still waiting for
// the child in both cases.
func TestWorkerBatchFailedChildBeforeParent(t *testing.T) {
	t.Parallel()
	broke := func() (any, error) { return nil, errors.New("child broke") }
	t.Run("FailParent", func(t *testing.T) {
		t.Parallel()
		state, reason := batchOrderRun(t, &drover.JobOptions{ParentPolicy: drover.FailParent}, broke)
		require.Equal(t, drover.StateFailed, state)
		require.Equal(t, "Cannot complete job x because it has at least one failed child. moveToFinished", reason)
	})
	t.Run("IgnoreDependency", func(t *testing.T) {
		t.Parallel()
		state, reason := batchOrderRun(t, &drover.JobOptions{ParentPolicy: drover.IgnoreDependency}, broke)
		require.Equal(t, drover.StateCompleted, state, "x failed: %s", reason)
	})
	t.Run("Waits", func(t *testing.T) {
		t.Parallel()
		// Without a policy the failed child stays pending: refused, as
		// BullMQ refuses it.
		state, reason := batchOrderRun(t, nil, broke)
		require.Equal(t, drover.StateFailed, state)
		require.Equal(t, "Job x has pending dependencies. moveToFinished", reason)
	})
}
