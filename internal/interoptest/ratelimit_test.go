package interoptest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestDifferentialRateLimitError runs the manual rate limit pattern
// (worker.rateLimit + Worker.RateLimitError in Node, Worker.RateLimit +
// ErrRateLimited in drover) once all-Node and once all-drover and requires
// the same Redis state and events: the job goes back (to the tail of wait
// that is read first, or to the front of its priority band) without an
// attempt spent, its lock gone, a waiting event, and the limiter key set as
// full with an expiry.
func TestDifferentialRateLimitError(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)

	tests := []struct {
		name   string
		paused bool
		jobs   []jobSpec
		events []string
	}{
		{
			name: "Waiting",
			jobs: []jobSpec{{attempts: 2}, {attempts: 2}},
			events: []string{"added 1", "waiting 1", "added 2", "waiting 2",
				"active 1 prev=waiting", "waiting 1 prev=active"},
		},
		{
			name: "Paused",
			jobs: []jobSpec{{attempts: 2}, {attempts: 2}}, paused: true,
			events: []string{"added 1", "waiting 1", "added 2", "waiting 2",
				"active 1 prev=waiting", "paused", "waiting 1 prev=active"},
		},
		{
			name: "Prioritized",
			jobs: []jobSpec{{attempts: 2, priority: 3}, {attempts: 2, priority: 3}, {attempts: 2, priority: 5}},
			events: []string{"added 1", "waiting 1", "added 2", "waiting 2", "added 3", "waiting 3",
				"active 1 prev=waiting", "waiting 1 prev=active"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nb := setup(t)
			db := nb.sibling(t)
			run := func(b *bundle, by impl) []string {
				ctx := context.Background()
				gate := "gate:" + b.prefix
				t.Cleanup(func() { b.rdb.Del(context.Background(), gate) })
				for i, s := range tt.jobs {
					s.name, s.data = tt.name, map[string]any{"i": i}
					b.add(t, by, s)
				}
				// The limit outlasts the test: the worker must not fetch again.
				stop := b.startWorker(t, by, workerSpec{concurrency: 1,
					behavior: bullmqoracle.WaitKey(gate, bullmqoracle.RateLimited(20*time.Second, 1, nil))})
				b.waitEvents(t, 1, func(e drover.Event) bool { return e.Name == drover.EventActive })
				if tt.paused {
					b.pause(t, by)
				}
				require.NoError(t, b.rdb.Set(ctx, gate, "1", 0).Err())
				evs := b.waitEvents(t, 1, func(e drover.Event) bool {
					return e.Name == drover.EventWaiting && e.Prev == "active"
				})
				// Long enough for a worker that wrongly fetches to show it.
				time.Sleep(300 * time.Millisecond)
				stop()
				ttl, err := b.rdb.PTTL(ctx, b.prefix+":"+queueName+":limiter").Result()
				require.NoError(t, err)
				require.Greater(t, ttl, 10*time.Second, "%s: the limiter key expires after the processor's duration", by)
				return eventLines(evs)
			}
			nodeEvents := run(nb, nodeImpl)
			droverEvents := run(db, droverImpl)
			require.Equal(t, tt.events, nodeEvents, "Node BullMQ events (the reference)")
			require.Equal(t, nodeEvents, droverEvents, "drover events vs Node BullMQ's")
			requireSameState(t,
				comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true}),
				comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true}))
		})
	}
}

// TestInteropRateLimitHonoured: a limit one side sets holds back the other
// side's worker until the limiter key expires when that worker applies a
// limit (here the queue's global one), and a worker without any limit
// ignores the key on both sides, as BullMQ's moveToActive does.
func TestInteropRateLimitHonoured(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	const limit = 1500 * time.Millisecond
	for _, setter := range []impl{nodeImpl, droverImpl} {
		for _, limited := range []bool{true, false} {
			name := string(setter) + "Sets"
			if !limited {
				name += "UnlimitedWorkerIgnores"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				b := setup(t)
				if limited {
					require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 100, time.Second))
				}
				if setter == nodeImpl {
					require.NoError(t, b.oracle.RateLimit(ctx, b.prefix, queueName, limit))
				} else {
					require.NoError(t, b.dq.RateLimit(ctx, limit))
				}
				set := time.Now()
				id := b.add(t, setter, jobSpec{name: "x", data: map[string]any{}})
				stop := b.startWorker(t, setter.other(), workerSpec{})
				b.waitFinal(t, id, 1)
				stop()
				job, err := b.dq.GetJob(ctx, id)
				require.NoError(t, err)
				waited := job.ProcessedOn.Sub(set)
				if limited {
					require.GreaterOrEqual(t, waited, limit-100*time.Millisecond,
						"a %s worker with a limit started the job before the limit %s set ended", setter.other(), setter)
				} else {
					require.Less(t, waited, limit-100*time.Millisecond,
						"a %s worker without a limit waited for the limiter key", setter.other())
				}
			})
		}
	}
}

