package drover_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestStateLookupDoesNotSearchWait is issue 16 item 6 (no cost that grows
// with the queue): the state a duplicate add reports, and GetJobState,
// searched the wait and paused lists with LPOS, O(n) in the backlog (about
// 25 ms of Redis time per lookup at 1M waiting jobs, for every duplicate
// of a deterministic id). Now they read the sorted sets and the short
// active list only (one LPOS, on active), and still answer waiting for a
// job in wait or paused. On its own server: the LPOS counts are ours. A
// hit reads the job's hash, and a job without finishedOn is not looked up
// in completed or failed (add_dedup50's duplicates of waiting jobs).
func TestStateLookupDoesNotSearchWait(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil)
	ctx := context.Background()

	// The oldest job sits at the far end of a 2,000-job wait list, where
	// LPOS from the head looks last.
	_, err := q.Add(ctx, "old", nil, &drover.JobOptions{JobID: "oldest", Deduplication: &drover.Deduplication{ID: "op-1"}})
	require.NoError(t, err)
	jobs := make([]drover.BulkJob, 2000)
	_, err = q.AddBulk(ctx, jobs)
	require.NoError(t, err)

	// hit: an add that meets an existing job reads that job's hash for its
	// reply, so its state lookup needs no TYPE or HEXISTS to tell a job
	// from a missing one.
	lookups := []struct {
		name string
		hit  bool
		do   func() drover.JobState
	}{
		{"Add duplicate", true, func() drover.JobState {
			res, err := q.Add(ctx, "again", nil, &drover.JobOptions{JobID: "oldest"})
			require.NoError(t, err)
			require.Equal(t, drover.AddDuplicate, res.Outcome)
			return res.ExistingState
		}},
		{"AddBulk duplicate", true, func() drover.JobState {
			res, err := q.AddBulk(ctx, []drover.BulkJob{{Name: "again", Opts: &drover.JobOptions{JobID: "oldest"}}})
			require.NoError(t, err)
			require.Equal(t, drover.AddDuplicate, res[0].Outcome)
			return res[0].ExistingState
		}},
		{"Add deduplicated", true, func() drover.JobState {
			res, err := q.Add(ctx, "again", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "op-1"}})
			require.NoError(t, err)
			require.Equal(t, drover.AddDeduplicated, res.Outcome)
			return res.ExistingState
		}},
		{"GetJobState", false, func() drover.JobState {
			s, err := q.GetJobState(ctx, "oldest")
			require.NoError(t, err)
			return s
		}},
	}
	check := func(t *testing.T) {
		t.Helper()
		for _, l := range lookups {
			require.NoError(t, rdb.ConfigResetStat(ctx).Err())
			require.Equal(t, drover.StateWaiting, l.do(), l.name)
			calls := redistest.CommandCalls(t, rdb)
			require.LessOrEqual(t, calls["lpos"], 1, "%s: LPOS calls (the active list's only)", l.name)
			if l.hit {
				require.Zero(t, calls["type"]+calls["hexists"], "%s: TYPE and HEXISTS calls", l.name)
				// The hash read has no finishedOn: completed and failed
				// are not looked up (delayed, prioritized and
				// waiting-children are).
				require.LessOrEqual(t, calls["zscore"], 3, "%s: ZSCORE calls", l.name)
			}
		}
	}
	check(t)
	require.NoError(t, q.Pause(ctx)) // a paused queue's jobs wait too
	check(t)

	// A job that is nowhere is still unknown, and so is a queue key's name.
	for _, id := range []string{"nosuch", "meta", "id", "events", "wait"} {
		s, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateUnknown, s, id)
	}
}
