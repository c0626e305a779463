package interoptest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestInteropSchedulerIDNamingARun: a job scheduler Node BullMQ made has its
// next run "repeat:s1:<ms>" waiting; upserting a scheduler with the id
// "s1:<ms>" would store the new scheduler's hash at "<queue>:repeat:s1:<ms>",
// which is that run's job hash. drover refuses it with ErrInvalidOption and
// leaves Redis as it was; the run still runs with its data. Before,
// drover (as Node's upsertJobScheduler still does) wrote the scheduler
// fields over the run: the job in wait lost its data, opts and timestamp
// (GetJob read it back with name "s1:<ms>" and no data). Ids with ':'
// that name no job stay usable, new or upserted again.
func TestInteropSchedulerIDNamingARun(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()

	runID, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 3600000},
		map[string]any{"name": "tick", "data": map[string]any{"n": 1}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(runID, "repeat:s1:"), runID)
	taken := strings.TrimPrefix(runID, "repeat:")

	before, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	_, err = b.dq.UpsertJobScheduler(ctx, taken, drover.RepeatOptions{Every: time.Hour}, nil)
	require.ErrorIs(t, err, drover.ErrInvalidOption, "UpsertJobScheduler(%q), the id of s1's run", taken)
	require.ErrorContains(t, err, "names another job's key")
	after, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	require.Empty(t, statedump.Diff(before, after), "Redis changed under a refused upsert")

	run, err := b.dq.GetJob(ctx, runID)
	require.NoError(t, err)
	require.Equal(t, "tick", run.Name)
	require.JSONEq(t, `{"n":1}`, string(run.Data))

	// A ':' in an id that names no job is fine, and so is upserting it again.
	for range 2 {
		job, err := b.dq.UpsertJobScheduler(ctx, "tenant:42", drover.RepeatOptions{Every: time.Hour}, &drover.JobTemplate{Name: "t"})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(job.ID, "repeat:tenant:42:"), job.ID)
	}
	s, err := b.oracle.GetJobScheduler(ctx, b.prefix, queueName, "tenant:42")
	require.NoError(t, err)
	require.NotNil(t, s, "Node reads the scheduler drover made")
	n, err := b.dq.GetJobSchedulersCount(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
}
