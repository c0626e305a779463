package drover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// Slow and Flaky are kinds registered with KindOptions in the tests below.
type Slow struct {
	Sleep time.Duration `json:"sleep"`
}

func (Slow) Kind() string { return "slow" }

type Flaky struct{}

func (Flaky) Kind() string { return "flaky" }

// TestWorkWithKindOptions: a kind's Timeout bounds its attempts between a
// job's own Timeout (which wins) and WorkerOptions.JobTimeout (which it
// beats); a kind's Backoff spaces the retries of jobs that carry no Backoff
// of their own, BackoffStop fails such a job for good, and a job's own
// Backoff wins.
func TestWorkWithKindOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sleepy := func(ctx context.Context, _ *drover.Job, s Slow) (any, error) {
		select {
		case <-time.After(s.Sleep):
			return "slept", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cases := []struct {
		name       string
		kind       *drover.KindOptions
		jobTimeout time.Duration // WorkerOptions.JobTimeout
		opts       *drover.JobOptions
		sleep      time.Duration
		state      drover.JobState
		reason     string
	}{
		{name: "kind timeout", kind: &drover.KindOptions{Timeout: 50 * time.Millisecond}, sleep: time.Minute,
			state: drover.StateFailed, reason: "timed out after 50ms (KindOptions.Timeout)"},
		{name: "job timeout wins", kind: &drover.KindOptions{Timeout: 50 * time.Millisecond},
			opts: &drover.JobOptions{Timeout: 5 * time.Second}, sleep: 200 * time.Millisecond, state: drover.StateCompleted},
		{name: "kind beats worker", kind: &drover.KindOptions{Timeout: 5 * time.Second}, jobTimeout: 50 * time.Millisecond,
			sleep: 200 * time.Millisecond, state: drover.StateCompleted},
		{name: "worker without kind options", jobTimeout: 50 * time.Millisecond, sleep: time.Minute,
			state: drover.StateFailed, reason: "timed out after 50ms (WorkerOptions.JobTimeout)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			var kinds drover.Kinds
			drover.WorkWith(&kinds, sleepy, tc.kind)
			w, err := drover.NewWorker(b.rdb, b.name, &kinds, &drover.WorkerOptions{Prefix: b.prefix,
				DrainDelay: 20 * time.Millisecond, JobTimeout: tc.jobTimeout})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
			res, err := b.queue.AddArgs(ctx, Slow{Sleep: tc.sleep}, tc.opts)
			require.NoError(t, err)
			b.waitState(t, res.Job.ID, tc.state)
			job, err := b.queue.GetJob(ctx, res.Job.ID)
			require.NoError(t, err)
			require.Equal(t, tc.reason, job.FailedReason)
		})
	}

	backoffs := []struct {
		name    string
		backoff drover.BackoffFunc
		opts    *drover.JobOptions
		state   drover.JobState
		delay   time.Duration
		atm     int
	}{
		{name: "kind backoff", backoff: func(n int, typ string, _ error, _ *drover.Job) time.Duration {
			require.Equal(t, 1, n)
			require.Empty(t, typ)
			return time.Hour
		}, opts: &drover.JobOptions{Attempts: 3}, state: drover.StateDelayed, delay: time.Hour, atm: 1},
		{name: "stop", backoff: func(int, string, error, *drover.Job) time.Duration { return drover.BackoffStop },
			opts: &drover.JobOptions{Attempts: 3}, state: drover.StateFailed, atm: 1},
		{name: "job backoff wins", backoff: func(int, string, error, *drover.Job) time.Duration { return time.Hour },
			opts:  &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 2 * time.Hour}},
			state: drover.StateDelayed, delay: 2 * time.Hour, atm: 1},
		{name: "no kind backoff retries at once", opts: &drover.JobOptions{Attempts: 2}, state: drover.StateFailed, atm: 2},
	}
	for _, tc := range backoffs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			var kinds drover.Kinds
			drover.WorkWith(&kinds, func(context.Context, *drover.Job, Flaky) (any, error) {
				return nil, errors.New("flaky")
			}, &drover.KindOptions{Backoff: tc.backoff})
			w, err := drover.NewWorker(b.rdb, b.name, &kinds, &drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 20 * time.Millisecond})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
			res, err := b.queue.AddArgs(ctx, Flaky{}, tc.opts)
			require.NoError(t, err)
			b.waitState(t, res.Job.ID, tc.state)
			job, err := b.queue.GetJob(ctx, res.Job.ID)
			require.NoError(t, err)
			require.Equal(t, tc.atm, job.AttemptsMade)
			if tc.state == drover.StateDelayed {
				require.Equal(t, tc.delay, job.Delay)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		for _, tc := range []struct {
			opts *drover.KindOptions
			msg  string
		}{
			{&drover.KindOptions{Timeout: -time.Second}, `KindOptions.Timeout of kind "slow" must not be negative, got -1s`},
			{&drover.KindOptions{Timeout: time.Microsecond}, `KindOptions.Timeout of kind "slow" must be at least 1ms, got 1µs`},
		} {
			var kinds drover.Kinds
			drover.WorkWith(&kinds, sleepy, tc.opts)
			_, err := drover.NewWorker(b.rdb, b.name, &kinds, &drover.WorkerOptions{Prefix: b.prefix})
			require.ErrorIs(t, err, drover.ErrInvalidOption)
			require.ErrorContains(t, err, tc.msg)
		}
	})
}
