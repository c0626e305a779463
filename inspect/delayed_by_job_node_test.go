package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestDelayedByItsProcessorAfterAFailure: Node jobs that failed once, then
// on their next run were moved to the delayed set for an hour by their
// processor (job.moveToDelayed and DelayedError). They wait for that
// delay, not for a backoff: one has no backoff option (a failure goes
// straight back to wait), the other a 50ms one. The job view said
// "waiting for backoff" and drew a last attempt that failed with a 1h
// backoff; it now says the job is scheduled and draws the delay its run
// asked for after the failure. A job whose run failed after one such
// delay does wait for its backoff, and still says so.
func TestDelayedByItsProcessorAfterAFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	add := func(behavior bullmqoracle.Behavior, opts map[string]any) string {
		t.Helper()
		id, err := o.Add(ctx, b.prefix, "q", "job", map[string]any{"behavior": behavior}, opts)
		require.NoError(t, err)
		return id
	}
	// Fails on its first run, moves itself to delayed on its second.
	failThenDelay := bullmqoracle.Sequence(bullmqoracle.Fail("first run failed"), bullmqoracle.MoveToDelayed(time.Hour, 2, nil))
	noBackoff := add(failThenDelay, map[string]any{"attempts": 3})
	shortBackoff := add(failThenDelay, map[string]any{"attempts": 3, "backoff": map[string]any{"type": "fixed", "delay": 50}})
	// Moves itself to delayed briefly on its first run, fails on its second:
	// it waits for its hour of backoff.
	delayThenFail := bullmqoracle.Sequence(bullmqoracle.MoveToDelayed(50*time.Millisecond, 1, nil), bullmqoracle.Fail("second run failed"))
	backoff := add(delayThenFail, map[string]any{"attempts": 3, "backoff": map[string]any{"type": "fixed", "delay": 3_600_000}})
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FromData("behavior")}))
	for _, id := range []string{noBackoff, shortBackoff, backoff} {
		testkit.WaitFor(t, 20*time.Second, "job "+id+" delayed after two runs", func() bool {
			d, err := b.ins.Job(ctx, "q", id)
			require.NoError(t, err)
			return d.State == drover.StateDelayed && d.AttemptsStarted == 2
		})
	}
	require.NoError(t, o.StopWorker(ctx, "w", false))

	for _, id := range []string{noBackoff, shortBackoff} {
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, inspect.RetryStateScheduled, d.RetryState, "job %s: delayed by its run, not by a backoff", id)
		require.Len(t, d.Timeline, 2, "job %s", id)
		first, last := d.Timeline[0], d.Timeline[1]
		require.Equal(t, "first run failed", first.Error, "job %s: the failure was the first run", id)
		require.NotEqual(t, drover.OutcomeRetryDelayed.String(), last.Outcome, "job %s: the last run did not fail", id)
		require.Equal(t, drover.OutcomeDelayed.String(), last.Outcome, "job %s", id)
		require.Empty(t, last.Error, "job %s", id)
		require.Equal(t, time.Hour, last.Backoff, "job %s: the delay its run asked for", id)
	}
	d, err := b.ins.Job(ctx, "q", backoff)
	require.NoError(t, err)
	require.Equal(t, inspect.RetryStateBackoff, d.RetryState)
	last := d.Timeline[len(d.Timeline)-1]
	require.Equal(t, drover.OutcomeRetryDelayed.String(), last.Outcome)
	require.Equal(t, "second run failed", last.Error)
	require.Equal(t, time.Hour, last.Backoff)
}

// TestDerivedTimelineRetriedByHand: a Node job with two attempts fails
// both (failed for good), is retried by hand (Node's job.retry) and
// completes. Its derived timeline draws the second failure as the one that
// used up its attempts, so the page says it was retried by hand; it drew
// a failure "retried at once", which a job with no attempt left is not.
func TestDerivedTimelineRetriedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	id, err := o.Add(ctx, b.prefix, "q", "job", nil, map[string]any{"attempts": 2})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FailTimes(2, "down", "ok")}))
	d := retryByHandOnceFailed(t, b, o, id)
	var outcomes []string
	for _, a := range d.Timeline {
		outcomes = append(outcomes, a.Outcome)
	}
	require.Equal(t, []string{drover.OutcomeRetried.String(), drover.OutcomeRetriesExhausted.String(), drover.OutcomeCompleted.String()}, outcomes)
}

// TestDerivedTimelineUnrecoverableRetriedByHand: a Node job with three
// attempts throws UnrecoverableError on its first run (failed for good at
// once), is retried by hand and completes. Its derived timeline draws the
// first run as failed unrecoverable, then retried by hand; it drew a
// failure "retried at once", as if its attempts had let it run again.
func TestDerivedTimelineUnrecoverableRetriedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	id, err := o.Add(ctx, b.prefix, "q", "job", nil, map[string]any{"attempts": 3})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w",
		Behavior: bullmqoracle.Sequence(bullmqoracle.Unrecoverable("card declined"), bullmqoracle.Return("ok"))}))
	d := retryByHandOnceFailed(t, b, o, id)
	require.Len(t, d.Timeline, 2)
	require.Equal(t, drover.OutcomeFailedUnrecoverable.String(), d.Timeline[0].Outcome)
	require.True(t, d.Timeline[0].Unrecoverable)
	require.Equal(t, drover.OutcomeCompleted.String(), d.Timeline[1].Outcome)
}

// retryByHandOnceFailed waits until Node has failed job id of queue "q"
// for good, retries it by hand (Node's job.retry) and returns its detail
// once it completed.
func retryByHandOnceFailed(t *testing.T, b *testBundle, o *bullmqoracle.Oracle, id string) *inspect.JobDetail {
	t.Helper()
	ctx := context.Background()
	_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, o.RetryJob(ctx, b.prefix, "q", id, "failed", false, false))
	testkit.WaitFor(t, 20*time.Second, "the job to complete", func() bool {
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		return d.State == drover.StateCompleted
	})
	d, err := b.ins.Job(ctx, "q", id)
	require.NoError(t, err)
	return d
}
