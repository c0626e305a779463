package inspect_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keys"
)

func TestRetryJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// setupFailed leaves 12 failed jobs in queue f of a paused queue (so
	// retried jobs stay in wait): names a/b alternate, reasons timeout for
	// even n, refused for odd; all spent their 2 attempts.
	setupFailed := func(t *testing.T) *testBundle {
		t.Helper()
		b := setup(t, nil)
		k := b.prefix + ":f:"
		for n := range 12 {
			id := "j" + strconv.Itoa(n)
			reason := []string{"timeout", "refused"}[n%2]
			require.NoError(t, b.rdb.HSet(ctx, k+id, "name", []string{"a", "b", "c"}[n%3], "data", "{}", "opts", `{"attempts":2}`,
				"timestamp", 1000+n, "atm", 2, "ats", 2, "failedReason", reason, "finishedOn", 2000+n).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(2000+n), id)).Err())
		}
		require.NoError(t, b.ins.Pause(ctx, "f"))
		return b
	}
	counts := func(t *testing.T, b *testBundle) inspect.Counts {
		t.Helper()
		info, err := b.ins.QueueInfo(ctx, "f")
		require.NoError(t, err)
		return info.Counts
	}

	t.Run("DryRunMovesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		res, err := b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{Filter: inspect.Filter{Reason: "timeout"}, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, 6, res.Matched)
		require.Equal(t, 0, res.Retried)
		require.Equal(t, []string{"j10", "j8", "j6", "j4", "j2", "j0"}, res.IDs)
		require.Equal(t, int64(12), counts(t, b).Failed)

		res, err = b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{DryRun: true, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, 5, res.Matched)
		require.Len(t, res.IDs, 5)
		require.Equal(t, int64(12), counts(t, b).Failed)
	})

	t.Run("FilteredInPacedChunksWithReset", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		var mu sync.Mutex
		var progress []string
		start := time.Now()
		res, err := b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{
			Filter: inspect.Filter{Reason: "timeout"}, ResetAttempts: true, ChunkSize: 2, Pause: 20 * time.Millisecond,
			Progress: func(done, total int) {
				mu.Lock()
				progress = append(progress, fmt.Sprintf("%d/%d", done, total))
				mu.Unlock()
			},
		})
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond, "two pauses between three chunks")
		require.Equal(t, 6, res.Matched)
		require.Equal(t, 6, res.Retried)
		require.Equal(t, []string{"2/6", "4/6", "6/6"}, progress)
		c := counts(t, b)
		require.Equal(t, int64(6), c.Failed)
		require.Equal(t, int64(6), c.Waiting)
		d, err := b.ins.Job(ctx, "f", "j4")
		require.NoError(t, err)
		require.Equal(t, 0, d.Budget.Made)
		d, err = b.ins.Job(ctx, "f", "j5")
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, d.State)
	})

	t.Run("FilteredWithoutResetKeepsAttempts", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		res, err := b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{Filter: inspect.Filter{Name: "c"}, Pause: -1})
		require.NoError(t, err)
		require.Equal(t, 4, res.Retried)
		d, err := b.ins.Job(ctx, "f", "j2")
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, d.State)
		require.Equal(t, 2, d.Budget.Made)
	})

	t.Run("UnfilteredMovesByAge", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		var last int
		res, err := b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{ChunkSize: 5, Pause: -1, Progress: func(done, total int) { last = done }})
		require.NoError(t, err)
		require.Equal(t, 12, res.Matched)
		require.Equal(t, 12, res.Retried)
		require.Equal(t, 12, last)
		require.Equal(t, int64(12), counts(t, b).Waiting)
	})

	// A confirmed retry passes the dry run's NewestFinished as OlderThan: a
	// job that fails after the dry run is not retried with the ones shown,
	// on both paths (by age, and job by job through a filter).
	for name, tc := range map[string]struct {
		opts   inspect.RetryOptions
		newest int64 // finishedOn of the newest matched job
	}{
		"ByAge":    {inspect.RetryOptions{IncludeUnrecoverable: true}, 2011},        // j11
		"Filtered": {inspect.RetryOptions{Filter: inspect.Filter{Name: "a"}}, 2009}, // j9 of j0, j3, j6, j9
	} {
		o := tc.opts
		t.Run("OlderThanLeavesLaterFailures"+name, func(t *testing.T) {
			t.Parallel()
			b := setupFailed(t)
			dry := o
			dry.DryRun = true
			preview, err := b.ins.RetryJobs(ctx, "f", &dry)
			require.NoError(t, err)
			require.Equal(t, tc.newest, preview.NewestFinished.UnixMilli())
			// j12 (name a) fails after the preview.
			k := b.prefix + ":f:"
			require.NoError(t, b.rdb.HSet(ctx, k+"j12", "name", "a", "data", "{}", "opts", `{"attempts":2}`,
				"timestamp", 1012, "atm", 2, "ats", 2, "failedReason", "timeout", "finishedOn", 2012).Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(2012, "j12")).Err())

			run := o
			run.Pause, run.OlderThan = -1, preview.NewestFinished.Time
			res, err := b.ins.RetryJobs(ctx, "f", &run)
			require.NoError(t, err)
			require.Equal(t, preview.Matched, res.Matched)
			require.Equal(t, preview.Matched, res.Retried)
			d, err := b.ins.Job(ctx, "f", "j12")
			require.NoError(t, err)
			require.Equal(t, drover.StateFailed, d.State, "failed after the preview: left for the next retry")
			// Without the bound it is retried like the others.
			run.OlderThan = time.Time{}
			res, err = b.ins.RetryJobs(ctx, "f", &run)
			require.NoError(t, err)
			require.Equal(t, 1, res.Retried)
		})
	}

	// A limit takes the newest jobs, as the dry run lists them, on both
	// paths: what the dry run named is what moves.
	for name, o := range map[string]inspect.RetryOptions{
		"ByAge":    {IncludeUnrecoverable: true},
		"Filtered": {Filter: inspect.Filter{Reason: "e"}}, // matches every job (timeout, refused)
	} {
		t.Run("LimitTakesTheNewest"+name, func(t *testing.T) {
			t.Parallel()
			b := setupFailed(t)
			dry := o
			dry.DryRun, dry.Limit = true, 3
			preview, err := b.ins.RetryJobs(ctx, "f", &dry)
			require.NoError(t, err)
			require.Equal(t, []string{"j11", "j10", "j9"}, preview.IDs)
			run := o
			run.Limit, run.Pause = 3, -1
			res, err := b.ins.RetryJobs(ctx, "f", &run)
			require.NoError(t, err)
			require.Equal(t, 3, res.Retried)
			for _, id := range preview.IDs {
				d, err := b.ins.Job(ctx, "f", id)
				require.NoError(t, err)
				require.Equal(t, drover.StateWaiting, d.State, id)
			}
		})
	}

	t.Run("RefusesBadState", func(t *testing.T) {
		t.Parallel()
		b := setupFailed(t)
		_, err := b.ins.RetryJobs(ctx, "f", &inspect.RetryOptions{State: drover.StateActive})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	})
}

