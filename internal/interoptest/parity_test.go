package interoptest_test

// Differential regression tests for the flow, deduplication and retention
// divergences of issue 10 (items 1, 2, 3, 4 and 7): each runs the same steps
// once with Node BullMQ doing them and once with drover doing the step under
// test, and compares the normalised Redis state (events streams included)
// of every queue under the prefix at each checkpoint.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// side performs operations on any queue under a bundle's prefix, with Node
// BullMQ or with drover.
type side struct {
	t  *testing.T
	b  *bundle
	by impl
}

func (s side) queue(name string) *drover.Queue {
	s.t.Helper()
	q, err := drover.NewQueue(s.b.rdb, name, &drover.QueueOptions{Prefix: s.b.prefix})
	require.NoError(s.t, err)
	return q
}

func (s side) remove(queue, id string) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		code, err := s.b.oracle.Remove(ctx, s.b.prefix, queue, id)
		require.NoError(s.t, err)
		require.Equal(s.t, 1, code)
		return
	}
	require.NoError(s.t, s.queue(queue).Job(id).Remove(ctx, nil))
}

// removeKeepChildren removes job id alone, leaving its flow children:
// BullMQ's remove(id, {removeChildren: false}).
func (s side) removeKeepChildren(queue, id string) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		code, err := s.b.oracle.RemoveKeepChildren(ctx, s.b.prefix, queue, id)
		require.NoError(s.t, err)
		require.Equal(s.t, 1, code)
		return
	}
	require.NoError(s.t, s.queue(queue).Job(id).Remove(ctx, &drover.RemoveOptions{KeepChildren: true}))
}

func (s side) drain(queue string, delayed bool) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		require.NoError(s.t, s.b.oracle.Drain(ctx, s.b.prefix, queue, delayed))
		return
	}
	_, err := s.queue(queue).Drain(ctx, delayed)
	require.NoError(s.t, err)
}

func (s side) clean(queue string, state drover.JobState) []string {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		typ := string(state)
		if state == drover.StateWaiting {
			typ = "wait"
		}
		ids, err := s.b.oracle.Clean(ctx, s.b.prefix, queue, 0, 0, typ)
		require.NoError(s.t, err)
		return ids
	}
	ids, err := s.queue(queue).Clean(ctx, 0, 0, state)
	require.NoError(s.t, err)
	return ids
}

func (s side) obliterate(queue string) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		require.NoError(s.t, s.b.oracle.Obliterate(ctx, s.b.prefix, queue, false))
		return
	}
	require.NoError(s.t, s.queue(queue).Obliterate(ctx, nil))
}

func (s side) retry(queue, id string, state drover.JobState) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		require.NoError(s.t, s.b.oracle.RetryJob(ctx, s.b.prefix, queue, id, string(state), false, false))
		return
	}
	require.NoError(s.t, s.queue(queue).Job(id).Retry(ctx, state, nil))
}

func (s side) retryJobs(queue string, state drover.JobState) {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		require.NoError(s.t, s.b.oracle.RetryJobs(ctx, s.b.prefix, queue, bullmqoracle.RetryJobsOptions{State: string(state)}))
		return
	}
	_, err := s.queue(queue).RetryJobs(ctx, &drover.RetryJobsOptions{State: state})
	require.NoError(s.t, err)
}

// work runs a worker of s's implementation on queue until count jobs of
// that queue finished (completed or failed events, counted from the start
// of its stream), then stops it.
func (s side) work(queue string, behavior bullmqoracle.Behavior, count int) {
	s.t.Helper()
	stop := s.b.startWorkerOn(s.t, s.by, queue, workerSpec{behavior: behavior})
	s.waitFinished(queue, count)
	stop()
}

// waitFinished waits until queue's stream holds count completed or failed
// events.
func (s side) waitFinished(queue string, count int) {
	s.t.Helper()
	readQueueEvents(s.t, s.b.rdb, s.b.prefix, queue, count, func(e drover.Event) bool {
		return e.Name == drover.EventCompleted || e.Name == drover.EventFailed
	}, waitLong)
}

