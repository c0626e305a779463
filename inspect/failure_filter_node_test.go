package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestFailureGroupFiltersSelectTheirGroup: every error group of jobs Node
// BullMQ failed has a filter (the dashboard's "Retry…" on the group, the
// one `drover failures` prints) that selects exactly its jobs. A group of
// reasons without a first line (an error thrown with a blank message) had
// the empty filter, which selects every failed job: its "Retry…" offered
// to retry them all. A group whose text holds "<=" had a filter that did
// not parse (the value's "<=" was read as the term's operator).
func TestFailureGroupFiltersSelectTheirGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	reasons := []string{" ", "\nsee the log", "name=foo left<=1", "quota x<=3 reached", `said "no" <= twice`, "boom", "boom"}
	var ids []string
	for _, r := range reasons {
		id, err := o.Add(ctx, b.prefix, "q", "job", map[string]any{"behavior": bullmqoracle.Fail(r)}, nil)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FromData("behavior")}))
	for _, id := range ids {
		_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
		require.NoError(t, err)
	}
	rep, err := b.ins.FailureGroups(ctx, "q")
	require.NoError(t, err)
	require.Len(t, rep.Groups, 5, "%+v", rep.Groups)
	for _, g := range rep.Groups {
		f, err := inspect.ParseFilter(g.Filter)
		require.NoError(t, err, "group %q", g.Error)
		require.False(t, f.IsZero(), "group %q: a filter that selects every job", g.Error)
		res, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{State: drover.StateFailed, Filter: f, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, g.Count, res.Matched, "group %q, filter %s", g.Error, g.Filter)
	}
}
