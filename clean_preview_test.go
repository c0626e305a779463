package drover_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestCleanCandidates: the preview runs Clean's own script without its
// writes. For every state it lists what the clean then removes, oldest
// first, and leaves Redis as it was (no job touched, no cleaned event).
// Before, the preview was the dashboard's and CLI's own Go copy of the
// script's rules, which had drifted twice (scheduler iterations listed,
// the wrong age order).
func TestCleanCandidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	q := b.queue

	add := func(name string, opts *drover.JobOptions) string {
		res, err := q.Add(ctx, name, nil, opts)
		require.NoError(t, err)
		return res.Job.ID
	}
	// Finished jobs first: a worker completes "ok" jobs and fails "bad" ones.
	var finished []string
	for _, name := range []string{"ok", "bad", "ok", "bad"} {
		finished = append(finished, add(name, nil))
	}
	w := b.startWorker(t, func(_ context.Context, j *drover.Job) (any, error) {
		if j.Name == "bad" {
			return nil, drover.Unrecoverable(errors.New("bad"))
		}
		return "done", nil
	}, nil)
	for i, id := range finished {
		b.waitState(t, id, map[bool]drover.JobState{true: drover.StateCompleted, false: drover.StateFailed}[i%2 == 0])
	}
	require.NoError(t, w.Close(ctx))
	for range 3 {
		add("w", nil)
		add("d", &drover.JobOptions{Delay: time.Hour})
		add("p", &drover.JobOptions{Priority: 3})
	}
	time.Sleep(5 * time.Millisecond) // every job is older than the cut-off

	for _, state := range []drover.JobState{drover.StateCompleted, drover.StateFailed, drover.StateWaiting,
		drover.StateDelayed, drover.StatePrioritized} {
		before, err := statedump.Dump(ctx, b.rdb, b.prefix)
		require.NoError(t, err)
		listed, err := q.CleanCandidates(ctx, 0, 2, state)
		require.NoError(t, err, state)
		after, err := statedump.Dump(ctx, b.rdb, b.prefix)
		require.NoError(t, err)
		require.Empty(t, statedump.Diff(before, after), "%s: the preview writes nothing", state)
		require.Len(t, listed, 2, state)

		removed, err := q.Clean(ctx, 0, 2, state)
		require.NoError(t, err, state)
		require.ElementsMatch(t, listed, removed, "%s: the preview is what the clean removes", state)
		if state == drover.StateWaiting {
			// Oldest first: the first waiting job added is at the tail.
			jobs, err := q.GetJobs(ctx, []drover.JobState{drover.StateWaiting}, 0, -1, true)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			require.Less(t, idNumber(t, listed[0]), idNumber(t, listed[1]), "oldest first")
		}
	}

	_, err := q.CleanCandidates(ctx, -time.Second, 0, drover.StateCompleted)
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	_, err = q.CleanCandidates(ctx, 0, 0, drover.JobState("bogus"))
	require.ErrorIs(t, err, drover.ErrInvalidOption)
}

// idNumber is a generated job id's counter value.
func idNumber(t *testing.T, id string) int {
	t.Helper()
	n, err := strconv.Atoi(id)
	require.NoError(t, err, id)
	return n
}