// TestCleanCandidatesAreWhatCleanRemoves: with a limit, the candidates a
// clean's confirmation lists are the jobs the clean then removes (the
// oldest), for a finished set and for the wait list. Before, the listing
// was newest first: `drover clean --limit 2 --dry-run` named two jobs and
// the clean removed two others.
func TestCleanCandidatesAreWhatCleanRemoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, st := range []drover.JobState{drover.StateCompleted, drover.StateWaiting} {
		t.Run(string(st), func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			k := b.prefix + ":q:"
			for n := range 5 {
				id := "j" + strconv.Itoa(n)
				require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "n", "data", "{}", "opts", "{}", "timestamp", 1000+n,
					"delay", 0, "priority", 0).Err())
				if st == drover.StateCompleted {
					require.NoError(t, b.rdb.HSet(ctx, k+id, "finishedOn", 2000+n, "returnvalue", "null").Err())
					require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(float64(2000+n), id)).Err())
				} else {
					require.NoError(t, b.rdb.LPush(ctx, k+"wait", id).Err())
				}
			}
			listed, err := b.ins.CleanCandidates(ctx, "q", st, 0, 2)
			require.NoError(t, err)
			require.Equal(t, []string{"j0", "j1"}, listed)
			removed, err := b.ins.Clean(ctx, "q", st, 0, 2)
			require.NoError(t, err)
			require.ElementsMatch(t, listed, removed)
		})
	}
}

func TestAdminActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("PromoteRemoveCleanObliterate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		d1 := b.add(t, "q", "x", &drover.JobOptions{Delay: time.Hour})
		b.add(t, "q", "x", &drover.JobOptions{Delay: time.Hour})
		b.add(t, "q", "x", &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, b.ins.PromoteJob(ctx, "q", d1))
		n, err := b.ins.PromoteAll(ctx, "q")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.NoError(t, b.ins.RemoveJob(ctx, "q", d1))
		info, err := b.ins.QueueInfo(ctx, "q")
		require.NoError(t, err)
		require.Equal(t, int64(2), info.Counts.Waiting)
		removed, err := b.ins.Clean(ctx, "q", drover.StateWaiting, 0, 0)
		require.NoError(t, err)
		require.Len(t, removed, 2)
		require.NoError(t, b.ins.Resume(ctx, "q"))
		require.NoError(t, b.ins.Obliterate(ctx, "q", false))
		names, err := b.ins.Queues(ctx)
		require.NoError(t, err)
		require.Empty(t, names)
	})
}

func TestStalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("StallCountsAndLocks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":q:"
		// j1 stalled once and waits again; j2 stalled and completed; j3 is
		// active without a lock and marked by the last check; j4 never stalled.
		for id, extra := range map[string][]any{"j1": {"stc", 1}, "j2": {"stc", 2, "atm", 1}, "j3": {"ats", 1}, "j4": {}} {
			args := append([]any{"name", "x", "data", "{}", "opts", "{}", "timestamp", 1}, extra...)
			require.NoError(t, b.rdb.HSet(ctx, k+id, args...).Err())
		}
		require.NoError(t, b.rdb.RPush(ctx, k+"wait", "j1", "j4").Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(5, "j2")).Err())
		require.NoError(t, b.rdb.RPush(ctx, k+"active", "j3").Err())
		require.NoError(t, b.rdb.SAdd(ctx, k+"stalled", "j3").Err())

		started := make(chan struct{})
		release := make(chan struct{})
		b.startWorker(t, "q2", func(ctx context.Context, job *drover.Job) (any, error) {
			close(started)
			<-release
			return nil, nil
		}, &drover.WorkerOptions{LockDuration: 20 * time.Second})
		b.add(t, "q2", "busy", nil)
		<-started
		defer close(release)

		rep, err := b.ins.Stalled(ctx, "q")
		require.NoError(t, err)
		var stalled []string
		for _, j := range rep.Stalled {
			stalled = append(stalled, j.ID+":"+string(j.RetryState))
		}
		require.ElementsMatch(t, []string{"j1:stalled-recovered", "j2:completed"}, stalled)
		require.Len(t, rep.Active, 1)
		require.Equal(t, "j3", rep.Active[0].ID)
		require.False(t, rep.Active[0].Lock.Held)
		require.True(t, rep.Active[0].Candidate)

		rep, err = b.ins.Stalled(ctx, "q2")
		require.NoError(t, err)
		require.Len(t, rep.Active, 1)
		require.True(t, rep.Active[0].Lock.Held)
		require.Greater(t, rep.Active[0].Lock.TTL, 10*time.Second)
	})
}

func TestNearExhausted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ListsLiveJobsAboveThreshold", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		k := b.prefix + ":q:"
		for id, spec := range map[string][2]int{"used9of10": {9, 10}, "used8of10": {8, 10}, "used5of6": {5, 6}, "used10of10": {10, 10}} {
			require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", fmt.Sprintf(`{"attempts":%d}`, spec[1]),
				"timestamp", 1, "atm", spec[0], "failedReason", "boom").Err())
			require.NoError(t, b.rdb.ZAdd(ctx, k+"delayed", redisZ(float64(keys.DelayedScore(time.Now().Add(time.Hour).UnixMilli(), 0)), id)).Err())
		}
		// A failed job is exhausted, not near it.
		require.NoError(t, b.rdb.HSet(ctx, k+"gone", "name", "x", "data", "{}", "opts", `{"attempts":10}`, "timestamp", 1, "atm", 9).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(1, "gone")).Err())

		rep, err := b.ins.NearExhausted(ctx, "q")
		require.NoError(t, err)
		var got []string
		for _, j := range rep.Jobs {
			got = append(got, j.ID)
		}
		require.ElementsMatch(t, []string{"used9of10", "used5of6"}, got)
		require.NotNil(t, rep.Alert)
		require.Equal(t, inspect.AlertBudget, rep.Alert.Kind)
		require.Contains(t, rep.Alert.Message, "2 jobs have used more than 80% of their attempts")

		_, err = b.ins.NearExhausted(ctx, "nosuch")
		require.ErrorIs(t, err, inspect.ErrQueueNotFound)
	})
}
