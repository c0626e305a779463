package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestTimelineAfterFreshAttemptsRetry: a job fails its 2 attempts, is bulk
// retried keeping its attempts (fails again), then with fresh attempts
// (fails twice more). A Node worker leaves no record, so the timeline is
// derived from the counters and traces (the boundary the reset left keeps
// the counters before it); it must tell the same story as a drover
// worker's record: retried, exhausted, exhausted, the fresh-attempts
// boundary, then retried, exhausted numbered from #1 again (the reset set
// both AttemptsMade and AttemptsStarted back to 0). Before the boundary,
// the reset of AttemptsMade made the three failures before it "unknown"
// (no drover record) moves.
func TestTimelineAfterFreshAttemptsRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	outcomes := func(t *testing.T, b *testBundle, id string, wantSource string) []string {
		t.Helper()
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		require.Equal(t, wantSource, d.TimelineSource)
		var out []string
		for _, a := range d.Timeline {
			if a.Outcome != inspect.OutcomeFreshAttempts {
				require.Contains(t, a.Error, "declined", "attempt %d", a.N)
			}
			out = append(out, fmt.Sprintf("%d:%s", a.N, a.Outcome))
		}
		return out
	}
	// run fails job id, bulk retries it twice (keeping, then resetting its
	// attempts) and waits for it to fail each time; finished reports
	// whether it has.
	run := func(t *testing.T, b *testBundle, id string, finished func() bool) {
		t.Helper()
		b.waitState(t, "q", id, drover.StateFailed)
		for _, reset := range []bool{false, true} {
			res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{ResetAttempts: reset, Pause: -1})
			require.NoError(t, err)
			require.Equal(t, 1, res.Retried)
			testkit.WaitFor(t, 20*time.Second, "the job to fail again", finished)
		}
	}
	want := []string{"1:retried", "2:retries-exhausted", "3:retries-exhausted", "0:fresh-attempts", "1:retried", "2:retries-exhausted"}

	b := setup(t, nil)
	b.startWorker(t, "q", func(context.Context, *drover.Job) (any, error) { return nil, errors.New("declined") }, nil)
	id := b.add(t, "q", "pay", &drover.JobOptions{Attempts: 2})
	q := b.queue(t, "q")
	run(t, b, id, func() bool {
		j, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		return st == drover.StateFailed && !j.FinishedOn.IsZero()
	})
	require.Equal(t, want, outcomes(t, b, id, "drover"))

	nb := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	nid, err := o.Add(ctx, nb.prefix, "q", "pay", map[string]any{}, map[string]any{"attempts": 2})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, nb.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("declined"),
		DrainDelay: 100 * time.Millisecond}))
	run(t, nb, nid, func() bool {
		j, err := o.GetJob(ctx, nb.prefix, "q", nid)
		require.NoError(t, err)
		st, err := o.GetState(ctx, nb.prefix, "q", nid)
		require.NoError(t, err)
		return st == "failed" && j.FinishedOn != nil
	})
	require.Equal(t, want, outcomes(t, nb, nid, "derived"))
}