// waitActive waits until job id of queue is being processed.
func (s side) waitActive(queue, id string) {
	s.t.Helper()
	key := s.b.prefix + ":" + queue + ":active"
	testkit.WaitFor(s.t, waitLong, "job "+id+" active", func() bool {
		ids, err := s.b.rdb.LRange(context.Background(), key, 0, -1).Result()
		require.NoError(s.t, err)
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	})
}

// openGate sets the key a WaitKey behaviour waits for.
func (s side) openGate() {
	s.t.Helper()
	require.NoError(s.t, s.b.rdb.Set(context.Background(), s.gate(), "1", 0).Err())
}

// gate is the key WaitKey behaviours of s's run wait for.
func (s side) gate() string { return s.b.prefix + ":gate" }

// flow adds a flow with Node's FlowProducer in both runs: the flows are the
// setting, what is compared is what drover does to them.
func (s side) flow(f bullmqoracle.FlowJob) {
	s.t.Helper()
	_, err := s.b.oracle.AddFlow(context.Background(), s.b.prefix, f)
	require.NoError(s.t, err)
}

// nodeAdd adds a job with Node in both runs (options drover's Add does not
// offer: a parent, keepLastIfActive deduplication).
func (s side) nodeAdd(queue, name string, data any, opts map[string]any) string {
	s.t.Helper()
	id, err := s.b.oracle.Add(context.Background(), s.b.prefix, queue, name, data, opts)
	require.NoError(s.t, err)
	return id
}

// node builds a flow node with a fixed id, so both runs name the same jobs
// (generated UUIDs would not compare), and its behaviour in its data.
func node(id, queue string, behavior *bullmqoracle.Behavior, opts map[string]any, children ...bullmqoracle.FlowJob) bullmqoracle.FlowJob {
	o := map[string]any{"jobId": id}
	for k, v := range opts {
		o[k] = v
	}
	data := map[string]any{"id": id}
	if behavior != nil {
		data["behavior"] = behavior
	}
	return bullmqoracle.FlowJob{Name: id, QueueName: queue, Data: data, Opts: o, Children: children}
}

// differential runs fn once with Node doing every step and once with
// drover doing them, comparing the states at each checkpoint.
func differential(t *testing.T, setup func(*testing.T) *bundle, fn func(s side, checkpoint func(string))) {
	t.Helper()
	checkpointed(t, setup, dumpOptions{workersRan: true, workerRunning: true}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		fn(side{t, b, by}, checkpoint)
	})
}

