package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestFreshRetryUnderMaxStartedAttempts: a job fails its 2 attempts on a
// worker with MaxStartedAttempts 2, then is retried with fresh attempts
// (one job, the bulk retry by age, the selecting bulk retry). Its next run
// must reach the processor and complete. Before, the retry reset
// attemptsMade but not attemptsStarted: the worker saw a third start and
// failed the job at once ("started more than 2 times"), the processor never
// ran. The timeline keeps the first run's two attempts, then the boundary,
// then the new run numbered from #1.
func TestFreshRetryUnderMaxStartedAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, how := range []string{"job", "bulk-by-age", "bulk-selecting"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			var runs atomic.Int32
			b.startWorker(t, "q", func(context.Context, *drover.Job) (any, error) {
				if runs.Add(1) <= 2 {
					return nil, errors.New("declined")
				}
				return "paid", nil
			}, &drover.WorkerOptions{MaxStartedAttempts: 2})
			id := b.add(t, "q", "pay", &drover.JobOptions{Attempts: 2})
			b.waitState(t, "q", id, drover.StateFailed)
			before := time.Now()
			switch how {
			case "job":
				_, err := b.ins.RetryJob(ctx, "q", id, true)
				require.NoError(t, err)
			default:
				res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{ResetAttempts: true, IncludeUnrecoverable: how == "bulk-by-age", Pause: -1})
				require.NoError(t, err)
				require.Equal(t, 1, res.Retried)
			}
			q := b.queue(t, "q")
			var j *drover.Job
			// Until the retried job ends: completed, or failed again (with
			// another reason than its first run's). finishedOn is in ms,
			// so it cannot tell a run that ended within the millisecond of
			// `before` from the first one.
			require.Eventually(t, func() bool {
				st, err := q.GetJobState(ctx, id)
				require.NoError(t, err)
				if st != drover.StateCompleted && st != drover.StateFailed {
					return false
				}
				j, err = q.GetJob(ctx, id)
				require.NoError(t, err)
				return st == drover.StateCompleted || j.FailedReason != "declined"
			}, 10*time.Second, 10*time.Millisecond)
			st, err := q.GetJobState(ctx, id)
			require.NoError(t, err)
			require.Equal(t, drover.StateCompleted, st, "failed reason: %q", j.FailedReason)
			require.EqualValues(t, 3, runs.Load())
			require.Equal(t, 1, j.AttemptsStarted)
			require.Equal(t, 1, j.AttemptsMade)

			d, err := b.ins.Job(ctx, "q", id)
			require.NoError(t, err)
			require.Equal(t, inspect.TimelineDrover, d.TimelineSource)
			var got []string
			for _, a := range d.Timeline {
				got = append(got, fmt.Sprintf("%d:%s", a.N, a.Outcome))
			}
			require.Equal(t, []string{"1:retried", "2:retries-exhausted", "0:fresh-attempts", "1:completed"}, got)
			f := d.Timeline[2]
			require.True(t, f.Outside)
			require.Equal(t, &inspect.FreshAttempts{From: drover.StateFailed, Made: 2, Started: 2, ResetMade: true, ResetStarted: true}, f.Fresh)
			require.WithinDuration(t, before, f.End.Time, 5*time.Second)
			require.Equal(t, "declined", d.Timeline[0].Error)
		})
	}
}

// TestFreshRetryOfAttemptsMadeOnly: Job.Retry with ResetAttemptsMade alone
// (BullMQ's resetAttemptsMade without resetAttemptsStarted) gives the job
// its budget back but keeps counting starts: the boundary says so, and the
// attempts after it go on from #3.
func TestFreshRetryOfAttemptsMadeOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	var runs atomic.Int32
	b.startWorker(t, "q", func(context.Context, *drover.Job) (any, error) {
		if runs.Add(1) <= 2 {
			return nil, errors.New("declined")
		}
		return "paid", nil
	}, nil)
	id := b.add(t, "q", "pay", &drover.JobOptions{Attempts: 2})
	b.waitState(t, "q", id, drover.StateFailed)
	q := b.queue(t, "q")
	require.NoError(t, q.Job(id).Retry(ctx, drover.StateFailed, &drover.RetryOptions{ResetAttemptsMade: true}))
	b.waitState(t, "q", id, drover.StateCompleted)
	d, err := b.ins.Job(ctx, "q", id)
	require.NoError(t, err)
	var got []string
	for _, a := range d.Timeline {
		got = append(got, fmt.Sprintf("%d:%s", a.N, a.Outcome))
	}
	require.Equal(t, []string{"1:retried", "2:retries-exhausted", "0:fresh-attempts", "3:completed"}, got)
	require.Equal(t, &inspect.FreshAttempts{From: drover.StateFailed, Made: 2, Started: 2, ResetMade: true}, d.Timeline[2].Fresh)
}
