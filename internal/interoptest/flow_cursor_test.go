package interoptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestInteropDependencyCursors pages a parent's four kinds of dependency
// (processed, unprocessed, ignored, failed) with Node's
// Job.getDependencies({kind: {cursor, count}}) and drover's
// Job.GetDependencies, on sets that are empty, hold fewer children than
// the count, exactly the count, more, and many more (past Redis's small
// encodings, where a scan pages for real), and compares the pages and the
// next cursors.
//
//	go test -count=1 -run 'TestInteropDependencyCursors' ./internal/interoptest/
func TestInteropDependencyCursors(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	const count = 2
	for _, tc := range []struct {
		name   string
		n      int
		cursor uint64 // of the failed page; the scans start at 0
	}{
		{"Empty", 0, 0},
		{"FewerThanCount", 1, 0},
		{"ExactlyCount", 2, 0},
		{"MoreThanCount", 3, 0},
		{"MoreThanCountSecondPage", 3, 2},
		{"Many", 300, 0},
		{"ManyLastPage", 300, 298},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			_, err := b.oracle.Add(ctx, b.prefix, queueName, "parent", nil, map[string]any{"jobId": "p"})
			require.NoError(t, err)
			base := b.prefix + ":" + queueName + ":p"
			_, err = b.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for i := range tc.n {
					child := func(kind string) string { return fmt.Sprintf("%s:%s:%s%03d", b.prefix, partsQueue, kind, i) }
					p.HSet(ctx, base+":processed", child("done"), `"v"`)
					p.SAdd(ctx, base+":dependencies", child("pending"))
					p.HSet(ctx, base+":failed", child("ignored"), "reason")
					p.ZAdd(ctx, base+":unsuccessful", redis.Z{Score: float64(1000 + i), Member: child("failed")})
				}
				return nil
			})
			require.NoError(t, err)

			page := map[string]any{"cursor": 0, "count": count}
			var nd struct {
				Processed             map[string]json.RawMessage
				NextProcessedCursor   *uint64
				Unprocessed           []string
				NextUnprocessedCursor *uint64
				Ignored               map[string]string
				NextIgnoredCursor     *uint64
				Failed                []string
				NextFailedCursor      *uint64
			}
			require.NoError(t, b.oracle.JobRead(ctx, b.prefix, queueName, "p", "getDependencies", &nd, map[string]any{
				"processed": page, "unprocessed": page, "ignored": page,
				"failed": map[string]any{"cursor": tc.cursor, "count": count},
			}))
			j, err := b.dq.GetJob(ctx, "p")
			require.NoError(t, err)
			dp := &drover.DependencyPage{Count: count}
			d, err := j.GetDependencies(ctx, &drover.DependenciesOptions{
				Processed: dp, Unprocessed: dp, Ignored: dp, Failed: &drover.DependencyPage{Cursor: tc.cursor, Count: count},
			})
			require.NoError(t, err)
			// The scans' cursors are Redis's on both sides, and so are the
			// pages: the same HSCAN/SSCAN on the same key.
			require.Equal(t, present(t, nd.NextProcessedCursor), d.NextProcessedCursor, "nextProcessedCursor")
			require.Equal(t, present(t, nd.NextUnprocessedCursor), d.NextUnprocessedCursor, "nextUnprocessedCursor")
			require.Equal(t, present(t, nd.NextIgnoredCursor), d.NextIgnoredCursor, "nextIgnoredCursor")
			require.Equal(t, nd.Unprocessed, d.Unprocessed, "unprocessed page")
			require.Equal(t, nd.Ignored, d.Ignored, "ignored page")
			require.Len(t, d.Processed, len(nd.Processed), "processed page")
			for k := range nd.Processed {
				require.Contains(t, d.Processed, k, "processed page")
			}
			// The failed page is an offset range of the unsuccessful zset:
			// the next cursor is cursor + count after every page, as in
			// BullMQ, also when nothing is left (the page then holds fewer
			// than count, or none).
			require.Equal(t, tc.cursor+count, present(t, nd.NextFailedCursor), "Node's nextFailedCursor")
			require.Equal(t, tc.cursor+count, d.NextFailedCursor, "drover's NextFailedCursor")
			want := []string{}
			for i := int(tc.cursor); i < min(tc.n, int(tc.cursor)+count); i++ {
				want = append(want, fmt.Sprintf("%s:%s:failed%03d", b.prefix, partsQueue, i))
			}
			require.Equal(t, want, d.Failed, "drover's failed page: children cursor .. cursor+count-1")
			if tc.cursor == 0 {
				require.Equal(t, nd.Failed, d.Failed, "the first failed page")
			} else {
				// A deliberate difference: BullMQ 6.7 reads ZRANGE
				// cursor..count-1, empty past the first page.
				require.Empty(t, nd.Failed, "Node's failed page past the first")
			}
		})
	}
}

// present is a cursor of Node's answer, which must be there: getDependencies
// answers every kind asked for with its cursor.
func present(t *testing.T, cursor *uint64) uint64 {
	t.Helper()
	require.NotNil(t, cursor, "Node answers the cursor of every kind asked for")
	return *cursor
}
