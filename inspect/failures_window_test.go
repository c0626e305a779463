package inspect_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/inspect"
)

// TestFailureGroupFilterKeepsTheWindow: `drover failures --since 1h` (and
// GET /failures?since=1h) counts a group's jobs of the last hour, and
// prints the filter that lists or retries "it". That filter named the
// error only: fed to `drover retry --filter`, it retried the group's jobs
// of every age (5 where the report said 2).
func TestFailureGroupFilterKeepsTheWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	k := b.prefix + ":f:"
	now := time.Now()
	for n, age := range []time.Duration{3 * time.Hour, 2 * time.Hour, 90 * time.Minute, 10 * time.Minute, time.Minute} {
		id := "j" + strconv.Itoa(n)
		fin := now.Add(-age).UnixMilli()
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "pay", "data", "{}", "opts", `{"attempts":1}`,
			"timestamp", fin-10, "atm", 1, "ats", 1, "failedReason", "order "+id+": card declined", "finishedOn", fin).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(fin), id)).Err())
	}
	rep, err := b.ins.FailureGroupsWithin(ctx, "f", time.Hour)
	require.NoError(t, err)
	require.Len(t, rep.Groups, 1)
	g := rep.Groups[0]
	require.Equal(t, 2, g.Count)
	f, err := inspect.ParseFilter(g.Filter)
	require.NoError(t, err, g.Filter)
	require.Equal(t, g.Filter, f.String(), "the filter reads back as printed")
	res, err := b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{Filter: f, IncludeUnrecoverable: true, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, g.Count, res.Matched, "filter %s", g.Filter)
	require.Equal(t, []string{"j4", "j3"}, res.IDs)

	// Without a window, the filter is the error alone, as before.
	rep, err = b.ins.FailureGroups(ctx, "f")
	require.NoError(t, err)
	require.Equal(t, `error="order j<n>: card declined"`, rep.Groups[0].Filter)
	require.Equal(t, 5, rep.Groups[0].Count)

	_, err = inspect.ParseFilter("finished>=yesterday")
	require.ErrorContains(t, err, `finished>= needs a time such as 2026-12-06T08:00:00Z, got "yesterday"`)
	_, err = inspect.ParseFilter("name>=x")
	require.ErrorContains(t, err, `unknown term "name>=x"`)
}
