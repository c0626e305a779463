package inspect_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestTruncatedOnlyWhenMore: the reports that read at most a scan limit of
// jobs say Truncated when a state held more than the limit, not when it
// held exactly the limit (every job was read; the dashboard said "only the
// newest were looked at" and offered more that did not exist).
func TestTruncatedOnlyWhenMore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 5
	for _, tc := range []struct {
		jobs      int
		truncated bool
	}{{limit, false}, {limit + 1, true}} {
		t.Run(strconv.Itoa(tc.jobs), func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			ins, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix, ScanLimit: limit, BudgetScanLimit: limit})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, ins.Close(ctx)) })
			k := b.prefix + ":q:"
			b.add(t, "q", "seed", nil) // the queue's meta and registry entry
			require.NoError(t, b.rdb.Del(ctx, k+"wait").Err())
			for n := range tc.jobs {
				id := "f" + strconv.Itoa(n)
				require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", `{"attempts":3}`,
					"timestamp", 1000+n, "atm", 1, "ats", 1, "failedReason", "boom", "finishedOn", 2000+n).Err())
				require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(2000+n), id)).Err())
				id = "a" + strconv.Itoa(n)
				require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", `{"attempts":3}`,
					"timestamp", 1000+n, "atm", 2, "ats", 3, "processedOn", 3000).Err())
				require.NoError(t, b.rdb.RPush(ctx, k+"wait", id).Err())
			}

			fg, err := ins.FailureGroups(ctx, "q")
			require.NoError(t, err)
			require.Equal(t, limit, fg.Scanned)
			require.Equal(t, tc.truncated, fg.Truncated, "FailureGroups")

			page, err := ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateFailed, Limit: 50, Filter: inspect.Filter{Name: "nobody"}})
			require.NoError(t, err)
			require.Equal(t, tc.truncated, page.Truncated, "Jobs with a filter")

			st, err := ins.Stalled(ctx, "q")
			require.NoError(t, err)
			require.Equal(t, tc.truncated, st.Truncated, "Stalled")

			bu, err := ins.NearExhausted(ctx, "q")
			require.NoError(t, err)
			require.Equal(t, tc.truncated, bu.Truncated, "NearExhausted")
		})
	}
}
