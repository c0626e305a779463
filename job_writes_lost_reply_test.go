package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestJobWritesUnderClientRetry: as TestAdminWritesUnderClientRetry, for
// a job's own writes: the first run of Job.Log appends the line (of
// Job.UpdateProgress, stores the progress and writes its "progress"
// event), its reply is lost and go-redis sends the call again. Before, the
// second run appended the line again (the log held it twice and Log
// answered 2) and wrote a second "progress" event.
func TestJobWritesUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Log", func(t *testing.T) {
		t.Parallel()
		r := newLostReplyRig(t, nil)
		added, err := r.dq.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		_, err = r.q.Job("missing").Log(ctx, "warm-up")
		require.ErrorIs(t, err, drover.ErrJobNotFound, "warm-up")

		r.proxy.DropReplyTo("evalsha")
		n, err := r.q.Job(added.Job.ID).Log(ctx, "charged card")
		require.NoError(t, err)
		require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
		require.Equal(t, 1, n, "the log holds one line")
		lines, err := r.direct.LRange(ctx, r.prefix+":q:"+added.Job.ID+":logs", 0, -1).Result()
		require.NoError(t, err)
		require.Equal(t, []string{"charged card"}, lines)
	})

	t.Run("UpdateProgress", func(t *testing.T) {
		t.Parallel()
		r := newLostReplyRig(t, nil)
		added, err := r.dq.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
		require.ErrorIs(t, r.q.Job("missing").UpdateProgress(ctx, 1), drover.ErrJobNotFound, "warm-up")

		r.proxy.DropReplyTo("evalsha")
		require.NoError(t, r.q.Job(added.Job.ID).UpdateProgress(ctx, 40))
		require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
		entries, err := r.direct.XRange(ctx, r.prefix+":q:events", "-", "+").Result()
		require.NoError(t, err)
		progress := 0
		for _, e := range entries {
			if e.Values["event"] == "progress" {
				progress++
				require.Equal(t, "40", e.Values["data"])
			}
		}
		require.Equal(t, 1, progress, "one progress event")
	})

	t.Run("ChangeDelay", func(t *testing.T) {
		t.Parallel()
		r := newLostReplyRig(t, nil)
		added, err := r.dq.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		require.ErrorIs(t, r.q.Job("missing").ChangeDelay(ctx, time.Minute), drover.ErrJobNotFound, "warm-up")

		r.proxy.DropReplyTo("evalsha")
		require.NoError(t, r.q.Job(added.Job.ID).ChangeDelay(ctx, 2*time.Hour))
		require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
		entries, err := r.direct.XRange(ctx, r.prefix+":q:events", "-", "+").Result()
		require.NoError(t, err)
		delayed := 0
		for _, e := range entries {
			if e.Values["event"] == "delayed" {
				delayed++
			}
		}
		require.Equal(t, 2, delayed, "one delayed event for the add, one for the change")
	})

	// The first run re-queues the job under its new priority and takes
	// the queue's next priority counter (pc) for it; before, the resend
	// took another, so pc read 3 where Node BullMQ leaves 2, and the job's
	// place among its priority moved with it.
	t.Run("ChangePriority", func(t *testing.T) {
		t.Parallel()
		r := newLostReplyRig(t, nil)
		added, err := r.dq.Add(ctx, "x", nil, &drover.JobOptions{Priority: 1})
		require.NoError(t, err)
		require.ErrorIs(t, r.q.Job("missing").ChangePriority(ctx, 2, false), drover.ErrJobNotFound, "warm-up")

		r.proxy.DropReplyTo("evalsha")
		require.NoError(t, r.q.Job(added.Job.ID).ChangePriority(ctx, 2, false))
		require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
		require.Equal(t, "2", r.direct.Get(ctx, r.prefix+":q:pc").Val(), "one counter for the add, one for the change")
		score, err := r.direct.ZScore(ctx, r.prefix+":q:prioritized", added.Job.ID).Result()
		require.NoError(t, err)
		require.Equal(t, float64(2<<32+2), score, "priority 2, counter 2")
	})
}

