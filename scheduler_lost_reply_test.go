package drover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUpsertJobSchedulerUnderClientRetry: a proxy between the producer and
// a real redis-server lets the upsert script run, then loses its reply and
// resets the connection; go-redis sends the command again on a new
// connection some 50 ms later. Meanwhile an idle worker took the run the
// first call added (a cron scheduler with Immediately runs now) and made
// the scheduler's next run. The resend must not run the script again:
// before, it removed that next run, found the first run's id taken (the job
// running) and, since it had removed a run, wrote the first run over the
// running job and queued it again, so the job was active and waiting at
// once and ran twice for one slot.
func TestUpsertJobSchedulerUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A fixed resend delay, long enough for the worker to take the run.
	r := newLostReplyRig(t, func(o *redis.Options) {
		o.MinRetryBackoff, o.MaxRetryBackoff = 100*time.Millisecond, 100*time.Millisecond
	})
	proxy, q, direct, prefix := r.proxy, r.q, r.direct, r.prefix

	ran := make(chan string, 10)
	release := make(chan struct{})
	w, err := drover.NewWorker(direct, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		ran <- job.ID
		<-release
		return "ok", nil
	}), &drover.WorkerOptions{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before Close: a failed check must not leave the job running
	// Load the script first, so the lost reply is the upsert's own (not
	// a NOSCRIPT answer).
	_, err = q.UpsertJobScheduler(ctx, "warm-up", drover.RepeatOptions{Pattern: "0 0 1 1 *"}, nil)
	require.NoError(t, err)
	_, err = q.RemoveJobScheduler(ctx, "warm-up")
	require.NoError(t, err)

	proxy.DropReplyTo("evalsha")
	first, err := q.UpsertJobScheduler(ctx, "nightly", drover.RepeatOptions{Pattern: "0 0 * * *", Immediately: true}, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), proxy.Dropped(), "the reply was lost once")
	require.Equal(t, first.ID, recv(t, ran))

	key := func(s string) string { return prefix + ":q:" + s }
	require.Equal(t, []string{first.ID}, direct.LRange(ctx, key("active"), 0, -1).Val())
	require.Empty(t, direct.LRange(ctx, key("wait"), 0, -1).Val(), "the running run is not queued again")
	next := direct.ZRange(ctx, key("delayed"), 0, -1).Val()
	require.Len(t, next, 1, "the scheduler's next run")
	require.NotEqual(t, first.ID, next[0])
	free()
	testkit.WaitFor(t, 10*time.Second, "the run to complete", func() bool {
		return direct.ZScore(ctx, key("completed"), first.ID).Err() == nil
	})
	time.Sleep(200 * time.Millisecond) // a second run would start now
	select {
	case id := <-ran:
		t.Fatalf("job %s ran again", id)
	default:
	}
	added := 0
	for _, e := range direct.XRange(ctx, key("events"), "-", "+").Val() {
		if e.Values["event"] == "added" && e.Values["jobId"] == first.ID {
			added++
		}
	}
	require.Equal(t, 1, added, "the first run was added once")
}

// TestRemoveJobSchedulerUnderClientRetry: RemoveJobScheduler whose reply is
// lost and which go-redis sends again reports the removal the first run
// made; before, the second run found no scheduler and the call answered
// false for a scheduler it had removed.
func TestRemoveJobSchedulerUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	proxy, q, direct, prefix := r.proxy, r.q, r.direct, r.prefix
	_, err := q.RemoveJobScheduler(ctx, "missing") // loads the script
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)

	proxy.DropReplyTo("evalsha")
	removed, err := q.RemoveJobScheduler(ctx, "hourly")
	require.NoError(t, err)
	require.Equal(t, int64(1), proxy.Dropped(), "the reply was lost once")
	require.True(t, removed, "the scheduler existed and was removed")
	require.Zero(t, direct.ZCard(ctx, prefix+":q:repeat").Val())
}