// TestInteropRateLimitErrorHoldsOtherWorkers: a drover processor's
// Worker.RateLimit + ErrRateLimited holds back a Node worker of the queue
// (with a limit) until the key expires, and the job runs again there.
func TestInteropRateLimitErrorHoldsOtherWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newSetup(t)(t)
	require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 100, time.Second))
	const limit = 1500 * time.Millisecond
	id := b.add(t, droverImpl, jobSpec{name: "x", data: map[string]any{}, attempts: 1})
	var limitedAt atomic.Int64 // unix ms
	stopD := b.startWorker(t, droverImpl, workerSpec{drover: func(ctx context.Context, job *drover.Job) (any, error) {
		if err := job.Queue().RateLimit(ctx, limit); err != nil {
			return nil, err
		}
		limitedAt.Store(time.Now().UnixMilli())
		return nil, drover.ErrRateLimited
	}})
	b.waitEvents(t, 1, func(e drover.Event) bool { return e.Name == drover.EventWaiting && e.Prev == "active" })
	stopD()
	stopN := b.startWorker(t, nodeImpl, workerSpec{behavior: bullmqoracle.Return("ok")})
	b.waitFinal(t, id, 1)
	stopN()
	nj, err := b.oracle.GetJob(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.Equal(t, int64(1), nj.AttemptsMade, "the rate-limited start spent no attempt")
	job, err := b.dq.GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, drover.StateCompleted, mustState(t, job))
	require.GreaterOrEqual(t, job.ProcessedOn.Sub(time.UnixMilli(limitedAt.Load())), limit-100*time.Millisecond, "the Node worker started the job before the limit ended")
}

func mustState(t *testing.T, job *drover.Job) drover.JobState {
	t.Helper()
	s, err := job.GetState(context.Background())
	require.NoError(t, err)
	return s
}

// TestInteropGetRateLimitTTL compares Queue.GetRateLimitTTL with Node's
// queue.getRateLimitTtl on the same keys, and RemoveRateLimitKey with
// removeRateLimitKey.
func TestInteropGetRateLimitTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newSetup(t)(t)
	limiter := b.prefix + ":" + queueName + ":limiter"
	intp := func(n int) *int { return &n }
	// compare asks both sides with maxJobs (nil: none) and requires the same
	// answer (a running PTTL may differ by a few ms between the calls).
	compare := func(what string, maxJobs *int, want func(ms int64) bool) {
		t.Helper()
		n, err := b.oracle.GetRateLimitTTL(ctx, b.prefix, queueName, maxJobs)
		require.NoError(t, err)
		d, err := b.dq.GetRateLimitTTL(ctx, func() int {
			if maxJobs == nil {
				return 0
			}
			return *maxJobs
		}())
		require.NoError(t, err)
		require.InDelta(t, n, d.Milliseconds(), 100, "%s: Node %d ms, drover %s", what, n, d)
		require.True(t, want(n), "%s: Node answered %d", what, n)
	}
	compare("no key", nil, func(ms int64) bool { return ms == -2 })
	compare("no key, maxJobs", intp(3), func(ms int64) bool { return ms == 0 })
	require.NoError(t, b.rdb.Set(ctx, limiter, 5, 0).Err())
	compare("no expiry", nil, func(ms int64) bool { return ms == -1 })
	require.NoError(t, b.rdb.Set(ctx, limiter, 5, 10*time.Second).Err())
	compare("count below maxJobs", intp(6), func(ms int64) bool { return ms == 0 })
	compare("count at maxJobs", intp(5), func(ms int64) bool { return ms > 9000 })
	compare("raw PTTL", nil, func(ms int64) bool { return ms > 9000 })
	require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 10, time.Second))
	compare("below the global max", nil, func(ms int64) bool { return ms == 0 })
	require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 4, time.Second))
	compare("over the global max", nil, func(ms int64) bool { return ms > 9000 })
	require.NoError(t, b.oracle.RateLimit(ctx, b.prefix, queueName, 5*time.Second))
	compare("Node rateLimit", intp(1000000), func(ms int64) bool { return ms > 4000 && ms <= 5000 })
	require.NoError(t, b.dq.RateLimit(ctx, 7*time.Second))
	compare("drover RateLimit", intp(1000000), func(ms int64) bool { return ms > 6000 && ms <= 7000 })
	v, err := b.rdb.Get(ctx, limiter).Result()
	require.NoError(t, err)
	require.Equal(t, "9007199254740991", v, "the value BullMQ's rateLimit stores")

	removed, err := b.dq.RemoveRateLimitKey(ctx)
	require.NoError(t, err)
	require.True(t, removed)
	require.Zero(t, b.rdb.Exists(ctx, limiter).Val())
	removed, err = b.dq.RemoveRateLimitKey(ctx)
	require.NoError(t, err)
	require.False(t, removed)
	require.NoError(t, b.dq.RateLimit(ctx, time.Second))
	n, err := b.oracle.RemoveRateLimitKey(ctx, b.prefix, queueName)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	compare("removed", intp(1), func(ms int64) bool { return ms == 0 })
}

// TestInteropRateLimiterKeyWithoutExpiry: a limiter key at or over the limit
// but without an expiry (written by hand, or its PEXPIRE lost) does not
// limit: BullMQ's getRateLimitTTL answers 0 for a PTTL of -1, and its workers
// go on counting in the key. A drover worker used to read it as a full
// window that never ends and fetched nothing, so the jobs stayed waiting for
// good. Both workers now run the jobs and leave the same count, still
// without an expiry.
func TestInteropRateLimiterKeyWithoutExpiry(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, by := range []impl{nodeImpl, droverImpl} {
		t.Run(string(by), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t)
			limiter := b.prefix + ":" + queueName + ":limiter"
			require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 2, time.Second))
			require.NoError(t, b.rdb.Set(ctx, limiter, 5, 0).Err())
			var ids []string
			for i := range 3 {
				ids = append(ids, b.add(t, by, jobSpec{name: "x", data: map[string]any{"i": i}}))
			}
			stop := b.startWorker(t, by, workerSpec{concurrency: 2})
			for _, id := range ids {
				b.waitFinal(t, id, 1)
			}
			stop()
			v, err := b.rdb.Get(ctx, limiter).Result()
			require.NoError(t, err)
			require.Equal(t, "8", v, "%s: each started job counted in the key", by)
			require.Equal(t, time.Duration(-1), b.rdb.PTTL(ctx, limiter).Val(), "%s: the key keeps no expiry", by)
		})
	}
}
