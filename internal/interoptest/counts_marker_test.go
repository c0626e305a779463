package interoptest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestDifferentialCountsDropLegacyMarker: BullMQ 6.7's getCounts drops a
// pre-v5 marker ("0:<n>") at the tail of wait or paused as it counts (one
// per list and call, and not when the marker is the list's only entry,
// which counts 0); a marker elsewhere in the list is counted. Node's
// getJobCounts and drover's GetJobCounts run on the same seeded lists, and
// the answers and the Redis states after must match.
func TestDifferentialCountsDropLegacyMarker(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	type step struct {
		label string
		seed  map[string][]string // list name -> entries, left to right
		types []string
	}
	steps := []step{
		{"a marker at the tail of wait", map[string][]string{"wait": {"j2", "j1", "0:0"}}, []string{"waiting", "active"}},
		{"two markers at the tail: one dropped", map[string][]string{"wait": {"j1", "0:0", "0:5"}}, []string{"waiting"}},
		{"a marker alone in wait", map[string][]string{"wait": {"0:1000"}}, []string{"waiting"}},
		{"a marker at the head of wait", map[string][]string{"wait": {"0:0", "j1"}}, []string{"waiting"}},
		{"a marker at the tail of paused", map[string][]string{"paused": {"j1", "j0", "0:0"}}, []string{"paused", "waiting"}},
		{"waiting asked twice", map[string][]string{"wait": {"j1", "0:0"}}, []string{"waiting", "waiting"}},
	}
	answers := map[impl][]map[string]int64{}
	checkpointed(t, setup, dumpOptions{}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		ctx := context.Background()
		base := b.prefix + ":" + queueName + ":"
		// Node's Queue writes the meta hash when it opens the queue: open it
		// on both sides, before anything is seeded.
		_, err := b.oracle.GetJobCounts(ctx, b.prefix, queueName, "active")
		require.NoError(t, err)
		for _, st := range steps {
			require.NoError(t, b.rdb.Del(ctx, base+"wait", base+"paused").Err())
			for list, entries := range st.seed {
				require.NoError(t, b.rdb.RPush(ctx, base+list, toAny(entries)...).Err())
			}
			var got map[string]int64
			if by == nodeImpl {
				var err error
				got, err = b.oracle.GetJobCounts(ctx, b.prefix, queueName, st.types...)
				require.NoError(t, err)
			} else {
				states := make([]drover.JobState, len(st.types))
				for i, s := range st.types {
					states[i] = drover.JobState(s)
				}
				counts, err := b.dq.GetJobCounts(ctx, states...)
				require.NoError(t, err)
				got = map[string]int64{}
				for s, n := range counts {
					got[string(s)] = n
				}
			}
			answers[by] = append(answers[by], got)
			checkpoint(st.label)
		}
	})
	for i, st := range steps {
		require.Equal(t, answers[nodeImpl][i], answers[droverImpl][i], "counts: %s", st.label)
	}
	require.Equal(t, map[string]int64{"waiting": 2, "active": 0}, answers[nodeImpl][0])
	require.Equal(t, map[string]int64{"waiting": 0}, answers[nodeImpl][2])
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
