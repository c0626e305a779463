package drover_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"sync"
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
	proxy, w, dq, direct, prefix := manualOverProxy(t, redis.Options{})
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
			proxy, w, dq, direct, prefix := manualOverProxy(t, redis.Options{})
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

// TestManualWorkerUnderConnectionResets: four callers take and complete
// jobs with NextJob and CompleteAndNext, each under a token of its own,
// through a proxy that resets every connection every 50 ms, so replies
// of takes, completions and their settlements are lost mid-call. Every job
// is handed out once and completes once (one completed event), and nothing
// is left active.
func TestManualWorkerUnderConnectionResets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, w, dq, direct, prefix := manualOverProxy(t, redis.Options{DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
	const total = 600
	_, err := dq.AddBulk(ctx, numberedJobs("x", total))
	require.NoError(t, err)

	var mu sync.Mutex
	handed := map[string]int{}
	var errs []string
	done := make(chan struct{})
	var callers sync.WaitGroup
	for c := range 4 {
		token := fmt.Sprintf("caller-%d", c)
		callers.Go(func() {
			var job *drover.Job
			for {
				select {
				case <-done:
					return
				default:
				}
				var err error
				if job == nil {
					job, err = w.NextJob(ctx, token, 100*time.Millisecond)
				} else {
					time.Sleep(5 * time.Millisecond) // the work
					job, err = job.CompleteAndNext(ctx, token, "ok")
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					job = nil
					continue
				}
				if job != nil {
					mu.Lock()
					handed[job.ID]++
					mu.Unlock()
				}
			}
		})
	}
	stopResets := make(chan struct{})
	var resets sync.WaitGroup
	resets.Go(func() {
		for {
			select {
			case <-stopResets:
				return
			case <-time.After(50 * time.Millisecond):
				proxy.ResetAll()
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for direct.ZCard(ctx, prefix+":q:completed").Val() != total {
		if time.Now().After(deadline) {
			mu.Lock()
			var locks []string
			for _, id := range direct.LRange(ctx, prefix+":q:active", 0, -1).Val() {
				locks = append(locks, id+"="+direct.Get(ctx, prefix+":q:"+id+":lock").Val()+"/handed "+fmt.Sprint(handed[id]))
			}
			c, _ := dq.GetJobCounts(ctx)
			t.Fatalf("not every job completed: counts %v; active (lock/handed out) %v; %d handed out; errors %v", c, locks, len(handed), errs[:min(len(errs), 10)])
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stopResets)
	resets.Wait()
	close(done)
	callers.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handed, total, "every job handed out")
	for id, n := range handed {
		require.Equal(t, 1, n, "job %s handed out once", id)
	}
	require.Empty(t, direct.LRange(ctx, prefix+":q:active", 0, -1).Val())
	completions := map[string]int{}
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" {
			completions[fmt.Sprint(m.Values["jobId"])]++
		}
	}
	require.Len(t, completions, total)
	for id, n := range completions {
		require.Equal(t, 1, n, "job %s completed once", id)
	}
	t.Logf("%d resets, %d call errors: %v", proxy.Resets(), len(errs), errs[:min(len(errs), 5)])
}

// manualOverProxy starts a manual worker (no processor, LockDuration a
// minute) on queue "q" whose client, made with copt, reaches the shared
// Redis through a fault proxy, and returns it with the proxy, the same
// queue on a direct client (to set the scene and read the state), that
// client and the queue's prefix.
func manualOverProxy(t *testing.T, copt redis.Options) (*faultproxy.Proxy, *drover.Worker, *drover.Queue, *redis.Client, string) {
	t.Helper()
	ctx := context.Background()
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	copt.Addr = proxy.Addr
	rdb := redis.NewClient(&copt)
	t.Cleanup(func() { _ = rdb.Close() })
	direct, prefix := redistest.Client(t)
	dq, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", nil, &drover.WorkerOptions{Prefix: prefix, LockDuration: time.Minute})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })
	return proxy, w, dq, direct, prefix
}
