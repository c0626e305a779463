//go:build cluster

package clustertest_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// failoverRun is the part the cluster and the sentinel failover tests share:
// workers on a few queues, jobs added before and during a failover, and the
// final accounting.
type failoverRun struct {
	t       *testing.T
	rdb     redis.UniversalClient
	prefix  string
	queues  []*drover.Queue
	logs    *logRecorder
	stalled atomic.Int64 // jobs moved back by drover's stalled checkers
	// finished counts completions the workers wrote, per queue.
	finished []atomic.Int64

	lateMu     sync.Mutex
	late       []int // jobs added during the failover, per queue
	lateErrors []string
}

const (
	failoverLock    = 2 * time.Second
	failoverStalled = time.Second
)

// startFailoverRun adds perQueue jobs to each queue, then starts one worker
// per queue with concurrency, a processor that takes work, 2s locks and
// stalled checks every second.
func startFailoverRun(t *testing.T, rdb redis.UniversalClient, prefix string, names []string, perQueue, concurrency int, work time.Duration) *failoverRun {
	t.Helper()
	ctx := context.Background()
	r := &failoverRun{t: t, rdb: rdb, prefix: prefix, logs: newLogRecorder(),
		finished: make([]atomic.Int64, len(names)), late: make([]int, len(names))}
	for _, name := range names {
		q := newQueue(t, rdb, prefix, name)
		jobs := make([]drover.BulkJob, perQueue)
		for i := range jobs {
			jobs[i] = drover.BulkJob{Name: "early", Data: map[string]int{"i": i}}
		}
		_, err := q.AddBulk(ctx, jobs)
		require.NoError(t, err)
		r.queues = append(r.queues, q)
	}
	for i, name := range names {
		startWorker(t, rdb, prefix, name, func(ctx context.Context, job *drover.Job) (any, error) {
			time.Sleep(work)
			return nil, nil
		}, &drover.WorkerOptions{
			Concurrency: concurrency, LockDuration: failoverLock, StalledInterval: failoverStalled,
			Logger: slog.New(r.logs),
			Hooks: &drover.WorkerHooks{
				JobFinished: func(job *drover.Job, outcome drover.Outcome, _ time.Duration, _ error) {
					if outcome == drover.OutcomeCompleted {
						r.finished[i].Add(1)
					}
				},
				Stalled: func(string, int) { r.stalled.Add(1) },
			},
		})
	}
	return r
}

// completed counts queue i's completed jobs in Redis.
func (r *failoverRun) completed(i int) int64 {
	n, err := r.queues[i].GetJobCounts(context.Background(), drover.StateCompleted)
	require.NoError(r.t, err)
	return n[drover.StateCompleted]
}

