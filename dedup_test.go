package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

func TestDeduplication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	add := func(t *testing.T, b *testBundle, name string, d *drover.Deduplication, delay time.Duration) *drover.AddResult {
		t.Helper()
		res, err := b.queue.Add(ctx, name, nil, &drover.JobOptions{Deduplication: d, Delay: delay})
		require.NoError(t, err)
		return res
	}

	t.Run("SimpleModeUntilTheJobFinishes", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d := &drover.Deduplication{ID: "sync-user-7"}
		first := add(t, b, "a", d, 0)
		second := add(t, b, "b", d, 0)
		require.Equal(t, drover.AddCreated, first.Outcome)
		require.Equal(t, drover.AddDeduplicated, second.Outcome)
		require.Equal(t, first.Job.ID, second.Job.ID)
		require.Equal(t, drover.StateWaiting, second.ExistingState)
		require.Equal(t, "sync-user-7", first.Job.DeduplicationID)
		evs := b.events(t)
		last := evs[len(evs)-1]
		require.Equal(t, drover.EventDeduplicated, last.Name)
		require.Equal(t, first.Job.ID, last.JobID)
		require.Equal(t, "sync-user-7", last.DeduplicationID)
		require.Equal(t, "2", last.DeduplicatedJobID, "the id the rejected add would have had")

		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) { return nil, nil }, nil)
		b.waitState(t, first.Job.ID, drover.StateCompleted)
		testkit.WaitFor(t, 5*time.Second, "dedup key released", func() bool {
			n, err := b.rdb.Exists(ctx, b.prefix+":q:de:sync-user-7").Result()
			require.NoError(t, err)
			return n == 0
		})
		third := add(t, b, "c", d, 0)
		require.Equal(t, drover.AddCreated, third.Outcome)
	})

	t.Run("ThrottleModeByTTL", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d := &drover.Deduplication{ID: "t", TTL: 300 * time.Millisecond}
		first := add(t, b, "a", d, 0)
		require.Equal(t, drover.AddDeduplicated, add(t, b, "b", d, 0).Outcome)
		ttl, err := b.rdb.PTTL(ctx, b.prefix+":q:de:t").Result()
		require.NoError(t, err)
		require.Greater(t, ttl, time.Duration(0))
		testkit.WaitFor(t, 5*time.Second, "ttl expiry", func() bool {
			return add(t, b, "c", d, 0).Outcome == drover.AddCreated
		})
		_ = first
	})

	t.Run("ExtendRestartsTheTTL", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d := &drover.Deduplication{ID: "e", TTL: 10 * time.Second, Extend: true}
		add(t, b, "a", d, 0)
		require.NoError(t, b.rdb.PExpire(ctx, b.prefix+":q:de:e", time.Second).Err())
		require.Equal(t, drover.AddDeduplicated, add(t, b, "b", d, 0).Outcome)
		ttl, err := b.rdb.PTTL(ctx, b.prefix+":q:de:e").Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 5*time.Second, "the duplicate add restarted the TTL")
	})

	t.Run("DebounceReplacesTheDelayedJob", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d := &drover.Deduplication{ID: "search-index", TTL: time.Minute, Replace: true}
		first := add(t, b, "v1", d, time.Hour)
		second := add(t, b, "v2", d, time.Hour)
		require.Equal(t, drover.AddCreated, second.Outcome)
		require.NotEqual(t, first.Job.ID, second.Job.ID)
		_, err := b.queue.GetJob(ctx, first.Job.ID)
		require.ErrorIs(t, err, drover.ErrJobNotFound, "the replaced job is gone")
		counts, err := b.queue.GetJobCounts(ctx, drover.StateDelayed)
		require.NoError(t, err)
		require.Equal(t, int64(1), counts[drover.StateDelayed])
		names := eventNames(b.events(t))
		require.Contains(t, names, "removed:"+first.Job.ID+":delayed")
		require.Contains(t, names, "deduplicated:"+second.Job.ID)
	})

	t.Run("ReAddedAfterTheOwnerWasRemoved", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d := &drover.Deduplication{ID: "r"}
		first := add(t, b, "a", d, 0)
		// Removing the owner's hash behind drover's back leaves a stale key.
		require.NoError(t, b.rdb.Del(ctx, b.prefix+":q:"+first.Job.ID).Err())
		again := add(t, b, "b", d, 0)
		require.Equal(t, drover.AddReAdded, again.Outcome)
		require.Equal(t, first.Job.ID, again.PreviousJobID)
		owner, err := b.rdb.Get(ctx, b.prefix+":q:de:r").Result()
		require.NoError(t, err)
		require.Equal(t, again.Job.ID, owner)
	})

	// AddDeduplicated with KeepLastIfActive and a running owner: the add
	// creates no job now but is kept (dn:<id>) and queued when the owner
	// finishes, as AddOutcome's doc says.
	t.Run("KeepLastIfActiveKeepsTheSwallowedAdd", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w, err := drover.NewWorker(b.rdb, b.name, nil, &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		d := &drover.Deduplication{ID: "k", KeepLastIfActive: true}
		first := add(t, b, "a", d, 0)
		owner, err := w.NextJob(ctx, "tok", 0)
		require.NoError(t, err)
		require.Equal(t, first.Job.ID, owner.ID)
		kept := add(t, b, "b", d, 0)
		require.Equal(t, drover.AddDeduplicated, kept.Outcome)
		require.Equal(t, first.Job.ID, kept.Job.ID, "Job is the owner")
		require.Equal(t, drover.StateActive, kept.ExistingState)
		n, err := b.rdb.Exists(ctx, b.prefix+":q:dn:k").Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the swallowed add is kept")
		require.NoError(t, owner.Complete(ctx, "tok", nil))
		counts, err := b.queue.GetJobCounts(ctx, drover.StateWaiting)
		require.NoError(t, err)
		require.Equal(t, int64(1), counts[drover.StateWaiting], "the kept add is queued when the owner finishes")
	})

	t.Run("RemoveReleasesTheKey", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		d := &drover.Deduplication{ID: "x"}
		first := add(t, b, "a", d, 0)
		require.NoError(t, first.Job.Remove(ctx, nil))
		require.Equal(t, drover.AddCreated, add(t, b, "b", d, 0).Outcome)
	})
}

func TestJobIDOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		parts   []string
		want    string
		wantErr string
	}{
		{[]string{"charge", "A-17"}, "charge/A-17", ""},
		{[]string{"a/b", "c"}, "a%2Fb/c", ""},
		{[]string{"a", "b/c"}, "a/b%2Fc", ""},
		{[]string{"user:7", "welcome"}, "user%3A7/welcome", ""},
		{[]string{"100%"}, "100%25", ""},
		{[]string{"42"}, "", `job id "42" must not be an integer`},
		{[]string{"x", ""}, "", "part 1 is empty"},
		{nil, "", "at least one part"},
		{[]string{"meta"}, "", "collides with a queue key"},
	}
	for _, tt := range tests {
		got, err := drover.JobIDOf(tt.parts...)
		if tt.wantErr != "" {
			require.ErrorIs(t, err, drover.ErrInvalidJobID)
			require.ErrorContains(t, err, tt.wantErr)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
		require.NoError(t, drover.ValidateJobID(got))
	}
}
