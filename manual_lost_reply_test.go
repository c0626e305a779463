package drover_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestNextJobTakeReplyLost: the reply to a manual worker's take (NextJob,
// BullMQ's getNextJob) is lost after the take ran: the job is active,
// locked with the caller's token. NextJob must hand that job out. Before,
// it returned the connection error and the job sat in active with nobody
// holding it until its lock expired (LockDuration), when the stalled
// checker moved it back, counted as a stall; a second such loss in the
// job's life failed it ("job stalled more than allowable limit").
func TestNextJobTakeReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	direct, prefix := redistest.Client(t)
	dq, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", nil, &drover.WorkerOptions{Prefix: prefix, LockDuration: time.Minute})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })
	take := scripts.Source("moveToActive")
	require.NoError(t, direct.ScriptLoad(ctx, take).Err()) // an EVALSHA, not a NOSCRIPT and an EVAL

	for _, name := range []string{"first", "second"} {
		added, err := dq.Add(ctx, name, nil, nil)
		require.NoError(t, err)
		proxy.DropReplyTo(fmt.Sprintf("%x", sha1.Sum([]byte(take))))
		dropped := proxy.Dropped()
		job, err := w.NextJob(ctx, "tok-"+name, 0)
		require.Equal(t, dropped+1, proxy.Dropped(), "the take's reply was lost")
		require.NoError(t, err)
		require.NotNil(t, job, "the job the take took is handed out")
		require.Equal(t, added.Job.ID, job.ID)
		require.Equal(t, 1, job.AttemptsStarted)
		require.NoError(t, job.Complete(ctx, "tok-"+name, "done"))
		st, err := dq.GetJobState(ctx, added.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateCompleted, st)
	}

	// A take whose reply is lost with no job ready takes nothing, and a
	// job added later is taken by the next call.
	proxy.DropReplyTo(fmt.Sprintf("%x", sha1.Sum([]byte(take))))
	job, err := w.NextJob(ctx, "tok-none", 0)
	require.NoError(t, err)
	require.Nil(t, job)
	added, err := dq.Add(ctx, "later", nil, nil)
	require.NoError(t, err)
	job, err = w.NextJob(ctx, "tok-later", 0)
	require.NoError(t, err)
	require.NotNil(t, job)
	require.Equal(t, added.Job.ID, job.ID)
	require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val()[1:], "only the job just taken is active")
}

// TestManualFinishReplyLost: the reply to a manual worker's Complete,
// Fail, MoveToDelayed or CompleteAndNext is lost after the write ran. The
// call must report what it did. Before, go-redis sent the write again (the
// manual worker's calls went through a Doer that did not send once): the
// second run found the attempt ended and the call failed with ErrLockLost
// ("no lock ... the job is completed") for a write that was done, and the
// job CompleteAndNext's first run took sat in active, held by nobody.
func TestManualFinishReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	finish := scripts.Source("finishJobs")
	for _, tc := range []struct {
		name  string
		call  func(j *drover.Job, token string) (*drover.Job, error)
		state drover.JobState
	}{
		{"Complete", func(j *drover.Job, token string) (*drover.Job, error) { return nil, j.Complete(ctx, token, "ok") }, drover.StateCompleted},
		{"Fail", func(j *drover.Job, token string) (*drover.Job, error) {
			return nil, j.Fail(ctx, token, drover.Unrecoverable(errors.New("boom")))
		}, drover.StateFailed},
		{"MoveToDelayed", func(j *drover.Job, token string) (*drover.Job, error) {
			return nil, j.MoveToDelayed(ctx, token, time.Now().Add(time.Hour))
		}, drover.StateDelayed},
		{"CompleteAndNext", func(j *drover.Job, token string) (*drover.Job, error) { return j.CompleteAndNext(ctx, token, "ok") },
			drover.StateCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = proxy.Close() })
			rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr})
			t.Cleanup(func() { _ = rdb.Close() })
			direct, prefix := redistest.Client(t)
			dq, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
			require.NoError(t, err)
			w, err := drover.NewWorker(rdb, "q", nil, &drover.WorkerOptions{Prefix: prefix, LockDuration: time.Minute})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() { _ = w.Close(ctx) })
			require.NoError(t, direct.ScriptLoad(ctx, finish).Err())
			first, err := dq.Add(ctx, "first", nil, nil)
			require.NoError(t, err)
			next, err := dq.Add(ctx, "next", nil, nil)
			require.NoError(t, err)
			job, err := w.NextJob(ctx, "tok", 0)
			require.NoError(t, err)
			require.Equal(t, first.Job.ID, job.ID)

			proxy.DropReplyTo(fmt.Sprintf("%x", sha1.Sum([]byte(finish))))
			taken, err := tc.call(job, "tok")
			require.Equal(t, int64(1), proxy.Dropped(), "the write's reply was lost")
			require.NoError(t, err)
			st, err := dq.GetJobState(ctx, first.Job.ID)
			require.NoError(t, err)
			require.Equal(t, tc.state, st)
			if tc.name == "CompleteAndNext" {
				require.NotNil(t, taken, "the job the lost call took is handed out")
				require.Equal(t, next.Job.ID, taken.ID)
				require.NoError(t, taken.Complete(ctx, "tok", "ok"))
			} else if taken != nil {
				t.Fatalf("%s took a job", tc.name)
			}
			require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val(), "nothing stranded in active")
		})
	}
}
