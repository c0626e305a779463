package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCleanCandidatesOfNodeDelayedJobs: the delayed jobs a clean's
// confirmation lists (`drover clean --state delayed`, the dashboard's dry
// run) are the ones the clean then removes, on a queue Node BullMQ filled.
// The preview scanned every delayed job by creation time, while the clean
// (BullMQ's rules) looks at the window of the limit soonest due, ages a job
// that ran by when it last started, and leaves a job scheduler's next
// iteration alone: `drover clean --state delayed --grace 0 --dry-run` named
// the scheduler's iteration, and a limited clean confirmed as "remove 1"
// removed none.
func TestCleanCandidatesOfNodeDelayedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	add := func(name string, opts map[string]any) string {
		t.Helper()
		id, err := o.Add(ctx, b.prefix, "q", name, nil, opts)
		require.NoError(t, err)
		return id
	}
	longAgo := time.Now().Add(-2 * time.Hour).UnixMilli()
	// Due in 10 minutes, created now.
	soon := add("soon", map[string]any{"delay": 10 * 60_000})
	// Created two hours ago (BullMQ's timestamp option), due in three hours.
	old := add("old", map[string]any{"timestamp": longAgo, "delay": 5 * 3_600_000})
	// Created two hours ago, failed just now: waiting an hour for backoff.
	flaky := add("flaky", map[string]any{"timestamp": longAgo, "attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 3_600_000}})
	// A job scheduler: once its first run is taken, its next iteration
	// waits in the delayed set, due in an hour.
	_, err := o.UpsertJobScheduler(ctx, b.prefix, "q", "hourly", map[string]any{"every": 3_600_000}, map[string]any{"name": "tick"})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("boom")}))
	q := b.queue(t, "q")
	testkit.WaitFor(t, 20*time.Second, "flaky in backoff and the scheduler's next iteration", func() bool {
		st, err := q.GetJobState(ctx, flaky)
		require.NoError(t, err)
		c, err := q.GetJobCounts(ctx, drover.StateDelayed)
		require.NoError(t, err)
		return st == drover.StateDelayed && c[drover.StateDelayed] == 4
	})
	require.NoError(t, o.StopWorker(ctx, "w", false))

	for _, step := range []struct {
		grace time.Duration
		limit int
		want  []string
	}{
		// The window is the soonest due job, too young: nothing goes.
		{time.Hour, 1, []string{}},
		// flaky ran a moment ago: only old is older than an hour.
		{time.Hour, 0, []string{old}},
		// The scheduler's iteration stays.
		{0, 0, []string{soon, flaky}},
	} {
		listed, err := b.ins.CleanCandidates(ctx, "q", drover.StateDelayed, step.grace, step.limit)
		require.NoError(t, err)
		removed, err := b.ins.Clean(ctx, "q", drover.StateDelayed, step.grace, step.limit)
		require.NoError(t, err)
		require.ElementsMatch(t, step.want, removed, "grace %s limit %d: removed", step.grace, step.limit)
		require.Equal(t, removed, listed, "grace %s limit %d: listed before the clean", step.grace, step.limit)
	}
	c, err := q.GetJobCounts(ctx, drover.StateDelayed)
	require.NoError(t, err)
	require.Equal(t, int64(1), c[drover.StateDelayed], "the scheduler's iteration")
}
