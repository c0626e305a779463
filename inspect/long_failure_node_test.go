package inspect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestListsTellNodeFailuresWithLongMessages: lists read a failed job's
// reason, stack traces and timeline cut in Redis (readSummaries.lua). A job
// Node BullMQ failed through an UnrecoverableError after an ordinary
// failure, both with a 100 KB message (two long traces, the last one
// the UnrecoverableError's), is still listed as unrecoverable, and one
// that spent its attempts as exhausted; the failure groups count the
// unrecoverable one, and a bulk retry leaves it out.
func TestListsTellNodeFailuresWithLongMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	big := strings.Repeat(`x"\é`, 25<<10)
	unrec, err := o.Add(ctx, b.prefix, "q", "job", map[string]any{"behavior": bullmqoracle.Sequence(bullmqoracle.Fail("first "+big), bullmqoracle.Unrecoverable("then "+big))},
		map[string]any{"attempts": 3})
	require.NoError(t, err)
	spent, err := o.Add(ctx, b.prefix, "q", "job", map[string]any{"behavior": bullmqoracle.Fail("always " + big)}, map[string]any{"attempts": 2})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FromData("behavior")}))
	for _, id := range []string{unrec, spent} {
		_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
		require.NoError(t, err)
	}
	job, err := b.queue(t, "q").GetJob(ctx, unrec)
	require.NoError(t, err)
	require.Len(t, job.Stacktrace, 2)
	require.True(t, strings.HasPrefix(job.Stacktrace[1], "UnrecoverableError: then"), job.Stacktrace[1][:40])

	page, err := b.ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateFailed})
	require.NoError(t, err)
	got := map[string]inspect.FailedFor{}
	for _, j := range page.Jobs {
		got[j.ID] = j.FailedFor
		require.Less(t, len(j.FailedReason), len(big), "the reason comes cut")
	}
	require.Equal(t, map[string]inspect.FailedFor{unrec: inspect.FailedUnrecoverable, spent: inspect.FailedExhausted}, got)
	rep, err := b.ins.FailureGroups(ctx, "q")
	require.NoError(t, err)
	unrecoverable := 0
	for _, g := range rep.Groups {
		unrecoverable += g.Unrecoverable
	}
	require.Equal(t, 1, unrecoverable)
	res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{State: drover.StateFailed, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, res.Matched, "the unrecoverable job is left out")
}
