package interoptest_test

// Interop tests for the everyday Queue and Job calls of BullMQ 6.7 that
// drover added late: deduplication keys, the global limit getters, counts
// per priority, clearing logs and detaching or deleting flow children.
// Reads: Node builds the state and both read it. Changes: the same steps
// run once with Node making the change and once with drover making it, and
// the normalised Redis states (events streams included) are compared.
//
//	go test -count=1 -run 'TestInteropQueueExtras|TestDifferentialJobExtras' ./internal/interoptest/

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropQueueExtrasReads: GetDeduplicationJobID, GetGlobalConcurrency,
// GetGlobalRateLimit and GetCountsPerPriority answer what Node's
// getDeduplicationJobId, getGlobalConcurrency, getGlobalRateLimit and
// getCountsPerPriority answer on state Node made.
func TestInteropQueueExtrasReads(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)

	t.Run("DeduplicationJobID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		owner := side{t, b, nodeImpl}.nodeAdd(queueName, "a", map[string]any{"n": 1},
			map[string]any{"deduplication": map[string]any{"id": "simple"}})
		throttled := side{t, b, nodeImpl}.nodeAdd(queueName, "b", map[string]any{"n": 2},
			map[string]any{"deduplication": map[string]any{"id": "throttled", "ttl": 60000}})
		for dedupID, want := range map[string]string{"simple": owner, "throttled": throttled, "never-used": ""} {
			var nodeID *string
			require.NoError(t, b.oracle.QueueCall(ctx, b.prefix, queueName, "getDeduplicationJobId", &nodeID, dedupID))
			id, err := b.dq.GetDeduplicationJobID(ctx, dedupID)
			require.NoError(t, err)
			require.Equal(t, want, id, dedupID)
			if want == "" {
				require.Nil(t, nodeID, "Node answers null for %s", dedupID)
			} else {
				require.NotNil(t, nodeID)
				require.Equal(t, *nodeID, id, dedupID)
			}
		}
		_, err := b.dq.GetDeduplicationJobID(ctx, "")
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	})

	t.Run("GlobalLimits", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		meta := b.prefix + ":" + queueName + ":meta"
		type nodeRate struct{ Max, Duration int64 }
		check := func(label string, wantConc *int, wantRate *drover.RateLimit) {
			t.Helper()
			var nodeConc *int
			require.NoError(t, b.oracle.QueueCall(ctx, b.prefix, queueName, "getGlobalConcurrency", &nodeConc))
			n, set, err := b.dq.GetGlobalConcurrency(ctx)
			require.NoError(t, err)
			require.Equal(t, wantConc, nodeConc, "%s: Node's concurrency", label)
			require.Equal(t, nodeConc != nil, set, label)
			if nodeConc != nil {
				require.Equal(t, *nodeConc, n, label)
			}
			var nr *nodeRate
			require.NoError(t, b.oracle.QueueCall(ctx, b.prefix, queueName, "getGlobalRateLimit", &nr))
			rl, err := b.dq.GetGlobalRateLimit(ctx)
			require.NoError(t, err)
			require.Equal(t, wantRate, rl, label)
			if nr == nil {
				require.Nil(t, rl, label)
			} else {
				require.Equal(t, drover.RateLimit{Max: int(nr.Max), Duration: time.Duration(nr.Duration) * time.Millisecond}, *rl, label)
			}
		}
		ptr := func(n int) *int { return &n }

		check("nothing set (no meta hash)", nil, nil)
		require.NoError(t, b.oracle.SetGlobalConcurrency(ctx, b.prefix, queueName, 3))
		require.NoError(t, b.oracle.SetGlobalRateLimit(ctx, b.prefix, queueName, 5, 1500*time.Millisecond))
		check("both set by Node", ptr(3), &drover.RateLimit{Max: 5, Duration: 1500 * time.Millisecond})
		// Node's setGlobalConcurrency stores 0 as given: a set cap that
		// blocks every worker, not the absence of one.
		require.NoError(t, b.oracle.SetGlobalConcurrency(ctx, b.prefix, queueName, 0))
		// Half a rate limit (only max) is no limit for Node's workers and
		// for its getter.
		require.NoError(t, b.rdb.HDel(ctx, meta, "duration").Err())
		check("concurrency 0, only max", ptr(0), nil)
		require.NoError(t, b.dq.SetGlobalConcurrency(ctx, 7))
		require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 2, time.Minute))
		check("both set by drover", ptr(7), &drover.RateLimit{Max: 2, Duration: time.Minute})
		require.NoError(t, b.dq.RemoveGlobalConcurrency(ctx))
		require.NoError(t, b.dq.RemoveGlobalRateLimit(ctx))
		check("both removed", nil, nil)
	})

	t.Run("CountsPerPriority", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		s := side{t, b, nodeImpl}
		add := func(name string, opts map[string]any) { s.nodeAdd(queueName, name, map[string]any{"n": name}, opts) }
		add("plain1", nil)
		add("plain2", nil)
		for _, name := range []string{"p1a", "p1b", "p1c"} {
			add(name, map[string]any{"priority": 1})
		}
		add("p2", map[string]any{"priority": 2})
		add("p5", map[string]any{"priority": 5})
		add("pmax", map[string]any{"priority": drover.MaxPriority})
		add("delayed1", map[string]any{"priority": 1, "delay": 60000}) // not ready: no count
		add("delayed0", map[string]any{"delay": 60000})
		require.NoError(t, b.oracle.Pause(ctx, b.prefix, queueName))
		add("pausedPlain", nil) // a paused queue's jobs stay in wait
		add("pausedP5", map[string]any{"priority": 5})

		asked := []int{0, 1, 2, 3, 5, drover.MaxPriority, 1}
		var nodeCounts map[string]int64
		require.NoError(t, b.oracle.QueueCall(ctx, b.prefix, queueName, "getCountsPerPriority", &nodeCounts, asked))
		counts, err := b.dq.GetCountsPerPriority(ctx, asked...)
		require.NoError(t, err)
		want := map[int]int64{0: 3, 1: 3, 2: 1, 3: 0, 5: 2, drover.MaxPriority: 1}
		require.Equal(t, want, counts)
		require.Len(t, nodeCounts, len(want))
		for p, n := range counts {
			require.Equal(t, nodeCounts[strconv.Itoa(p)], n, "priority %d", p)
		}

		none, err := b.dq.GetCountsPerPriority(ctx)
		require.NoError(t, err)
		require.Empty(t, none)
		_, err = b.dq.GetCountsPerPriority(ctx, 1, drover.MaxPriority+1)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		_, err = b.dq.GetCountsPerPriority(ctx, -1)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	})
}

