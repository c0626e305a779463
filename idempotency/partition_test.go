package idempotency_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestPartitionedWorkerEffectOnce: worker A (concurrency 2) commits a job's
// effect through the ledger, then loses Redis (a black hole) for longer
// than the job's lock lasts. Worker B's stalled checker moves the job back
// and B runs it: the ledger answers AlreadyCompleted, so the effect is not
// written again, and B completes the job. Then the network heals and A's
// processor returns: A's late completion must be refused (the job stays
// completed by B, one completed event, no failure), nothing is left active,
// the effect is written once, and A goes on taking jobs without a restart.
func TestPartitionedWorkerEffectOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupPostgres(t)
	direct, prefix := redistest.Client(t)
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	viaProxy := redis.NewClient(&redis.Options{Addr: proxy.Addr, ReadTimeout: 300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = viaProxy.Close() })
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	var (
		mu       sync.Mutex
		statuses = map[string][]idempotency.Status{} // per worker
		finished = map[string][]string{}             // per worker: "<job> <outcome>"
	)
	effectDone := make(chan struct{}, 1)
	release := make(chan struct{})
	proc := func(who string) drover.ProcessorFunc {
		return func(ctx context.Context, job *drover.Job) (any, error) {
			res, err := b.ledger.Do(ctx, idempotency.OpKey("effect", job.ID), func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
				return []byte(who), b.writeEffect(ctx, tx, job.ID)
			})
			if err != nil {
				return nil, err
			}
			mu.Lock()
			statuses[who] = append(statuses[who], res.Status)
			mu.Unlock()
			if who == "A" && job.ID == "j" {
				effectDone <- struct{}{}
				<-release // partitioned here, past the lock
			}
			return fmt.Sprintf("%s:%s", who, res.Status), nil
		}
	}
	hooks := func(who string) *drover.WorkerHooks {
		return &drover.WorkerHooks{JobFinished: func(job *drover.Job, o drover.Outcome, _ time.Duration, _ error) {
			mu.Lock()
			finished[who] = append(finished[who], job.ID+" "+o.String())
			mu.Unlock()
		}}
	}
	start := func(rdb redis.UniversalClient, who string) *drover.Worker {
		w, err := drover.NewWorker(rdb, "q", proc(who), &drover.WorkerOptions{Prefix: prefix, Concurrency: 2,
			LockDuration: time.Second, StalledInterval: 300 * time.Millisecond, DrainDelay: 100 * time.Millisecond,
			Hooks: hooks(who)})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		})
		return w
	}

	_, err = q.Add(ctx, "work", nil, &drover.JobOptions{JobID: "j"})
	require.NoError(t, err)
	a := start(viaProxy, "A")
	select {
	case <-effectDone:
	case <-time.After(10 * time.Second):
		t.Fatal("worker A did not commit the effect")
	}
	proxy.SetBlackhole(true)
	bw := start(direct, "B")
	testkit.WaitFor(t, 20*time.Second, "B to complete the job A lost", func() bool {
		s, err := q.GetJobState(ctx, "j")
		require.NoError(t, err)
		return s == drover.StateCompleted
	})
	require.NoError(t, bw.Close(ctx))
	proxy.SetBlackhole(false)
	close(release)

	// A recovers by itself: it takes and completes a new job.
	_, err = q.Add(ctx, "work", nil, &drover.JobOptions{JobID: "after"})
	require.NoError(t, err)
	testkit.WaitFor(t, 20*time.Second, "A to complete a job after the partition", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range finished["A"] {
			if f == "after "+drover.OutcomeCompleted.String() {
				return true
			}
		}
		return false
	})

	rows, distinct := b.effects(t)
	require.Equal(t, 2, rows, "one effect per job")
	require.Equal(t, 2, distinct)
	job, err := q.GetJob(ctx, "j")
	require.NoError(t, err)
	require.JSONEq(t, `"B:already_completed"`, string(job.ReturnValue), "B's completion stands")
	events, err := direct.XRange(ctx, prefix+":q:events", "-", "+").Result()
	require.NoError(t, err)
	counts := map[string]int{}
	for _, e := range events {
		if e.Values["jobId"] == "j" {
			counts[fmt.Sprint(e.Values["event"])]++
		}
	}
	require.Equal(t, 1, counts["completed"], "one completion: %v", counts)
	require.Zero(t, counts["failed"], "%v", counts)
	mu.Lock()
	t.Logf("ledger statuses: %v; finished: %v", statuses, finished)
	for _, f := range finished["A"] {
		require.NotEqual(t, "j "+drover.OutcomeCompleted.String(), f, "A's late completion was refused")
	}
	mu.Unlock()
	active, err := q.GetJobCounts(ctx, drover.StateActive, drover.StateWaiting, drover.StateFailed)
	require.NoError(t, err)
	require.Equal(t, map[drover.JobState]int64{drover.StateActive: 0, drover.StateWaiting: 0, drover.StateFailed: 0}, active)
	require.NoError(t, a.Close(ctx))
	states, err := queuecheck.Read(ctx, direct, prefix, "q")
	require.NoError(t, err)
	violations, err := states.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, violations)
}