// TestQueueRemoveDeduplicationKeyUnderClientRetry: as
// TestRemoveDeduplicationKeyUnderClientRetry, for
// Queue.RemoveDeduplicationKey (whatever job holds the id): the first
// send deletes the id's key, its reply is lost, go-redis sends it again.
// Before, that was a plain DEL: the second one found the key gone and the
// call answered 0 ("no job held the id") for an id it had freed.
func TestQueueRemoveDeduplicationKeyUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	_, err := r.dq.Add(ctx, "x", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "welcome-8"}})
	require.NoError(t, err)
	n, err := r.q.RemoveDeduplicationKey(ctx, "never-used")
	require.NoError(t, err, "warm-up")
	require.Zero(t, n)

	r.proxy.DropReplyTo("welcome-8")
	n, err = r.q.RemoveDeduplicationKey(ctx, "welcome-8")
	require.NoError(t, err)
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.Equal(t, 1, n, "the id was freed")
	require.Zero(t, r.direct.Exists(ctx, r.prefix+":q:de:welcome-8").Val())
}

// TestRemoveRateLimitKeyUnderClientRetry: the first send of
// Queue.RemoveRateLimitKey deletes the limiter key, its reply is lost,
// go-redis sends it again. Before, that was a plain DEL: the second one
// found no key and the call answered false ("there was no key") for a key
// it had deleted.
func TestRemoveRateLimitKeyUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	removed, err := r.q.RemoveRateLimitKey(ctx)
	require.NoError(t, err, "warm-up")
	require.False(t, removed, "no key yet")
	require.NoError(t, r.dq.RateLimit(ctx, time.Hour))

	r.proxy.DropReplyTo(r.prefix + ":q:") // the DEL, or the script call, whichever it is
	removed, err = r.q.RemoveRateLimitKey(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.True(t, removed, "the key was deleted")
	require.Zero(t, r.direct.Exists(ctx, r.prefix+":q:limiter").Val())
}

// TestPauseResumeUnderClientRetry: the first run of Queue.Pause (of
// Queue.Resume) pauses the queue and writes its "paused" ("resumed")
// event, its reply is lost, go-redis sends it again. Before, the second
// run wrote the event again, and a listener saw the queue paused twice by
// one call.
func TestPauseResumeUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	require.NoError(t, r.q.Resume(ctx), "warm-up")
	events := func(name string) int {
		entries, err := r.direct.XRange(ctx, r.prefix+":q:events", "-", "+").Result()
		require.NoError(t, err)
		n := 0
		for _, e := range entries {
			if e.Values["event"] == name {
				n++
			}
		}
		return n
	}

	r.proxy.DropReplyTo("evalsha")
	require.NoError(t, r.q.Pause(ctx))
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.Equal(t, 1, events("paused"), "one paused event")
	paused, err := r.dq.IsPaused(ctx)
	require.NoError(t, err)
	require.True(t, paused)

	r.proxy.DropReplyTo("evalsha")
	require.NoError(t, r.q.Resume(ctx))
	require.Equal(t, int64(2), r.proxy.Dropped(), "the reply was lost again")
	require.Equal(t, 2, events("resumed"), "the warm-up's and the call's")
}

// TestRemoveOrphanedJobsUnderClientRetry: the first run of the script that
// deletes a batch of orphaned job hashes deletes them, its reply is lost,
// go-redis sends it again. Before, the second run found none left and
// RemoveOrphanedJobs answered 0 for the 2 hashes it had deleted.
func TestRemoveOrphanedJobsUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	base := r.prefix + ":q:"
	require.NoError(t, r.direct.HSet(ctx, base+"lost0", "name", "j").Err())
	n, err := r.q.RemoveOrphanedJobs(ctx, 0, 0)
	require.NoError(t, err, "warm-up")
	require.Equal(t, 1, n, "warm-up")
	require.NoError(t, r.direct.HSet(ctx, base+"lost1", "name", "j").Err())
	require.NoError(t, r.direct.HSet(ctx, base+"lost2", "name", "j").Err())

	r.proxy.DropReplyTo("evalsha")
	n, err = r.q.RemoveOrphanedJobs(ctx, 0, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.Equal(t, 2, n, "the hashes it deleted")
	require.Zero(t, r.direct.Exists(ctx, base+"lost1", base+"lost2").Val())
}
