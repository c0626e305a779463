package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropWaitUntilFinished: drover's WaitUntilFinished on jobs a Node
// BullMQ worker runs, including one whose first attempt fails and is retried
// (no "failed" event for it: the wait ends at the completion, as BullMQ's
// job.waitUntilFinished does) and one removed on completion.
func TestInteropWaitUntilFinished(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	t.Run("NodeWorker", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		ok, err := b.oracle.Add(ctx, b.prefix, queueName, "ok",
			map[string]any{"behavior": bullmqoracle.Return(map[string]any{"sum": 3})}, nil)
		require.NoError(t, err)
		bad, err := b.oracle.Add(ctx, b.prefix, queueName, "bad",
			map[string]any{"behavior": bullmqoracle.Fail("node says no")}, map[string]any{"attempts": 2})
		require.NoError(t, err)
		retried, err := b.oracle.Add(ctx, b.prefix, queueName, "retried",
			map[string]any{"behavior": bullmqoracle.FailTimes(1, "first try", "second")}, map[string]any{"attempts": 2})
		require.NoError(t, err)
		removed, err := b.dq.Add(ctx, "removed",
			map[string]any{"behavior": bullmqoracle.Return("bye")},
			&drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}})
		require.NoError(t, err)

		type answer struct {
			v   []byte
			err error
		}
		ids := []string{ok, bad, retried, removed.Job.ID}
		answers := make([]chan answer, len(ids))
		for i, id := range ids {
			answers[i] = make(chan answer, 1)
			go func() {
				v, err := b.dq.WaitUntilFinished(ctx, id)
				answers[i] <- answer{v, err}
			}()
		}
		time.Sleep(100 * time.Millisecond) // let the waits start before the jobs run
		b.startWorker(t, nodeImpl, workerSpec{behavior: bullmqoracle.FromData("behavior"), concurrency: 4})

		a := <-answers[0]
		require.NoError(t, a.err)
		require.JSONEq(t, `{"sum":3}`, string(a.v))
		a = <-answers[1]
		var fe *drover.JobFailedError
		require.ErrorAs(t, a.err, &fe)
		require.Equal(t, "node says no", fe.Reason)
		a = <-answers[2]
		require.NoError(t, a.err)
		require.JSONEq(t, `"second"`, string(a.v))
		a = <-answers[3]
		require.NoError(t, a.err)
		require.JSONEq(t, `"bye"`, string(a.v))

		// Both attempts of bad ran; the wait ended at the final failure.
		job, err := b.dq.GetJob(ctx, bad)
		require.NoError(t, err)
		require.Equal(t, 2, job.AttemptsMade)
	})

	// Node's job.waitUntilFinished and drover's agree on jobs a drover
	// worker runs, for a retried attempt too.
	t.Run("DroverWorkerBothWaiters", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		retried, err := b.dq.Add(ctx, "retried",
			map[string]any{"behavior": bullmqoracle.FailTimes(1, "first try", "second")}, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		bad, err := b.dq.Add(ctx, "bad",
			map[string]any{"behavior": bullmqoracle.Fail("drover says no")}, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)

		type answer struct {
			v   []byte
			err error
		}
		ids := []string{retried.Job.ID, bad.Job.ID}
		droverAns := make([]chan answer, len(ids))
		nodeAns := make([]chan *bullmqoracle.FinishResult, len(ids))
		for i, id := range ids {
			droverAns[i], nodeAns[i] = make(chan answer, 1), make(chan *bullmqoracle.FinishResult, 1)
			go func() {
				v, err := b.dq.WaitUntilFinished(ctx, id)
				droverAns[i] <- answer{v, err}
			}()
			go func() {
				r, err := b.oracle.WaitUntilFinished(ctx, b.prefix, queueName, id, waitLong)
				if err != nil {
					r = &bullmqoracle.FinishResult{State: "error: " + err.Error()}
				}
				nodeAns[i] <- r
			}()
		}
		time.Sleep(300 * time.Millisecond) // Node's QueueEvents needs to be listening
		b.startWorker(t, droverImpl, workerSpec{behavior: bullmqoracle.FromData("behavior")})

		a, n := <-droverAns[0], <-nodeAns[0]
		require.NoError(t, a.err)
		require.JSONEq(t, `"second"`, string(a.v))
		require.Equal(t, "completed", n.State)
		require.JSONEq(t, `"second"`, string(n.ReturnValue))

		a, n = <-droverAns[1], <-nodeAns[1]
		var fe *drover.JobFailedError
		require.ErrorAs(t, a.err, &fe)
		require.Equal(t, "drover says no", fe.Reason)
		require.Equal(t, &bullmqoracle.FinishResult{State: "failed", FailedReason: "drover says no"}, n)
	})
}
