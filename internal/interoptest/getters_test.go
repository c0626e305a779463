package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestInteropGetJobsRanges: Node's Queue.getRanges and drover's
// Queue.GetJobIDs list the same ids for every (start, end, asc) of a list
// state, a sorted-set state and several states at once, negative indexes
// included. Before, drover's ascending read of a list returned the newest
// job too for an end below -1 (0..-2 listed all five waiting jobs, Node four)
// and failed with a Redis error for start -1 ("ERR value is not an integer
// or out of range": it sent LRANGE the index -0).
func TestInteropGetJobsRanges(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	ctx := context.Background()
	for i := range 5 {
		b.add(t, nodeImpl, jobSpec{name: "w", data: map[string]any{"i": i}})
		b.add(t, droverImpl, jobSpec{name: "d", data: map[string]any{"i": i}, delay: time.Duration(i+1) * time.Hour})
		b.add(t, nodeImpl, jobSpec{name: "p", data: map[string]any{"i": i}, priority: i + 1})
	}
	for _, types := range [][]drover.JobState{
		{drover.StateWaiting},
		{drover.StateDelayed},
		{drover.StateWaiting, drover.StateDelayed, drover.StatePrioritized},
	} {
		names := make([]string, len(types))
		for i, s := range types {
			names[i] = string(s)
		}
		for _, r := range [][2]int{{0, -1}, {0, -2}, {1, 2}, {2, 1}, {-2, -1}, {-3, -2}, {-1, -1}, {0, 100}, {-100, 100}} {
			for _, asc := range []bool{false, true} {
				want, err := b.oracle.GetRanges(ctx, b.prefix, queueName, names, r[0], r[1], asc)
				require.NoError(t, err)
				got, err := b.dq.GetJobIDs(ctx, types, int64(r[0]), int64(r[1]), asc)
				require.NoError(t, err, "GetJobIDs(%v, %d, %d, asc=%v)", names, r[0], r[1], asc)
				if len(want) == 0 {
					want = nil
				}
				require.Equal(t, want, got, "GetJobIDs(%v, %d, %d, asc=%v) vs Node's getRanges", names, r[0], r[1], asc)
			}
		}
	}
}