// TestDifferentialFlowRemoval (issue 10, item 2): removing a flow child in
// any way detaches it from its parent, releasing the parent when it was the
// last child, and removing a parent removes its children, as BullMQ does.
//
//	go test -count=1 -run 'TestDifferentialFlowRemoval' ./internal/interoptest/
func TestDifferentialFlowRemoval(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	later := map[string]any{"delay": 60000}

	t.Run("RemoveChildren", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil), node("c2", partsQueue, nil, later)))
			s.remove(partsQueue, "c1")
			checkpoint("first child removed")
			s.remove(partsQueue, "c2")
			checkpoint("last child removed: parent released")
		})
	})

	t.Run("RemoveParentWithChildren", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// One pending child: the order in which BullMQ removes
			// several is SMEMBERS order, which differs between runs.
			s.flow(node("p", queueName, nil, nil,
				node("c1", partsQueue, nil, nil), node("c3", queueName, nil, later)))
			s.work(partsQueue, bullmqoracle.Echo(), 1)
			checkpoint("first child completed")
			s.remove(queueName, "p")
			checkpoint("parent removed")
		})
	})

	t.Run("RemoveParentKeepChildren", func(t *testing.T) {
		t.Parallel()
		echo, fail := bullmqoracle.Echo(), bullmqoracle.Fail("child broke")
		ignore := map[string]any{"ignoreDependencyOnFailure": true}
		differential(t, setup, func(s side, checkpoint func(string)) {
			// In each queue a completed, a failed (recorded in the
			// parent's failed hash) and a pending child.
			s.flow(node("p", queueName, nil, nil,
				node("c1", queueName, &echo, nil), node("c2", queueName, &fail, ignore), node("c3", queueName, nil, later),
				node("d1", partsQueue, &echo, nil), node("d2", partsQueue, &fail, ignore), node("d3", partsQueue, nil, later)))
			s.work(queueName, bullmqoracle.FromData("behavior"), 2)
			s.work(partsQueue, bullmqoracle.FromData("behavior"), 2)
			checkpoint("children finished")
			s.removeKeepChildren(queueName, "p")
			checkpoint("parent removed, children kept")
			// A kept child whose parent is gone is still removable.
			s.remove(partsQueue, "d3")
			checkpoint("pending child removed")
		})
	})

	t.Run("RemoveParentKeepChildrenChildRunning", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// A running child refuses the default remove of its parent,
			// not this one (only the parent's own lock counts); the child
			// then finishes with its parent gone.
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil)))
			stop := s.b.startWorkerOn(s.t, s.by, partsQueue, workerSpec{
				behavior: bullmqoracle.WaitKey(s.gate(), bullmqoracle.Return("done")),
			})
			s.waitActive(partsQueue, "c1")
			s.removeKeepChildren(queueName, "p")
			s.openGate()
			s.waitFinished(partsQueue, 1)
			stop()
			checkpoint("parent removed while its child ran; child finished")
		})
	})

	t.Run("Drain", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// A parent in another queue, and one in the drained queue.
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil), node("c2", partsQueue, nil, later)))
			s.flow(node("p2", partsQueue, nil, nil, node("d1", partsQueue, nil, nil)))
			s.drain(partsQueue, false)
			checkpoint("drained")
			s.drain(partsQueue, true)
			checkpoint("drained with delayed")
		})
	})

	t.Run("Clean", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			s.flow(node("p", queueName, nil, nil,
				node("c1", partsQueue, nil, nil), node("c2", partsQueue, nil, later),
				node("c3", partsQueue, nil, map[string]any{"priority": 3})))
			require.Equal(s.t, []string{"c1"}, s.clean(partsQueue, drover.StateWaiting))
			checkpoint("waiting child cleaned")
			require.Equal(s.t, []string{"c3"}, s.clean(partsQueue, drover.StatePrioritized))
			checkpoint("prioritized child cleaned")
			require.Equal(s.t, []string{"c2"}, s.clean(partsQueue, drover.StateDelayed))
			checkpoint("last child cleaned: parent released")
		})
	})

	t.Run("CleanFailed", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// A child that failed without a failure policy stays pending.
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil)))
			s.work(partsQueue, bullmqoracle.Fail("child broke"), 1)
			checkpoint("child failed")
			require.Equal(s.t, []string{"c1"}, s.clean(partsQueue, drover.StateFailed))
			checkpoint("failed child cleaned")
		})
	})

	t.Run("Obliterate", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil), node("c2", partsQueue, nil, later)))
			s.obliterate(partsQueue)
			checkpoint("children's queue obliterated")
		})
	})

	t.Run("RemoveOnFinish", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// c1 is dropped when it fails, c2 is trimmed by c3's count,
			// c3 stays failed (pending), c4 is dropped: the parent keeps
			// waiting for c3 alone.
			s.flow(node("p", queueName, nil, nil,
				node("c1", partsQueue, nil, map[string]any{"removeOnFail": true}),
				node("c2", partsQueue, nil, map[string]any{"removeOnFail": 1}),
				node("c3", partsQueue, nil, map[string]any{"removeOnFail": 1}),
				node("c4", partsQueue, nil, map[string]any{"removeOnFail": true})))
			s.work(partsQueue, bullmqoracle.SleepThen(5*time.Millisecond, bullmqoracle.Fail("child broke")), 4)
			checkpoint("children failed and dropped")
			// The last pending child, dropped when it fails, releases it.
			s.flow(node("p2", queueName, nil, nil, node("e1", partsQueue, nil, map[string]any{"removeOnFail": true})))
			s.work(partsQueue, bullmqoracle.Fail("child broke"), 5)
			checkpoint("last child dropped: parent released")
		})
	})
}