// addLate adds n jobs with ids late-0... to every queue, 100 per call, while
// the failover happens. A failed call is retried: custom ids make that safe
// (a job that did land comes back as a duplicate). It returns once all are in.
func (r *failoverRun) addLate(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for qi, q := range r.queues {
		wg.Go(func() {
			for from := 0; from < n; from += 100 {
				jobs := make([]drover.BulkJob, 0, 100)
				for i := from; i < min(from+100, n); i++ {
					jobs = append(jobs, drover.BulkJob{Name: "late", Opts: &drover.JobOptions{JobID: fmt.Sprintf("late-%d", i)}})
				}
				for {
					_, err := q.AddBulk(ctx, jobs)
					if err == nil {
						break
					}
					r.lateMu.Lock()
					r.lateErrors = append(r.lateErrors, err.Error())
					r.lateMu.Unlock()
					if ctx.Err() != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				r.lateMu.Lock()
				r.late[qi] += len(jobs)
				r.lateMu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// finish waits until every queue's jobs are all completed, with nothing left
// waiting, delayed or active (so none is stuck after the stalled interval),
// checks that every job ran to completion once in Redis, and reports what
// the failover cost.
func (r *failoverRun) finish(perQueue int, timeout time.Duration) {
	t := r.t
	t.Helper()
	ctx := context.Background()
	for i, q := range r.queues {
		r.lateMu.Lock()
		want := int64(perQueue + r.late[i])
		r.lateMu.Unlock()
		waitCounts(t, q, timeout, map[drover.JobState]int64{
			drover.StateCompleted: want, drover.StateActive: 0, drover.StateWaiting: 0,
			drover.StateDelayed: 0, drover.StatePrioritized: 0, drover.StateFailed: 0,
		})
	}

	// stc over every job: how many times jobs were recovered as stalled.
	var stc, jobs, reruns, written int64
	for i, q := range r.queues {
		ids, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
		require.NoError(t, err)
		k := keys.New(r.prefix, q.Name())
		cmds := make([]*redis.SliceCmd, len(ids))
		_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, id := range ids {
				cmds[j] = p.HMGet(ctx, k.Job(id), "stc", "ats")
			}
			return nil
		})
		require.NoError(t, err)
		for _, c := range cmds {
			v := c.Val()
			var s, a int64
			if v[0] != nil {
				_, _ = fmt.Sscan(v[0].(string), &s)
			}
			if v[1] != nil {
				_, _ = fmt.Sscan(v[1].(string), &a)
			}
			stc += s
			if a > 1 {
				reruns++
			}
		}
		jobs += int64(len(ids))
		written += r.finished[i].Load()
		t.Logf("queue %s: %d completed in Redis, %d completions written by workers", q.Name(), len(ids), r.finished[i].Load())
	}
	require.Empty(t, r.logs.matching("CROSSSLOT"))
	r.lateMu.Lock()
	lateErrs := r.lateErrors
	r.lateMu.Unlock()
	t.Logf("%d jobs completed; %d stall recoveries (sum of stc; %d by these workers' checkers); "+
		"%d jobs with ats > 1; %d completions written that Redis lost (the jobs ran again)",
		jobs, stc, r.stalled.Load(), reruns, written-jobs)
	t.Logf("producer errors during the failover (retried): %d %v", len(lateErrs), lateErrs[:min(len(lateErrs), 5)])
	t.Logf("worker warnings by message: %v", r.logs.byMessage())
	for _, s := range r.logs.sample(8) {
		t.Logf("  e.g. %s", s)
	}
}

// TestClusterFailover promotes a replica (CLUSTER FAILOVER) while drover
// workers process three queues, one per master, and a producer keeps adding.
// Every job must end completed; nothing may be left active.
func TestClusterFailover(t *testing.T) {
	const perQueue, late = 10_000, 2_000
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	names, masters := spreadQueues(t, c, rdb, prefix, 3)
	r := startFailoverRun(t, rdb, prefix, names, perQueue, 50, time.Millisecond)

	// The victim is the master of queue 0; fail it over once processing is
	// well under way there.
	testkit.WaitFor(t, 60*time.Second, "processing to be under way", func() bool { return r.completed(0) >= perQueue/5 })
	lateDone := make(chan struct{})
	go func() { defer close(lateDone); r.addLate(ctx, late) }()
	before := r.completed(0)
	start := time.Now()
	newMaster, err := c.Failover(ctx, masters[0])
	require.NoError(t, err)
	t.Logf("CLUSTER FAILOVER: %s took over from %s in %s, with %d of queue 0's jobs completed before",
		newMaster, masters[0], time.Since(start).Round(time.Millisecond), before)
	<-lateDone
	slot := keys.Slot(keys.New(prefix, names[0]).Wait())
	now, err := c.MasterOf(ctx, slot)
	require.NoError(t, err)
	require.Equal(t, newMaster, now, "queue 0's slot moved to the promoted replica")

	r.finish(perQueue, 90*time.Second)
}

// TestClusterMasterKilled SIGKILLs the master of one of three busy queues,
// as a crash would. Workers get connection errors until the cluster elects
// the replica (after the node timeout); the writes the dead master had not
// replicated are lost, so jobs it had handed out are recovered as stalled or
// run again. Every job added before the crash (replicated) or after the
// election must end completed, nothing left active; the killed node then
// rejoins as a replica.
func TestClusterMasterKilled(t *testing.T) {
	const perQueue, late = 6_000, 1_000
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	names, masters := spreadQueues(t, c, rdb, prefix, 3)
	// Slow jobs (at most 1000/s per queue): the queues are busy for seconds.
	r := startFailoverRun(t, rdb, prefix, names, perQueue, 20, 20*time.Millisecond)
	require.NoError(t, c.WaitReplicated(ctx))

	testkit.WaitFor(t, 60*time.Second, "processing to be under way", func() bool { return r.completed(0) >= perQueue/5 })
	before := r.completed(0)
	start := time.Now()
	newMaster, killed, err := c.KillMaster(ctx, masters[0])
	require.NoError(t, err)
	elected := time.Now()
	// Watch queue 0 through a fresh client, which knows the new topology.
	obs := c.NewClient(nil)
	t.Cleanup(func() { _ = obs.Close() })
	obsQueue := newQueue(t, obs, prefix, names[0])
	counts, err := obsQueue.GetJobCounts(ctx, drover.StateCompleted)
	require.NoError(t, err)
	atElection := counts[drover.StateCompleted]
	t.Logf("killed master %s with %d of queue 0's jobs completed; %s elected in its place after %s with %d completed",
		masters[0], before, newMaster, elected.Sub(start).Round(time.Millisecond), atElection)
	// The workers' client still maps queue 0's slot to the dead node; it
	// must find the new master by itself, well before go-redis's periodic
	// reload (ClusterStateReloadInterval, 60s by default).
	testkit.WaitFor(t, 20*time.Second, "the workers to complete queue 0's jobs on the new master", func() bool {
		counts, err := obsQueue.GetJobCounts(ctx, drover.StateCompleted)
		return err == nil && counts[drover.StateCompleted] > atElection+100
	})
	t.Logf("workers completing queue 0's jobs again %s after the election", time.Since(elected).Round(time.Millisecond))
	// The producer carries on with the same client.
	r.addLate(ctx, late)
	require.NoError(t, c.Restart(ctx, killed))
	t.Logf("%s rejoined as a replica %s after the kill", killed.Addr, time.Since(start).Round(time.Millisecond))
	r.finish(perQueue, 90*time.Second)
}

// TestSentinelFailover runs drover workers through a go-redis failover
// client (redis.NewFailoverClient) while the sentinels fail the master over
// (SENTINEL FAILOVER). The workers and the producer must carry on through the
// same client, without a restart, and every job must end completed.
//
// Unlike CLUSTER FAILOVER, a sentinel failover does not stop writes on the
// old master: until the client hears +switch-master, what the workers write
// there is lost when it is demoted. Those jobs run again (at-least-once); the
// test reports how many.
func TestSentinelFailover(t *testing.T) {
	const perQueue, late = 8_000, 1_000
	ctx := context.Background()
	s := clustertest.SharedSentinel(t)
	rdb := s.NewFailoverClient(&redis.FailoverOptions{PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := clustertest.UniquePrefix()
	t.Cleanup(func() { redistest.DeletePrefix(context.Background(), rdb, prefix) })

	// Slow jobs (at most 1000/s per queue), so the queues are far from
	// drained when the failover happens.
	r := startFailoverRun(t, rdb, prefix, []string{"a", "b"}, perQueue, 20, 20*time.Millisecond)
	// The jobs added before the failover must survive it: wait until the
	// replica has them (replication is asynchronous).
	require.NoError(t, s.WaitReplicated(ctx))

	testkit.WaitFor(t, 60*time.Second, "processing to be under way", func() bool { return r.completed(0) >= perQueue/5 })
	old, err := s.MasterAddr(ctx)
	require.NoError(t, err)
	before := r.completed(0)
	start := time.Now()
	newMaster, err := s.Failover(ctx)
	require.NoError(t, err)
	promoted := time.Since(start)
	// The client switches when a sentinel publishes +switch-master.
	_, port, _ := strings.Cut(newMaster, ":")
	testkit.WaitFor(t, 30*time.Second, "the failover client to use the new master", func() bool {
		inf, err := rdb.Info(ctx, "server").Result()
		return err == nil && strings.Contains(inf, "tcp_port:"+port+"\r\n")
	})
	t.Logf("SENTINEL FAILOVER: %s promoted in place of %s after %s, client switched after %s; %d of queue a's jobs completed before",
		newMaster, old, promoted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), before)
	// The producer carries on with the same client.
	r.addLate(ctx, late)
	// Let the sentinels demote the old master before the final accounting.
	require.NoError(t, s.WaitSettled(ctx))
	r.finish(perQueue, 90*time.Second)
}

// TestSentinelFailoverAbortedIsAskedAgain: a forced failover whose
// promotion the sentinel does not see within failover-timeout (10 s) is
// aborted, and the sentinel never tries again by itself. On a loaded CI
// machine that left TestSentinelFailoverEventsScheduler waiting 60 s for a
// master that never changed; Failover now asks again. The replica is frozen
// for 12 s from the request on, so the first attempt must abort.
func TestSentinelFailoverAbortedIsAskedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := clustertest.StartSentinel(ctx)
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	require.NoError(t, s.WaitReplicated(ctx))
	old, err := s.MasterAddr(ctx)
	require.NoError(t, err)
	var replica *clustertest.Node
	for _, n := range s.Data {
		if n.Addr != old {
			replica = n
		}
	}
	require.NotNil(t, replica)
	thaw := replica.Freeze()
	t.Cleanup(thaw)
	time.AfterFunc(12*time.Second, thaw)

	newMaster, err := s.Failover(ctx)
	require.NoError(t, err)
	require.Equal(t, replica.Addr, newMaster)
	var aborts int
	for _, sn := range s.Sentinels {
		aborts += strings.Count(sn.Log(), "-failover-abort")
	}
	require.Positive(t, aborts, "the first failover was expected to abort")
	require.NoError(t, s.WaitSettled(ctx))
}

// TestClusterFailoverIdleWorker fails over the master of a queue whose worker
// is idle, blocked in BZPOPMIN on the queue's marker. Redis answers the
// blocked call with -MOVED; the worker must follow it to the new master and
// take a job added after the failover without a restart.
func TestClusterFailoverIdleWorker(t *testing.T) {
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	names, masters := spreadQueues(t, c, rdb, prefix, 3)
	// Queue 1's master: TestClusterFailover fails over queue 0's.
	name, master := names[1], masters[1]
	q := newQueue(t, rdb, prefix, name)
	logs := newLogRecorder()
	ran := make(chan string, 2)
	startWorker(t, rdb, prefix, name, func(ctx context.Context, job *drover.Job) (any, error) {
		ran <- job.ID
		return nil, nil
	}, &drover.WorkerOptions{DrainDelay: 30 * time.Second, Logger: slog.New(logs)})

	// A QueueEvents reader blocks in XREAD on the same master. It reads the
	// stream from its start: with the default "$" it would miss the first
	// job's completed event whenever the worker finished that job before
	// the reader's first XREAD (a CI run on a loaded machine did).
	qe, err := drover.NewQueueEvents(rdb, name, &drover.QueueEventsOptions{Prefix: prefix, BlockTimeout: 2 * time.Second, LastEventID: "0"})
	require.NoError(t, err)
	events := make(chan drover.Event, 100)
	runErr := make(chan error, 1)
	qctx, stopEvents := context.WithCancel(ctx)
	go func() {
		runErr <- qe.Run(qctx, func(e drover.Event) error { events <- e; return nil })
	}()
	t.Cleanup(func() {
		stopEvents()
		require.NoError(t, <-runErr, "QueueEvents.Run returns nil when its ctx ends")
	})
	completedEvent := func(id string) {
		t.Helper()
		for {
			select {
			case e := <-events:
				if e.Name == drover.EventCompleted && e.JobID == id {
					return
				}
			case err := <-runErr:
				runErr <- err
				t.Fatalf("QueueEvents.Run ended before job %s completed: %v", id, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("no completed event for job %s", id)
			}
		}
	}

	first, err := q.Add(ctx, "before", nil, nil)
	require.NoError(t, err)
	require.Equal(t, first.Job.ID, <-ran)
	completedEvent(first.Job.ID)
	// The worker is now blocked on the marker for up to DrainDelay (30s).
	node := c.Node(master)
	require.NotNil(t, node)
	mrdb := node.Client()
	t.Cleanup(func() { _ = mrdb.Close() })
	testkit.WaitFor(t, 10*time.Second, "the worker to block in BZPOPMIN on "+master, func() bool {
		list, err := mrdb.ClientList(ctx).Result()
		require.NoError(t, err)
		return strings.Contains(list, "cmd=bzpopmin") && strings.Contains(list, "cmd=xread")
	})

	newMaster, err := c.Failover(ctx, master)
	require.NoError(t, err)
	start := time.Now()
	second, err := q.Add(ctx, "after", nil, nil)
	require.NoError(t, err)
	select {
	case id := <-ran:
		require.Equal(t, second.Job.ID, id)
	case <-time.After(20 * time.Second):
		t.Fatalf("the idle worker did not take a job added after the failover to %s; its warnings: %v", newMaster, logs.sample(5))
	}
	t.Logf("job added after the failover (%s -> %s) ran after %s; worker warnings: %v",
		master, newMaster, time.Since(start).Round(time.Millisecond), logs.sample(5))
	completedEvent(second.Job.ID)
	require.Empty(t, logs.matching("wait for jobs failed"), "a block ended by a failover is not a failure")
	waitCounts(t, q, 10*time.Second, map[drover.JobState]int64{drover.StateCompleted: 2, drover.StateActive: 0})
}

// TestSentinelFailoverIdleWorker: a worker on a Sentinel-managed master is
// idle, blocked in BZPOPMIN on the queue's marker, when the master fails
// over. It must follow the client to the new master and take a job added
// after the failover, without a restart and without reporting the end of
// its block as a failure. Before, it stayed blocked on the demoted master
// until the sentinels reconfigured it (their 10 s INFO period): the job ran
// 10.1 s after the failover; now within about a second (the presence
// connection's master check), well inside the 8 s allowed here.
func TestSentinelFailoverIdleWorker(t *testing.T) {
	ctx := context.Background()
	s := clustertest.SharedSentinel(t)
	rdb := s.NewFailoverClient(&redis.FailoverOptions{})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := clustertest.UniquePrefix()
	t.Cleanup(func() { redistest.DeletePrefix(context.Background(), rdb, prefix) })
	q := newQueue(t, rdb, prefix, "idle")
	logs := newLogRecorder()
	ran := make(chan string, 2)
	startWorker(t, rdb, prefix, "idle", func(ctx context.Context, job *drover.Job) (any, error) {
		ran <- job.ID
		return nil, nil
	}, &drover.WorkerOptions{DrainDelay: 30 * time.Second, Logger: slog.New(logs)})

	first, err := q.Add(ctx, "before", nil, nil)
	require.NoError(t, err)
	require.Equal(t, first.Job.ID, <-ran)
	old, err := s.MasterAddr(ctx)
	require.NoError(t, err)
	orig := redis.NewClient(&redis.Options{Addr: old})
	t.Cleanup(func() { _ = orig.Close() })
	testkit.WaitFor(t, 10*time.Second, "the worker to block in BZPOPMIN on "+old, func() bool {
		list, err := orig.ClientList(ctx).Result()
		require.NoError(t, err)
		return strings.Contains(list, "cmd=bzpopmin")
	})

	newMaster, err := s.Failover(ctx)
	require.NoError(t, err)
	start := time.Now()
	_, port, _ := strings.Cut(newMaster, ":")
	testkit.WaitFor(t, 30*time.Second, "the failover client to use the new master", func() bool {
		inf, err := rdb.Info(ctx, "server").Result()
		return err == nil && strings.Contains(inf, "tcp_port:"+port+"\r\n")
	})
	switched := time.Since(start)
	second, err := q.Add(ctx, "after", nil, nil)
	require.NoError(t, err)
	select {
	case id := <-ran:
		require.Equal(t, second.Job.ID, id)
	case <-time.After(8 * time.Second):
		t.Fatalf("the idle worker did not take a job added after the failover to %s within 8 s (it waited on the demoted master); its warnings: %v", newMaster, logs.sample(5))
	}
	t.Logf("SENTINEL IDLE WORKER: %s -> %s, client switched after %s, job added then ran after %s; worker warnings: %v",
		old, newMaster, switched.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), logs.sample(5))
	require.NoError(t, s.WaitSettled(ctx))
	waitCounts(t, q, 10*time.Second, map[drover.JobState]int64{drover.StateCompleted: 2, drover.StateActive: 0})
}
