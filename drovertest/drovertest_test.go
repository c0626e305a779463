package drovertest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/drovertest"
)

type Receipt struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

func (Receipt) Kind() string { return "receipt" }

func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("CompletedWithValueProgressLogsAndAddedJobs", func(t *testing.T) {
		t.Parallel()
		k := drovertest.New(t)
		receipts := k.Queue("receipts")
		proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			var order struct{ ID string }
			if err := job.DecodeData(&order); err != nil {
				return nil, drover.Unrecoverable(err)
			}
			if _, err := job.Log(ctx, "charging "+order.ID); err != nil {
				return nil, err
			}
			if err := job.UpdateProgress(ctx, 50); err != nil {
				return nil, err
			}
			if _, err := receipts.AddArgs(ctx, Receipt{Order: order.ID, Cents: 1200}, nil); err != nil {
				return nil, err
			}
			return map[string]string{"charged": order.ID}, nil
		})
		res := k.Run(proc, "charge", map[string]string{"ID": "A-17"}, nil)
		require.Equal(t, drover.OutcomeCompleted, res.Outcome)
		require.NoError(t, res.Err)
		require.JSONEq(t, `{"charged":"A-17"}`, string(res.Value))
		require.JSONEq(t, `50`, string(res.Progress))
		require.Equal(t, []string{"charging A-17"}, res.Logs)
		require.Equal(t, Receipt{Order: "A-17", Cents: 1200}, drovertest.RequireAddedArgs[Receipt](t, k, "receipts"))
		drovertest.RequireNotAdded(t, k, "receipts", "refund")
	})

	t.Run("FailuresAndOneAttemptOnly", func(t *testing.T) {
		t.Parallel()
		k := drovertest.New(t)
		var runs atomic.Int32
		flaky := drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
			runs.Add(1)
			return nil, errors.New("gateway timeout")
		})
		res := k.Run(flaky, "charge", nil, &drover.JobOptions{Attempts: 3})
		require.Equal(t, drover.OutcomeRetried, res.Outcome)
		require.EqualError(t, res.Err, "gateway timeout")
		require.EqualValues(t, 1, runs.Load(), "one attempt, although the job went straight back to wait")
		state, err := res.Job.GetState(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state)

		res = k.Run(drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
			return nil, drover.Unrecoverable(errors.New("card declined"))
		}), "charge", nil, &drover.JobOptions{Attempts: 3})
		require.Equal(t, drover.OutcomeFailedUnrecoverable, res.Outcome)
		require.Equal(t, "card declined", res.Job.FailedReason)
	})

	t.Run("TypedWrongPayload", func(t *testing.T) {
		t.Parallel()
		var kinds drover.Kinds
		drover.Work(&kinds, func(context.Context, *drover.Job, Receipt) (any, error) { return nil, nil })
		res := drovertest.Run(t, &kinds, "receipt", map[string]any{"cents": "12"}, nil)
		require.Equal(t, drover.OutcomeFailedUnrecoverable, res.Outcome)
		require.ErrorIs(t, res.Err, drover.ErrInvalidData)
		require.ErrorContains(t, res.Err, `field "cents" is a JSON string, want int`)
	})
}

// TestManualClock: backoffs and lock expiry on the kit's clock, with no
// sleeping: an hour of backoff and a 30 s lock take no wall time.
func TestManualClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Backoff", func(t *testing.T) {
		t.Parallel()
		k := drovertest.New(t)
		var runs atomic.Int32
		k.StartWorker("mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
			if runs.Add(1) < 3 {
				return nil, errors.New("smtp busy")
			}
			return "sent", nil
		}), nil)
		added, err := k.Queue("mail").Add(ctx, "send", nil, &drover.JobOptions{Attempts: 3,
			Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: time.Hour}})
		require.NoError(t, err)
		id := added.Job.ID

		job := k.WaitState("mail", id, drover.StateDelayed)
		require.Equal(t, drover.OutcomeRetryDelayed, job.Timeline[0].Outcome)
		require.Equal(t, k.Now().Add(time.Hour), job.Timeline[0].NextRun)
		k.Advance(time.Hour - time.Millisecond)
		k.WaitState("mail", id, drover.StateDelayed) // not due yet
		require.EqualValues(t, 1, runs.Load())
		k.Advance(time.Millisecond)
		job = k.WaitState("mail", id, drover.StateDelayed)
		for job.AttemptsMade < 2 {
			job = k.WaitState("mail", id, drover.StateDelayed)
		}
		require.Equal(t, 2*time.Hour, job.Timeline[1].Backoff, "exponential: the second wait doubles")
		k.Advance(2 * time.Hour)
		job = k.WaitState("mail", id, drover.StateCompleted)
		require.JSONEq(t, `"sent"`, string(job.ReturnValue))
	})

	t.Run("LockExpiry", func(t *testing.T) {
		t.Parallel()
		k := drovertest.New(t)
		release := make(chan struct{})
		var runs atomic.Int32
		w := k.StartWorker("mail", drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
			if runs.Add(1) == 1 {
				select { // the first attempt hangs, as a stuck process would
				case <-release:
				case <-ctx.Done():
				}
				return nil, errors.New("stuck")
			}
			return "done", nil
		}), &drover.WorkerOptions{Concurrency: 2, LockDuration: 30 * time.Second})
		defer close(release)
		added, err := k.Queue("mail").Add(ctx, "send", nil, nil)
		require.NoError(t, err)
		id := added.Job.ID
		k.WaitState("mail", id, drover.StateActive)

		k.CheckStalled(w) // marks the active job
		k.Advance(31 * time.Second)
		k.CheckStalled(w) // its lock expired: back to wait, and run again
		job := k.WaitState("mail", id, drover.StateCompleted)
		require.Equal(t, 1, job.StalledCount)
		require.JSONEq(t, `"done"`, string(job.ReturnValue))
	})
}