// TestDifferentialRetentionAgeLimit (issue 10, item 7): an age bound with a
// limit removes the newest expired jobs first, as BullMQ's does; trimmed
// flow children leave their parent (item 2).
//
//	go test -count=1 -run 'TestDifferentialRetentionAgeLimit' ./internal/interoptest/
func TestDifferentialRetentionAgeLimit(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	slow := bullmqoracle.SleepThen(5*time.Millisecond, bullmqoracle.Return("ok"))

	t.Run("NewestExpiredFirst", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			for _, name := range []string{"a", "b", "c"} {
				s.nodeAdd(queueName, name, map[string]any{"n": name}, nil)
			}
			s.work(queueName, slow, 3)
			time.Sleep(1100 * time.Millisecond) // a, b and c are now over a second old
			s.nodeAdd(queueName, "d", map[string]any{"n": "d"},
				map[string]any{"removeOnComplete": map[string]any{"age": 1, "limit": 1}})
			s.work(queueName, slow, 4)
			checkpoint("one expired job trimmed")
		})
	})

	t.Run("FlowChildren", func(t *testing.T) {
		t.Parallel()
		failSlow := bullmqoracle.SleepThen(5*time.Millisecond, bullmqoracle.Fail("child broke"))
		differential(t, setup, func(s side, checkpoint func(string)) {
			s.flow(node("p", queueName, nil, nil, node("c1", partsQueue, nil, nil), node("c2", partsQueue, nil, nil)))
			s.work(partsQueue, failSlow, 2)
			time.Sleep(1100 * time.Millisecond)
			s.nodeAdd(partsQueue, "x", map[string]any{"n": "x"},
				map[string]any{"removeOnFail": map[string]any{"age": 1, "limit": 1}})
			s.work(partsQueue, failSlow, 3)
			checkpoint("newest expired child trimmed and detached")
		})
	})
}

// TestDifferentialChildRetry (issue 10, item 4): re-running a finished flow
// child puts it back into its parent's dependencies, so its new return value
// replaces the old one, in Job.Retry and Queue.RetryJobs.
//
//	go test -count=1 -run 'TestDifferentialChildRetry' ./internal/interoptest/
func TestDifferentialChildRetry(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	v1v2 := bullmqoracle.Sequence(bullmqoracle.Return("v1"), bullmqoracle.Return("v2"))
	failThenFix := bullmqoracle.Sequence(bullmqoracle.Fail("child broke"), bullmqoracle.Return("fixed"))
	flow := func(s side) {
		s.flow(node("p", queueName, nil, nil,
			node("c1", partsQueue, &v1v2, nil),
			node("c2", partsQueue, nil, map[string]any{"delay": 60000}),
			node("c3", partsQueue, &failThenFix, map[string]any{"ignoreDependencyOnFailure": true}),
			node("c4", partsQueue, &failThenFix, map[string]any{"failParentOnFailure": true})))
	}

	for _, tc := range []struct {
		name  string
		retry func(s side)
	}{
		{"JobRetry", func(s side) {
			s.retry(partsQueue, "c1", drover.StateCompleted)
			s.retry(partsQueue, "c3", drover.StateFailed)
			s.retry(partsQueue, "c4", drover.StateFailed)
		}},
		{"RetryJobs", func(s side) {
			s.retryJobs(partsQueue, drover.StateCompleted)
			s.retryJobs(partsQueue, drover.StateFailed)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				flow(s)
				s.work(partsQueue, bullmqoracle.FromData("behavior"), 3)
				checkpoint("children finished once")
				tc.retry(s)
				checkpoint("children back in the parent's dependencies")
				s.work(partsQueue, bullmqoracle.FromData("behavior"), 6)
				checkpoint("children finished again: new values recorded")
			})
		})
	}
}

