package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestTimelineDroverThenNodeWorker: a job with two attempts fails its
// first on a drover worker (recorded) and, after its backoff, its second,
// the last, on a Node BullMQ worker (no record). The timeline shows two attempts, the second
// the failure that failed the job, with Node's error. It showed three:
// the second "unknown" and a third, that never ran, "failed" between
// attempts.
func TestTimelineDroverThenNodeWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	// The backoff keeps the job from the drover worker's second try: the
	// worker stops while the job waits for it.
	id := b.add(t, "q", "job", &drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}})
	w := b.startWorker(t, "q", func(context.Context, *drover.Job) (any, error) {
		return nil, errors.New("drover run failed")
	}, nil)
	testkit.WaitFor(t, 20*time.Second, "the drover worker's failure", func() bool {
		d, err := b.ins.Job(ctx, "q", id)
		require.NoError(t, err)
		return d.AttemptsMade >= 1
	})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	require.NoError(t, w.Close(cctx))
	cancel()
	d, err := b.ins.Job(ctx, "q", id)
	require.NoError(t, err)
	require.Equal(t, 1, d.AttemptsMade, "the drover worker ran one attempt only")

	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("node run failed")}))
	_, err = o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, o.StopWorker(ctx, "w", false))

	d, err = b.ins.Job(ctx, "q", id)
	require.NoError(t, err)
	require.Equal(t, drover.StateFailed, d.State)
	require.Equal(t, inspect.TimelineDrover, d.TimelineSource)
	type step struct {
		N       int
		Outcome string
		Error   string
		Outside bool
	}
	var got []step
	for _, a := range d.Timeline {
		got = append(got, step{a.N, a.Outcome, a.Error, a.Outside})
	}
	require.Equal(t, []step{
		{1, drover.OutcomeRetryDelayed.String(), "drover run failed", false},
		{2, drover.OutcomeRetriesExhausted.String(), "node run failed", false},
	}, got)
}
