//go:build cluster

package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestClusterInterop runs the interop and retry-lifecycle scenarios on the
// Redis Cluster with Node BullMQ 6.7.0 (ioredis Cluster client) as the peer,
// in both directions: Node adds and drover works, drover adds and Node works.
func TestClusterInterop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	c, rdb := clusterClient(t)
	oracle := bullmqoracle.StartWithOptions(t, c.Nodes[0].Addr, &bullmqoracle.Options{Cluster: true})

	type testBundle struct {
		rdb    *redis.ClusterClient
		prefix string
		name   string
		queue  *drover.Queue
	}

	// setup gives each subtest its own queue. Half the subtests put the hash
	// tag in the prefix ("{p}" + "q"), half in the queue name ("p" + "q{t}"),
	// the two conventions BullMQ documents.
	setup := func(t *testing.T, tagInPrefix bool) *testBundle {
		t.Helper()
		prefix := testPrefix(t, rdb, tagInPrefix)
		name := "q"
		if !tagInPrefix {
			name = "q{" + prefix + "}"
		}
		return &testBundle{rdb: rdb, prefix: prefix, name: name, queue: newQueue(t, rdb, prefix, name)}
	}

	// slotOf reports which slot and master the bundle's queue lives on, for
	// the logs.
	where := func(t *testing.T, b *testBundle) {
		t.Helper()
		slot := keys.Slot(b.prefix + ":" + b.name + ":wait")
		m, err := c.MasterOf(ctx, slot)
		require.NoError(t, err)
		t.Logf("queue %s:%s on slot %d, master %s", b.prefix, b.name, slot, m)
	}

	t.Run("AddProcessComplete", func(t *testing.T) {
		t.Parallel()

		t.Run("DroverAddsNodeWorks", func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			where(t, b)
			jobs := make([]drover.BulkJob, 20)
			for i := range jobs {
				jobs[i] = drover.BulkJob{Name: "echo", Data: map[string]int{"n": i}}
			}
			res, err := b.queue.AddBulk(ctx, jobs)
			require.NoError(t, err)
			require.NoError(t, oracle.StartWorker(ctx, b.prefix, b.name, bullmqoracle.WorkerOptions{ID: t.Name(), Concurrency: 5, Behavior: bullmqoracle.Echo()}))
			t.Cleanup(func() { _ = oracle.StopWorker(context.Background(), t.Name(), true) })
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateCompleted: 20, drover.StateWaiting: 0, drover.StateActive: 0})
			for i, r := range res {
				j, err := b.queue.GetJob(ctx, r.Job.ID)
				require.NoError(t, err)
				require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), string(j.ReturnValue))
				require.Equal(t, 1, j.AttemptsMade)
				nj, err := oracle.GetJob(ctx, b.prefix, b.name, r.Job.ID)
				require.NoError(t, err)
				require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), string(nj.ReturnValue))
			}
		})

		t.Run("NodeAddsDroverWorks", func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			where(t, b)
			jobs := make([]bullmqoracle.BulkJob, 20)
			for i := range jobs {
				jobs[i] = bullmqoracle.BulkJob{Name: "double", Data: map[string]int{"n": i}}
			}
			ids, err := oracle.AddBulk(ctx, b.prefix, b.name, jobs)
			require.NoError(t, err)
			startWorker(t, b.rdb, b.prefix, b.name, func(ctx context.Context, job *drover.Job) (any, error) {
				var d struct{ N int }
				if err := job.DecodeData(&d); err != nil {
					return nil, err
				}
				return d.N * 2, nil
			}, &drover.WorkerOptions{Concurrency: 5})
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateCompleted: 20, drover.StateWaiting: 0, drover.StateActive: 0})
			for i, id := range ids {
				state, err := oracle.GetState(ctx, b.prefix, b.name, id)
				require.NoError(t, err)
				require.Equal(t, "completed", state)
				nj, err := oracle.GetJob(ctx, b.prefix, b.name, id)
				require.NoError(t, err)
				require.JSONEq(t, fmt.Sprint(i*2), string(nj.ReturnValue))
				require.EqualValues(t, 1, nj.AttemptsMade)
			}
			counts, err := oracle.GetJobCounts(ctx, b.prefix, b.name)
			require.NoError(t, err)
			require.EqualValues(t, 20, counts["completed"])
		})
	})

	t.Run("DelayedRetry", func(t *testing.T) {
		t.Parallel()

		t.Run("DroverAddsNodeRetries", func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			res, err := b.queue.Add(ctx, "flaky", nil, &drover.JobOptions{Attempts: 3,
				Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 150 * time.Millisecond}})
			require.NoError(t, err)
			require.NoError(t, oracle.StartWorker(ctx, b.prefix, b.name, bullmqoracle.WorkerOptions{ID: t.Name(),
				Behavior: bullmqoracle.FailTimes(2, "not yet", "finally")}))
			t.Cleanup(func() { _ = oracle.StopWorker(context.Background(), t.Name(), true) })
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateCompleted: 1})
			j, err := b.queue.GetJob(ctx, res.Job.ID)
			require.NoError(t, err)
			require.Equal(t, 3, j.AttemptsMade)
			require.Equal(t, 3, j.AttemptsStarted)
			require.Equal(t, `"finally"`, string(j.ReturnValue))
			require.Len(t, j.Stacktrace, 2)
			require.GreaterOrEqual(t, j.FinishedOn.Sub(j.Timestamp), 300*time.Millisecond, "two fixed 150ms backoffs")
			evs := countEvents(readEvents(t, b.rdb, b.prefix, b.name))
			require.Equal(t, 2, evs["delayed"])
			require.Equal(t, 1, evs["completed"])
		})

		t.Run("NodeAddsDroverRetries", func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			id, err := oracle.Add(ctx, b.prefix, b.name, "flaky", map[string]any{},
				map[string]any{"attempts": 3, "backoff": map[string]any{"type": "exponential", "delay": 100}})
			require.NoError(t, err)
			startWorker(t, b.rdb, b.prefix, b.name, func(ctx context.Context, job *drover.Job) (any, error) {
				if job.AttemptsMade < 2 {
					return nil, errors.New("not yet")
				}
				return "finally", nil
			}, nil)
			// Node's QueueEvents (a blocking XREAD on the cluster) sees it finish.
			fin, err := oracle.WaitUntilFinished(ctx, b.prefix, b.name, id, 20*time.Second)
			require.NoError(t, err)
			require.Equal(t, "completed", fin.State)
			require.JSONEq(t, `"finally"`, string(fin.ReturnValue))
			nj, err := oracle.GetJob(ctx, b.prefix, b.name, id)
			require.NoError(t, err)
			require.EqualValues(t, 3, nj.AttemptsMade)
			require.EqualValues(t, 3, nj.AttemptsStarted)
			require.Len(t, nj.Stacktrace, 2)
			require.GreaterOrEqual(t, *nj.FinishedOn-nj.Timestamp, int64(100+200), "exponential backoff: 100ms then 200ms")
			require.Equal(t, 2, countEvents(readEvents(t, b.rdb, b.prefix, b.name))["delayed"])
		})
	})

	t.Run("StalledRecovery", func(t *testing.T) {
		t.Parallel()

		t.Run("NodeWorkerKilledDroverRecovers", func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			id, err := oracle.Add(ctx, b.prefix, b.name, "x", map[string]any{}, map[string]any{"attempts": 1})
			require.NoError(t, err)
			nw := bullmqoracle.StartWorkerProcess(t, c.Nodes[1].Addr, b.prefix, b.name, bullmqoracle.WorkerOptions{
				// Its stalled checker claims the queue's stalled-check key for
				// StalledInterval: keep it short so drover's can run soon after.
				Cluster: true, LockDuration: time.Second, StalledInterval: 300 * time.Millisecond,
				Behavior: bullmqoracle.Sleep(time.Hour, nil)})
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			_, err = nw.WaitFor(wctx, func(e bullmqoracle.WorkerEvent) bool { return e.Event == "active" && e.JobID == id })
			require.NoError(t, err)
			require.NoError(t, nw.Kill())

			var stalled []string
			stalledCh := make(chan string, 1)
			startWorker(t, b.rdb, b.prefix, b.name, func(ctx context.Context, job *drover.Job) (any, error) { return "recovered", nil },
				&drover.WorkerOptions{StalledInterval: 300 * time.Millisecond, LockDuration: time.Second,
					Hooks: &drover.WorkerHooks{Stalled: func(id string, n int) { stalledCh <- id }}})
			select {
			case s := <-stalledCh:
				stalled = append(stalled, s)
			case <-time.After(20 * time.Second):
				t.Fatal("drover's stalled checker did not recover the killed Node worker's job")
			}
			require.Equal(t, []string{id}, stalled)
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateCompleted: 1})
			nj, err := oracle.GetJob(ctx, b.prefix, b.name, id)
			require.NoError(t, err)
			require.EqualValues(t, 1, nj.StalledCounter)
			require.EqualValues(t, 2, nj.AttemptsStarted)
			require.EqualValues(t, 1, nj.AttemptsMade, "a stall does not spend an attempt")
			require.JSONEq(t, `"recovered"`, string(nj.ReturnValue))
			require.Equal(t, 1, countEvents(readEvents(t, b.rdb, b.prefix, b.name))["stalled"])
		})

		t.Run("DroverWorkerKilledNodeRecovers", func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			res, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{Attempts: 1})
			require.NoError(t, err)
			ch := startChild(t, roleHang, childSpec{Seeds: c.Addrs(), Prefix: b.prefix, Queues: []string{b.name}, LockDuration: time.Second})
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			started, err := ch.wait(wctx, "started")
			require.NoError(t, err)
			require.Equal(t, res.Job.ID, started.JobID)
			ch.kill()
			state, err := b.queue.GetJobState(ctx, res.Job.ID)
			require.NoError(t, err)
			require.Equal(t, drover.StateActive, state, "a killed worker leaves its job active")

			require.NoError(t, oracle.StartWorker(ctx, b.prefix, b.name, bullmqoracle.WorkerOptions{ID: t.Name(),
				StalledInterval: 300 * time.Millisecond, Behavior: bullmqoracle.Return("recovered")}))
			t.Cleanup(func() { _ = oracle.StopWorker(context.Background(), t.Name(), true) })
			evs, err := oracle.WaitWorkerEvents(ctx, t.Name(), 1, 20*time.Second, "completed")
			require.NoError(t, err)
			require.Equal(t, res.Job.ID, evs[0].JobID)
			stalledEvs, err := oracle.WaitWorkerEvents(ctx, t.Name(), 1, time.Second, "stalled")
			require.NoError(t, err)
			require.Equal(t, res.Job.ID, stalledEvs[0].JobID)
			j, err := b.queue.GetJob(ctx, res.Job.ID)
			require.NoError(t, err)
			require.Equal(t, 1, j.StalledCount)
			require.Equal(t, 2, j.AttemptsStarted)
			require.Equal(t, 1, j.AttemptsMade)
			require.Equal(t, `"recovered"`, string(j.ReturnValue))
		})
	})

	t.Run("BulkRetry", func(t *testing.T) {
		t.Parallel()
		const n = 30

		t.Run("DroverFailsNodeRetriesDroverCompletes", func(t *testing.T) {
			t.Parallel()
			b := setup(t, true)
			jobs := make([]drover.BulkJob, n)
			for i := range jobs {
				jobs[i] = drover.BulkJob{Name: "once-broken", Opts: &drover.JobOptions{Attempts: 1}}
			}
			_, err := b.queue.AddBulk(ctx, jobs)
			require.NoError(t, err)
			startWorker(t, b.rdb, b.prefix, b.name, func(ctx context.Context, job *drover.Job) (any, error) {
				if job.AttemptsMade == 0 {
					return nil, errors.New("first attempt fails")
				}
				return "ok", nil
			}, &drover.WorkerOptions{Concurrency: 5})
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateFailed: n})
			require.NoError(t, oracle.RetryJobs(ctx, b.prefix, b.name, bullmqoracle.RetryJobsOptions{State: "failed", Count: 7}))
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateCompleted: n, drover.StateFailed: 0})
			ids, err := b.queue.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
			require.NoError(t, err)
			for _, id := range ids {
				j, err := b.queue.GetJob(ctx, id)
				require.NoError(t, err)
				require.Equal(t, 2, j.AttemptsMade)
				require.Equal(t, `"ok"`, string(j.ReturnValue))
			}
		})

		t.Run("NodeFailsDroverRetriesNodeCompletes", func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			jobs := make([]bullmqoracle.BulkJob, n)
			for i := range jobs {
				jobs[i] = bullmqoracle.BulkJob{Name: "once-broken", Data: map[string]any{}, Opts: map[string]any{"attempts": 1}}
			}
			_, err := oracle.AddBulk(ctx, b.prefix, b.name, jobs)
			require.NoError(t, err)
			require.NoError(t, oracle.StartWorker(ctx, b.prefix, b.name, bullmqoracle.WorkerOptions{ID: t.Name(), Concurrency: 5,
				Behavior: bullmqoracle.FailTimes(1, "first attempt fails", "ok")}))
			t.Cleanup(func() { _ = oracle.StopWorker(context.Background(), t.Name(), true) })
			waitCounts(t, b.queue, 20*time.Second, map[drover.JobState]int64{drover.StateFailed: n})
			var progress []int
			moved, err := b.queue.RetryJobs(ctx, &drover.RetryJobsOptions{Count: 7, Progress: func(m int) { progress = append(progress, m) }})
			require.NoError(t, err)
			require.Equal(t, n, moved)
			require.Equal(t, []int{7, 14, 21, 28, 30}, progress)
			evs, err := oracle.WaitWorkerEvents(ctx, t.Name(), n, 20*time.Second, "completed")
			require.NoError(t, err)
			require.Len(t, evs, n)
			counts, err := oracle.GetJobCounts(ctx, b.prefix, b.name)
			require.NoError(t, err)
			require.EqualValues(t, n, counts["completed"])
			require.EqualValues(t, 0, counts["failed"])
			for _, e := range evs {
				nj, err := oracle.GetJob(ctx, b.prefix, b.name, e.JobID)
				require.NoError(t, err)
				require.EqualValues(t, 2, nj.AttemptsMade)
				require.JSONEq(t, `"ok"`, string(nj.ReturnValue))
			}
		})
	})
}