// TestDifferentialParentCompletion (issue 10, item 3): a job that became a
// flow parent while it ran cannot complete while a child is pending or
// after a child failed with failParentOnFailure; the attempt fails with
// BullMQ's reason and no deferred failure stays behind.
//
//	go test -count=1 -run 'TestDifferentialParentCompletion' ./internal/interoptest/
func TestDifferentialParentCompletion(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)

	for _, tc := range []struct {
		name       string
		parentOpts map[string]any
		childOpts  map[string]any
	}{
		{"PendingChild", nil, nil},
		// The refusal is an ordinary error: an attempt left means a retry.
		{"PendingChildRetried", map[string]any{"attempts": 2}, nil},
		{"FailedChild", map[string]any{"attempts": 2}, map[string]any{"failParentOnFailure": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				popts := map[string]any{"jobId": "p"}
				for k, v := range tc.parentOpts {
					popts[k] = v
				}
				s.nodeAdd(queueName, "p", map[string]any{"n": 1}, popts)
				stop := s.b.startWorkerOn(s.t, s.by, queueName, workerSpec{
					behavior: bullmqoracle.WaitKey(s.gate(), bullmqoracle.Return("done")),
				})
				s.waitActive(queueName, "p")
				opts := map[string]any{"jobId": "c", "parent": map[string]any{"id": "p", "queue": s.b.prefix + ":" + queueName}}
				for k, v := range tc.childOpts {
					opts[k] = v
				}
				s.nodeAdd(partsQueue, "c", map[string]any{"n": 2}, opts)
				if tc.childOpts != nil {
					s.work(partsQueue, bullmqoracle.Fail("child broke"), 1)
				}
				checkpoint("child added while the parent runs")
				s.openGate()
				s.waitFinished(queueName, 1)
				stop()
				checkpoint("parent finished")
			})
		})
	}
}

// TestDifferentialDedupKeepLastIfActive (issue 10, item 1): adds made with
// keepLastIfActive while the deduplication owner runs leave the newest one
// in dn:<id>; when the owner finishes, completed or failed, that job is
// queued and runs.
//
//	go test -count=1 -run 'TestDifferentialDedupKeepLastIfActive' ./internal/interoptest/
func TestDifferentialDedupKeepLastIfActive(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)

	for _, tc := range []struct {
		name string
		then bullmqoracle.Behavior
	}{
		{"OwnerCompletes", bullmqoracle.Echo()},
		{"OwnerFails", bullmqoracle.Fail("owner broke")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				add := func(n int, extra map[string]any) string {
					de := map[string]any{"id": "k1", "keepLastIfActive": true}
					opts := map[string]any{"deduplication": de}
					for k, v := range extra {
						opts[k] = v
					}
					return s.nodeAdd(queueName, "sync", map[string]any{"n": n}, opts)
				}
				owner := add(1, nil)
				stop := s.b.startWorkerOn(s.t, s.by, queueName, workerSpec{behavior: bullmqoracle.WaitKey(s.gate(), tc.then)})
				s.waitActive(queueName, owner)
				require.Equal(s.t, owner, add(2, nil))
				require.Equal(s.t, owner, add(3, map[string]any{"priority": 2}))
				checkpoint("next job stored while the owner runs")
				s.openGate()
				s.waitFinished(queueName, 2)
				stop()
				checkpoint("owner finished, stored job queued and run")
			})
		})
	}
}