// jobCall makes a Job change with Node (its Queue.getJob, then the method)
// or with drover. fn is drover's; Node's result is decoded into nodeOut.
func (s side) jobCall(queue, id, method string, nodeOut any, fn func(j *drover.Job) error, args ...any) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		require.NoError(s.t, s.b.oracle.JobCall(ctx, s.b.prefix, queue, id, method, nodeOut, args...))
		return
	}
	j, err := s.queue(queue).GetJob(ctx, id)
	require.NoError(s.t, err)
	require.NoError(s.t, fn(j))
}

// TestDifferentialJobExtras: deduplication keys, clearing logs, detaching
// a child from its parent and deleting a parent's unprocessed children
// leave the same Redis state, events included, whether Node or drover
// makes the change.
func TestDifferentialJobExtras(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	t.Run("DeduplicationKeys", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			dedup := func(id string) map[string]any {
				return map[string]any{"deduplication": map[string]any{"id": id}}
			}
			a := s.nodeAdd(queueName, "a", map[string]any{"n": 1}, dedup("x"))
			k := s.nodeAdd(queueName, "k", map[string]any{"n": 2}, dedup("kept"))
			plain := s.nodeAdd(queueName, "plain", map[string]any{"n": 3}, nil)

			// Queue.removeDeduplicationKey: whoever holds the id.
			var removed int
			if s.by == nodeImpl {
				require.NoError(s.t, s.b.oracle.QueueCall(ctx, s.b.prefix, queueName, "removeDeduplicationKey", &removed, "x"))
			} else {
				var err error
				removed, err = s.queue(queueName).RemoveDeduplicationKey(ctx, "x")
				require.NoError(s.t, err)
				_, err = s.queue(queueName).RemoveDeduplicationKey(ctx, "")
				require.ErrorIs(s.t, err, drover.ErrInvalidOption)
			}
			require.Equal(s.t, 1, removed)
			checkpoint("id x freed from the queue")

			// The id now passes to b; a's handle must not free it.
			b := s.nodeAdd(queueName, "b", map[string]any{"n": 4}, dedup("x"))
			require.NotEqual(s.t, a, b)
			var freed bool // Node's answer, or drover's
			ownCall := func(id string, handle bool) bool {
				s.t.Helper()
				var got bool
				if s.by == nodeImpl {
					require.NoError(s.t, s.b.oracle.JobCall(ctx, s.b.prefix, queueName, id, "removeDeduplicationKey", &got))
					return got
				}
				q := s.queue(queueName)
				j := q.Job(id) // no DeduplicationID: the stored deid is used
				if !handle {
					var err error
					j, err = q.GetJob(ctx, id)
					require.NoError(s.t, err)
				}
				got, err := j.RemoveDeduplicationKey(ctx)
				require.NoError(s.t, err)
				return got
			}
			freed = ownCall(a, false)
			require.False(s.t, freed, "a no longer holds x")
			freed = ownCall(plain, true)
			require.False(s.t, freed, "a job without a deduplication id")
			checkpoint("stale owner and plain job: nothing freed")
			require.True(s.t, ownCall(b, false), "b holds x")
			require.True(s.t, ownCall(k, true), "k holds kept (a bare handle)")
			checkpoint("owners freed their ids")
		})
	})

	t.Run("ClearLogs", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			id := s.nodeAdd(queueName, "l", map[string]any{"n": 1}, map[string]any{"jobId": "l"})
			for _, line := range []string{"one", "two", "three", "four", "five"} {
				_, err := s.b.oracle.Log(ctx, s.b.prefix, queueName, id, line)
				require.NoError(s.t, err)
			}
			clear := func(keep int) {
				s.t.Helper()
				s.jobCall(queueName, id, "clearLogs", nil, func(j *drover.Job) error { return j.ClearLogs(ctx, keep) }, keep)
			}
			clear(2)
			checkpoint("kept the newest 2")
			clear(5)
			checkpoint("keeping more than there are")
			clear(0)
			checkpoint("cleared")
			if s.by == droverImpl {
				require.ErrorIs(s.t, s.queue(queueName).Job(id).ClearLogs(ctx, -1), drover.ErrInvalidOption)
			}
		})
	})

	t.Run("RemoveChildDependency", func(t *testing.T) {
		t.Parallel()
		later := map[string]any{"delay": 60000}
		for _, tc := range []struct {
			name  string
			popts map[string]any
			pause bool
		}{
			{"Plain", nil, false},
			// BullMQ's release on removal ignores the parent's priority
			// and delay, and a paused queue gets no marker.
			{"PrioritizedParentPausedQueue", map[string]any{"priority": 3}, true},
			{"DelayedParent", map[string]any{"delay": 5000}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				differential(t, setup, func(s side, checkpoint func(string)) {
					s.flow(node("p", queueName, nil, tc.popts,
						node("c1", partsQueue, nil, nil), node("c2", partsQueue, nil, later)))
					if tc.pause {
						require.NoError(s.t, s.b.oracle.Pause(ctx, s.b.prefix, queueName))
					}
					detach := func(id string) bool {
						s.t.Helper()
						var ok bool
						s.jobCall(partsQueue, id, "removeChildDependency", &ok, func(j *drover.Job) error {
							require.NotNil(s.t, j.Parent)
							var err error
							ok, err = j.RemoveChildDependency(ctx)
							require.Nil(s.t, j.Parent, "the handle forgets its parent")
							return err
						})
						return ok
					}
					require.True(s.t, detach("c1"))
					checkpoint("first child detached")
					require.True(s.t, detach("c2"))
					checkpoint("last child detached: parent released")
				})
			})
		}

		t.Run("FinishedChild", func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				echo := bullmqoracle.Echo()
				s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, &echo, nil), node("c2", partsQueue, nil, later)))
				side{s.t, s.b, nodeImpl}.work(partsQueue, echo, 1)
				var ok bool
				s.jobCall(partsQueue, "c1", "removeChildDependency", &ok, func(j *drover.Job) error {
					var err error
					ok, err = j.RemoveChildDependency(ctx)
					return err
				})
				require.False(s.t, ok, "a completed child is no pending dependency")
				checkpoint("completed child: nothing changed")
			})
		})

		t.Run("Refusals", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			s := side{t, b, nodeImpl}
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil)))
			s.nodeAdd(queueName, "solo", map[string]any{"n": 1}, map[string]any{"jobId": "solo"})
			parts, err := drover.NewQueue(b.rdb, partsQueue, &drover.QueueOptions{Prefix: b.prefix})
			require.NoError(t, err)
			ok, err := parts.Job("c1").RemoveChildDependency(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			before := comparableDump(t, b.rdb, b.prefix, dumpOptions{})
			// Node refuses both: the detached child and a job that never
			// had a parent name no parent key.
			for _, tc := range []struct {
				q  *drover.Queue
				qn string
				id string
			}{{parts, partsQueue, "c1"}, {b.dq, queueName, "solo"}} {
				nodeErr := b.oracle.JobCall(ctx, b.prefix, tc.qn, tc.id, "removeChildDependency", nil)
				require.Error(t, nodeErr, "Node refuses %s", tc.id)
				_, err := tc.q.Job(tc.id).RemoveChildDependency(ctx)
				require.ErrorIs(t, err, drover.ErrParentNotFound, tc.id)
				t.Logf("%s: Node: %v; drover: %v", tc.id, nodeErr, err)
			}
			_, err = b.dq.Job("gone").RemoveChildDependency(ctx)
			require.ErrorIs(t, err, drover.ErrJobNotFound)
			requireSameState(t, before, comparableDump(t, b.rdb, b.prefix, dumpOptions{}))
		})
	})

	t.Run("RemoveUnprocessedChildren", func(t *testing.T) {
		t.Parallel()
		echo := bullmqoracle.Echo()
		fail := bullmqoracle.Fail("child broke")
		removeUnprocessed := func(s side, queue, id string, want int) {
			s.t.Helper()
			s.jobCall(queue, id, "removeUnprocessedChildren", nil, func(j *drover.Job) error {
				n, err := j.RemoveUnprocessedChildren(ctx)
				require.Equal(s.t, want, n, "jobs deleted")
				return err
			})
		}

		t.Run("KeepsFinishedAndFailed", func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				// c1 completes, c2 fails without a policy (it stays
				// pending), c3 waits for its own child g1. Each level has
				// one deletable child, so the deletion order is fixed.
				s.flow(node("p", queueName, nil, nil,
					node("c1", partsQueue, &echo, nil),
					node("c2", partsQueue, &fail, nil),
					node("c3", partsQueue, nil, nil, node("g1", queueName, nil, nil))))
				side{s.t, s.b, nodeImpl}.work(partsQueue, bullmqoracle.FromData("behavior"), 2)
				checkpoint("c1 completed, c2 failed")
				removeUnprocessed(s, queueName, "p", 2)
				checkpoint("c3 and g1 deleted; p still waits for c2")
			})
		})

		t.Run("LastChildReleasesParent", func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				s.flow(node("p", queueName, nil, map[string]any{"priority": 2},
					node("c1", partsQueue, nil, map[string]any{"delay": 60000})))
				removeUnprocessed(s, queueName, "p", 1)
				checkpoint("only child deleted: parent released")
				removeUnprocessed(s, queueName, "p", 0)
				checkpoint("nothing left to delete")
			})
		})

		t.Run("ActiveChildKept", func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				hold := bullmqoracle.WaitKey(s.gate(), echo)
				s.flow(node("p", queueName, nil, nil,
					node("c1", partsQueue, &hold, nil),
					node("c2", partsQueue, nil, map[string]any{"delay": 60000})))
				stop := s.b.startWorkerOn(s.t, nodeImpl, partsQueue, workerSpec{behavior: bullmqoracle.FromData("behavior")})
				s.waitActive(partsQueue, "c1")
				removeUnprocessed(s, queueName, "p", 1)
				checkpoint("active c1 kept, delayed c2 deleted")
				s.openGate()
				s.waitFinished(partsQueue, 1)
				stop()
				checkpoint("c1 completed: parent released")
			})
		})

		t.Run("MissingJob", func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.dq.Job("gone").RemoveUnprocessedChildren(ctx)
			require.True(t, errors.Is(err, drover.ErrJobNotFound), "%v", err)
		})
	})
}
