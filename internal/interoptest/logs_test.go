package interoptest_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInteropJobLogRanges: the lines of a job's log Node BullMQ and drover
// both wrote (Node's keepLogs trimming it) read the same through Node's
// Queue.getJobLogs(id, start, end, asc) and drover's GetJobLogs (asc) and
// GetJobLogsNewestFirst (asc false), for every range, negative indexes and
// empty ranges included. Before, drover had no newest-first read: a port
// of getJobLogs(id, 0, 9, false) (the last ten lines, newest first) had to
// count the lines and turn the indexes round itself.
func TestInteropJobLogRanges(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()

	id, err := b.oracle.Add(ctx, b.prefix, queueName, "logged", nil, map[string]any{"keepLogs": 6})
	require.NoError(t, err)
	job, err := b.dq.GetJob(ctx, id)
	require.NoError(t, err)
	for i := range 8 {
		if i%2 == 0 {
			_, err = b.oracle.Log(ctx, b.prefix, queueName, id, fmt.Sprint("node ", i))
		} else {
			_, err = job.Log(ctx, fmt.Sprint("drover ", i))
		}
		require.NoError(t, err)
	}

	ranges := [][2]int{{0, -1}, {0, 0}, {0, 2}, {1, 3}, {-2, -1}, {-3, -2}, {-1, -1}, {2, 1}, {3, -3}, {0, 100}, {-100, 100}, {5, 5}, {6, 9}}
	for _, r := range ranges {
		for _, asc := range []bool{true, false} {
			want, wantN, err := b.oracle.GetJobLogsRange(ctx, b.prefix, queueName, id, r[0], r[1], asc)
			require.NoError(t, err)
			read := b.dq.GetJobLogs
			if !asc {
				read = b.dq.GetJobLogsNewestFirst
			}
			got, n, err := read(ctx, id, int64(r[0]), int64(r[1]))
			require.NoError(t, err)
			require.Equal(t, wantN, n, "count of %v asc=%v", r, asc)
			if len(want) == 0 {
				want = []string{}
			}
			if got == nil {
				got = []string{}
			}
			require.Equal(t, want, got, "getJobLogs(%s, %d, %d, %v) vs drover", id, r[0], r[1], asc)
		}
	}
	// The ends of int64 do not overflow.
	got, n, err := b.dq.GetJobLogsNewestFirst(ctx, id, 0, math.MaxInt64)
	require.NoError(t, err)
	require.EqualValues(t, 6, n)
	require.Equal(t, []string{"drover 7", "node 6", "drover 5", "node 4", "drover 3", "node 2"}, got)
	got, _, err = b.dq.GetJobLogsNewestFirst(ctx, id, math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	require.Len(t, got, 6)
}
