package interoptest_test

// Flows beyond the randomized tester's one parent with children: trees
// three and four levels deep over two queues, failure policies chaining
// through grandparents, retried children re-blocking their parent, and the
// reads of what children left. Each scenario runs once with Node doing
// every step and once with drover doing them (workers, admin calls, the
// flow producer), comparing the normalised states at each checkpoint and
// the reads.
//
//	go test -count=1 -run 'TestDifferentialFlowDeep' ./internal/interoptest/

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// flowReads are what a parent's reads answer, in one comparable value.
type flowReads struct {
	Values  map[string]json.RawMessage `json:"values"`
	Ignored map[string]string          `json:"ignored"`
	Failed  map[string]string          `json:"failed"`
}

// reads reads job id's children values, ignored failures and failed
// children values with s's implementation.
func (s side) reads(queue, id string) flowReads {
	s.t.Helper()
	ctx := context.Background()
	var r flowReads
	if s.by == nodeImpl {
		require.NoError(s.t, s.b.oracle.JobRead(ctx, s.b.prefix, queue, id, "getChildrenValues", &r.Values))
		require.NoError(s.t, s.b.oracle.JobRead(ctx, s.b.prefix, queue, id, "getIgnoredChildrenFailures", &r.Ignored))
		require.NoError(s.t, s.b.oracle.JobRead(ctx, s.b.prefix, queue, id, "getFailedChildrenValues", &r.Failed))
	} else {
		job, err := s.queue(queue).GetJob(ctx, id)
		require.NoError(s.t, err)
		r.Values, err = job.GetChildrenValues(ctx)
		require.NoError(s.t, err)
		r.Ignored, err = job.GetIgnoredChildrenFailures(ctx)
		require.NoError(s.t, err)
		r.Failed, err = job.GetFailedChildrenValues(ctx)
		require.NoError(s.t, err)
	}
	// Keys carry the run's prefix: strip it.
	strip := func(k string) string { return k[len(s.b.prefix):] }
	out := flowReads{Values: map[string]json.RawMessage{}, Ignored: map[string]string{}, Failed: map[string]string{}}
	for k, v := range r.Values {
		var x any
		require.NoError(s.t, json.Unmarshal(v, &x))
		c, _ := json.Marshal(x)
		out.Values[strip(k)] = c
	}
	for k, v := range r.Ignored {
		out.Ignored[strip(k)] = v
	}
	for k, v := range r.Failed {
		out.Failed[strip(k)] = v
	}
	return out
}

// differentialReads is differential that also compares values the runs
// record (reads) in order.
func differentialReads(t *testing.T, setup func(*testing.T) *bundle, fn func(s side, checkpoint func(string), record func(string, any))) {
	t.Helper()
	recorded := map[impl][]string{}
	differential(t, setup, func(s side, checkpoint func(string)) {
		fn(s, checkpoint, func(label string, v any) {
			b, err := json.Marshal(v)
			require.NoError(s.t, err)
			recorded[s.by] = append(recorded[s.by], label+": "+string(b))
		})
	})
	require.Equal(t, recorded[nodeImpl], recorded[droverImpl], "reads: Node run vs drover run")
}

func TestDifferentialFlowDeep(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("child broke")
	later := map[string]any{"delay": 3_600_000}
	by := bullmqoracle.FromData("behavior")

	t.Run("FailParentChain", func(t *testing.T) {
		t.Parallel()
		// leaf fails -> low (failParentOnFailure) fails without running ->
		// mid (failParentOnFailure) likewise -> root likewise.
		fpof := map[string]any{"failParentOnFailure": true}
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.addFlow(node("root", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_000},
				node("mid", queueName, &echo, map[string]any{"failParentOnFailure": true, "timestamp": 1_700_000_000_001},
					node("low", partsQueue, &echo, map[string]any{"failParentOnFailure": true, "timestamp": 1_700_000_000_002},
						node("leaf", partsQueue, &fail, fpof),
						node("sib", partsQueue, &echo, later))),
				node("other", partsQueue, &echo, nil)))
			checkpoint("added")
			s.work(partsQueue, by, 3)
			checkpoint("leaf and low failed, other completed")
			s.work(queueName, by, 2)
			checkpoint("mid and root failed")
			record("root", s.reads(queueName, "root"))
			record("mid", s.reads(queueName, "mid"))
			record("low", s.reads(partsQueue, "low"))
		})
	})

	t.Run("IgnoreAndRemoveNested", func(t *testing.T) {
		t.Parallel()
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.addFlow(node("root", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_000},
				node("mid", queueName, &fail, map[string]any{"ignoreDependencyOnFailure": true, "timestamp": 1_700_000_000_001},
					node("c1", partsQueue, &fail, map[string]any{"ignoreDependencyOnFailure": true}),
					node("c2", partsQueue, &echo, nil)),
				node("c3", partsQueue, &fail, map[string]any{"removeDependencyOnFailure": true}),
				node("c4", partsQueue, &fail, map[string]any{"continueParentOnFailure": true})))
			checkpoint("added")
			s.work(partsQueue, by, 4)
			checkpoint("leaves finished")
			record("mid", s.reads(queueName, "mid"))
			s.work(queueName, by, 2)
			checkpoint("mid failed, root completed")
			record("root", s.reads(queueName, "root"))
		})
	})

	t.Run("RetryFailedChild", func(t *testing.T) {
		t.Parallel()
		seq := bullmqoracle.Sequence(fail, echo)
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.addFlow(node("root", queueName, &echo, nil,
				node("mid", partsQueue, &echo, map[string]any{"timestamp": 1_700_000_000_001},
					node("c1", partsQueue, &seq, nil)),
				node("c2", partsQueue, &seq, map[string]any{"failParentOnFailure": true})))
			checkpoint("added")
			s.work(partsQueue, by, 2)
			checkpoint("both children failed")
			s.retry(partsQueue, "c1", drover.StateFailed)
			checkpoint("c1 retried")
			s.work(partsQueue, by, 4)
			checkpoint("c1 completed, mid completed")
			record("mid", s.reads(partsQueue, "mid"))
			record("root", s.reads(queueName, "root"))
			s.retry(partsQueue, "c2", drover.StateFailed)
			checkpoint("c2 retried: back in root's dependencies")
			record("root", s.reads(queueName, "root"))
			s.work(partsQueue, by, 5)
			checkpoint("c2 completed")
			s.work(queueName, by, 1)
			checkpoint("root finished")
			record("root", s.reads(queueName, "root"))
		})
	})

	t.Run("RetryCompletedChild", func(t *testing.T) {
		t.Parallel()
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.addFlow(node("root", queueName, &echo, nil,
				node("c1", partsQueue, &echo, nil),
				node("c2", partsQueue, &echo, later)))
			s.work(partsQueue, by, 1)
			checkpoint("c1 completed")
			s.retry(partsQueue, "c1", drover.StateCompleted)
			checkpoint("c1 retried: pending again")
			record("root", s.reads(queueName, "root"))
			s.retryJobs(partsQueue, drover.StateCompleted)
			s.work(partsQueue, by, 2)
			checkpoint("c1 completed again")
			record("root", s.reads(queueName, "root"))
		})
	})
}

// outcome is an admin call's result as both runs can record it: "ok" or
// "error".
func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// changePriorityOn, changeDelayOn and promoteOn call the admin method on
// queue's job id with s's implementation and say whether it was refused.
func (s side) changePriorityOn(queue, id string, p int) string {
	ctx := context.Background()
	if s.by == nodeImpl {
		return outcome(s.b.oracle.ChangePriority(ctx, s.b.prefix, queue, id, p, false))
	}
	return outcome(s.queue(queue).Job(id).ChangePriority(ctx, p, false))
}

func (s side) changeDelayOn(queue, id string, d time.Duration) string {
	ctx := context.Background()
	if s.by == nodeImpl {
		return outcome(s.b.oracle.ChangeDelay(ctx, s.b.prefix, queue, id, d.Milliseconds()))
	}
	return outcome(s.queue(queue).Job(id).ChangeDelay(ctx, d))
}

func (s side) promoteOn(queue, id string) string {
	ctx := context.Background()
	if s.by == nodeImpl {
		return outcome(s.b.oracle.Promote(ctx, s.b.prefix, queue, id))
	}
	return outcome(s.queue(queue).Job(id).Promote(ctx))
}

func (s side) pauseQueue(queue string, pause bool) {
	s.t.Helper()
	ctx := context.Background()
	switch {
	case s.by == nodeImpl && pause:
		require.NoError(s.t, s.b.oracle.Pause(ctx, s.b.prefix, queue))
	case s.by == nodeImpl:
		require.NoError(s.t, s.b.oracle.Resume(ctx, s.b.prefix, queue))
	case pause:
		require.NoError(s.t, s.queue(queue).Pause(ctx))
	default:
		require.NoError(s.t, s.queue(queue).Resume(ctx))
	}
}

// getFlow reads the tree under queue's job id with s's implementation, in
// the oracle's view.
func (s side) getFlow(queue, id string, depth, maxChildren int) *bullmqoracle.FlowNode {
	s.t.Helper()
	ctx := context.Background()
	if s.by == nodeImpl {
		n, err := s.b.oracle.GetFlow(ctx, s.b.prefix, queue, id, depth, maxChildren)
		require.NoError(s.t, err)
		return sortFlow(n)
	}
	tree, err := s.queue(queue).GetFlow(ctx, id, &drover.GetFlowOptions{Depth: depth, MaxChildren: maxChildren})
	require.NoError(s.t, err)
	var view func(n *drover.JobNode) *bullmqoracle.FlowNode
	view = func(n *drover.JobNode) *bullmqoracle.FlowNode {
		if n.Job == nil {
			return nil
		}
		v := &bullmqoracle.FlowNode{ID: n.Job.ID, Queue: n.Ref.Queue, Children: []*bullmqoracle.FlowNode{}}
		for _, c := range n.Children {
			v.Children = append(v.Children, view(c))
		}
		return v
	}
	return sortFlow(view(tree))
}

// sortFlow orders each node's children by id: the order of a set's members
// differs between runs.
func sortFlow(n *bullmqoracle.FlowNode) *bullmqoracle.FlowNode {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		sortFlow(c)
	}
	sort.SliceStable(n.Children, func(i, j int) bool {
		a, b := n.Children[i], n.Children[j]
		if a == nil || b == nil {
			return b != nil
		}
		return a.ID < b.ID
	})
	return n
}

func TestDifferentialFlowDeepAdmin(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("child broke")
	later := map[string]any{"delay": 3_600_000}
	by := bullmqoracle.FromData("behavior")

	t.Run("DrainCascade", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// Draining q deletes leaf, then mid (its last child gone, same
			// queue), then root; top in parts is released without event.
			s.flow(node("top", partsQueue, &echo, nil,
				node("root", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_000},
					node("mid", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_001},
						node("leaf", queueName, &echo, nil)))))
			s.flow(node("r2", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_002},
				node("d1", queueName, &echo, later),
				node("d2", partsQueue, &echo, nil)))
			checkpoint("added")
			s.drain(queueName, false)
			checkpoint("drained")
			s.drain(queueName, true)
			checkpoint("drained with delayed")
		})
	})

	t.Run("ObliterateParentsQueue", func(t *testing.T) {
		t.Parallel()
		differential(t, setup, func(s side, checkpoint func(string)) {
			// q holds root and mid; their children and top are in parts.
			s.flow(node("top", partsQueue, &echo, nil,
				node("root", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_000},
					node("mid", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_001},
						node("leaf", partsQueue, &echo, later)),
					node("c1", partsQueue, &echo, nil))))
			checkpoint("added")
			s.obliterate(queueName)
			checkpoint("parents' queue obliterated")
			s.work(partsQueue, by, 1)
			checkpoint("an orphaned child completed")
		})
	})

	t.Run("CleanCompletedParent", func(t *testing.T) {
		t.Parallel()
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.flow(node("root", queueName, &echo, nil,
				node("c1", partsQueue, &echo, nil),
				node("c2", partsQueue, &echo, nil)))
			s.work(partsQueue, by, 2)
			s.work(queueName, by, 1)
			checkpoint("flow completed")
			record("cleaned", s.clean(queueName, drover.StateCompleted))
			checkpoint("parent cleaned, children kept")
			s.retry(partsQueue, "c1", drover.StateCompleted)
			checkpoint("orphan child retried")
			s.work(partsQueue, by, 3)
			checkpoint("orphan child completed again")
			s.remove(partsQueue, "c2")
			checkpoint("orphan child removed")
		})
	})

	t.Run("RetryFailedParent", func(t *testing.T) {
		t.Parallel()
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.flow(node("root", queueName, &echo, nil,
				node("bad", partsQueue, &fail, map[string]any{"failParentOnFailure": true}),
				node("good", partsQueue, &echo, later)))
			s.work(partsQueue, by, 1)
			s.work(queueName, by, 1)
			checkpoint("parent failed")
			s.retry(queueName, "root", drover.StateFailed)
			checkpoint("parent retried")
			s.work(queueName, by, 2)
			checkpoint("parent failed again: a failed child")
			record("root", s.reads(queueName, "root"))
			s.retryJobs(partsQueue, drover.StateFailed)
			checkpoint("child retried")
			record("root", s.reads(queueName, "root"))
		})
	})

	t.Run("AdminOnWaitingChildren", func(t *testing.T) {
		t.Parallel()
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			s.flow(node("root", queueName, &echo, map[string]any{"priority": 2},
				node("c1", partsQueue, &echo, nil)))
			s.flow(node("root2", queueName, &echo, map[string]any{"delay": 3_600_000},
				node("c2", partsQueue, &echo, nil)))
			record("changePriority", s.changePriorityOn(queueName, "root", 5))
			record("changeDelay", s.changeDelayOn(queueName, "root", time.Hour))
			record("promote", s.promoteOn(queueName, "root2"))
			record("changeDelay2", s.changeDelayOn(queueName, "root2", 2*time.Hour))
			checkpoint("admin calls on parents in waiting-children")
			s.pauseQueue(queueName, true)
			s.work(partsQueue, by, 2)
			checkpoint("children done, parents' queue paused")
			s.pauseQueue(queueName, false)
			checkpoint("resumed")
			s.work(queueName, by, 1)
			checkpoint("prioritized parent ran")
		})
	})

	t.Run("GetFlowBounds", func(t *testing.T) {
		t.Parallel()
		differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
			// Fixed timestamps: Node stamps each job as it builds it, so
			// due times and the waiting-children order would vary.
			ts := func(ms int64, opts map[string]any) map[string]any {
				o := map[string]any{"timestamp": 1_700_000_000_000 + ms}
				for k, v := range opts {
					o[k] = v
				}
				return o
			}
			var many []bullmqoracle.FlowJob
			for i := range 15 {
				many = append(many, node(fmt.Sprintf("k%03d", i), partsQueue, &echo, ts(9, later)))
			}
			s.addFlow(node("root", queueName, &echo, ts(0, nil),
				node("a", queueName, &echo, ts(1, nil),
					node("a1", partsQueue, &echo, nil,
						node("a11", partsQueue, &echo, nil,
							node("a111", partsQueue, &echo, nil)))),
				node("b", queueName, &echo, ts(2, nil), many...),
				node("c", partsQueue, &fail, map[string]any{"ignoreDependencyOnFailure": true}),
				node("d", partsQueue, &fail, ts(9, map[string]any{"failParentOnFailure": true, "delay": 3_600_000}))))
			s.work(partsQueue, by, 4)
			checkpoint("added, c failed, a's chain completed")
			for _, depth := range []int{1, 2, 3, 4, 5} {
				record(fmt.Sprintf("depth %d", depth), s.getFlow(queueName, "root", depth, 0))
			}
			// Redis 7.0 keeps these sets as hash tables, where a SSCAN
			// COUNT below the set's size returns whichever buckets come
			// first, which differs between runs: only bounds at or above
			// the sizes are compared.
			for _, maxc := range []int{15, 40} {
				record(fmt.Sprintf("root maxChildren %d", maxc), s.getFlow(queueName, "root", 0, maxc))
			}
		})
	})
}

// TestDifferentialFlowExistingMiddle: a flow names as a middle job (one
// with children of its own) an id that exists: waiting for its own
// children, completed, or failed. BullMQ attaches the existing job to the
// new parent and adds the new children under it all the same.
//
//	go test -count=1 -run 'TestDifferentialFlowExistingMiddle' ./internal/interoptest/
func TestDifferentialFlowExistingMiddle(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("broke")
	by := bullmqoracle.FromData("behavior")
	later := map[string]any{"delay": 3_600_000}
	for _, tc := range []struct {
		name  string
		parts int // the parts queue's finished jobs once the flow's children ran
		setup func(s side)
	}{
		{"WaitingChildren", 2, func(s side) {
			s.flow(node("m", queueName, &echo, nil, node("g1", partsQueue, &echo, later)))
		}},
		{"Completed", 3, func(s side) {
			s.flow(node("m", queueName, &echo, nil, node("g1", partsQueue, &echo, nil)))
			s.work(partsQueue, by, 1)
			s.work(queueName, by, 1)
		}},
		{"Failed", 2, func(s side) {
			s.nodeAdd(queueName, "m", map[string]any{"behavior": fail}, map[string]any{"jobId": "m"})
			s.work(queueName, by, 1)
		}},
		{"Waiting", 2, func(s side) {
			s.nodeAdd(queueName, "m", map[string]any{"behavior": echo}, map[string]any{"jobId": "m", "delay": 3_600_000})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
				tc.setup(s)
				checkpoint("set up")
				s.addFlow(node("p2", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_000},
					node("m", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_001},
						node("g2", partsQueue, &echo, nil)),
					node("c2", partsQueue, &echo, nil)))
				checkpoint("flow naming m added")
				record("p2", s.reads(queueName, "p2"))
				record("m", s.reads(queueName, "m"))
				s.work(partsQueue, by, tc.parts)
				checkpoint("children worked")
				record("p2", s.reads(queueName, "p2"))
				record("m", s.reads(queueName, "m"))
			})
		})
	}
}

// TestDifferentialFlowChildrenInPages: 300 children attached to an existing
// parent in pages of 100, Node with Queue.addBulk and the parent option,
// drover with FlowProducer.AddBulk of lone roots with FlowJob.Parent; then
// worked, the parent holding every value.
//
//	go test -count=1 -run 'TestDifferentialFlowChildrenInPages' ./internal/interoptest/
func TestDifferentialFlowChildrenInPages(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	differentialReads(t, setup, func(s side, checkpoint func(string), record func(string, any)) {
		ctx := context.Background()
		s.nodeAdd(queueName, "p", map[string]any{}, map[string]any{"jobId": "p", "delay": 3_600_000})
		parent := map[string]any{"id": "p", "queue": s.b.prefix + ":" + queueName}
		fp, err := drover.NewFlowProducer(s.b.rdb, &drover.FlowProducerOptions{Prefix: s.b.prefix})
		require.NoError(t, err)
		for page := range 3 {
			var nodeJobs []bullmqoracle.BulkJob
			var flows []drover.FlowJob
			for i := range 100 {
				id := fmt.Sprintf("c%03d", page*100+i)
				data := map[string]any{"n": page*100 + i}
				nodeJobs = append(nodeJobs, bullmqoracle.BulkJob{Name: "c", Data: data,
					Opts: map[string]any{"jobId": id, "parent": parent, "timestamp": 1_700_000_000_000}})
				flows = append(flows, drover.FlowJob{Name: "c", QueueName: partsQueue, Data: data,
					Parent: &drover.JobRef{Prefix: s.b.prefix, Queue: queueName, ID: "p"},
					Opts:   &drover.JobOptions{JobID: id, Timestamp: time.UnixMilli(1_700_000_000_000)}})
			}
			if s.by == nodeImpl {
				_, err := s.b.oracle.AddBulk(ctx, s.b.prefix, partsQueue, nodeJobs)
				require.NoError(t, err)
			} else {
				_, err := fp.AddBulk(ctx, flows)
				require.NoError(t, err)
			}
		}
		checkpoint("300 children added")
		s.work(partsQueue, bullmqoracle.Echo(), 300)
		checkpoint("children completed")
		r := s.reads(queueName, "p")
		record("values", len(r.Values))
	})
}

// TestDifferentialWaitChildrenAfterFailedChild: a processor calls
// moveToWaitingChildren after a child of its job failed with
// failParentOnFailure. BullMQ refuses the move with an UnrecoverableError
// ("Cannot complete job p because it has at least one failed child.
// moveToWaitingChildren"), so the job fails for good whatever its attempts.
//
//	go test -count=1 -run 'TestDifferentialWaitChildrenAfterFailedChild' ./internal/interoptest/
func TestDifferentialWaitChildrenAfterFailedChild(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	differential(t, setup, func(s side, checkpoint func(string)) {
		echo := bullmqoracle.Echo()
		park := bullmqoracle.Behavior{Kind: "waitChildren", Then: &echo}
		s.nodeAdd(queueName, "p", map[string]any{}, map[string]any{"jobId": "p", "attempts": 3})
		s.nodeAdd(partsQueue, "c", map[string]any{"behavior": bullmqoracle.Fail("child broke")}, map[string]any{
			"jobId": "c", "failParentOnFailure": true, "parent": map[string]any{"id": "p", "queue": s.b.prefix + ":" + queueName}})
		stop := s.b.startWorkerOn(s.t, s.by, queueName, workerSpec{behavior: bullmqoracle.WaitKey(s.gate(), park)})
		s.waitActive(queueName, "p")
		s.work(partsQueue, bullmqoracle.FromData("behavior"), 1)
		s.openGate()
		s.waitFinished(queueName, 1)
		stop()
		checkpoint("parent refused the move")
	})
}

// TestDifferentialLegacyChildWithoutParentField: a flow child stored with
// a parentKey but no parent field (as BullMQ versions before the failure
// policies stored children) releases its parent when it completes: BullMQ's
// moveToFinished reads the parent's id and queue from parentKey then. A
// failure without the field leaves the parent waiting, as in BullMQ (it
// has no policy to read), unless the child is removed as it fails
// (removeOnFail): then it leaves its parent's dependencies.
//
//	go test -count=1 -run 'TestDifferentialLegacyChildWithoutParentField' ./internal/interoptest/
func TestDifferentialLegacyChildWithoutParentField(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("broke")
	by := bullmqoracle.FromData("behavior")
	differential(t, setup, func(s side, checkpoint func(string)) {
		ctx := context.Background()
		s.flow(node("p", queueName, &echo, nil, node("c1", partsQueue, &echo, nil)))
		s.flow(node("p2", queueName, &echo, nil, node("c2", partsQueue, &fail, map[string]any{"failParentOnFailure": true, "delay": 1})))
		s.flow(node("p3", queueName, &echo, nil, node("c3", partsQueue, &fail, map[string]any{"removeOnFail": true, "delay": 2})))
		for _, id := range []string{"c1", "c2", "c3"} {
			require.NoError(t, s.b.rdb.HDel(ctx, s.b.prefix+":"+partsQueue+":"+id, "parent").Err())
		}
		checkpoint("legacy children")
		s.work(partsQueue, by, 3)
		checkpoint("children finished: p released, p2 waits, p3 released by c3's removal")
	})
}

// TestDifferentialFlowOtherPrefix: a flow whose children live under
// another prefix ("<prefix>:x", so one dump holds both), worked there, and
// read back with getFlow.
//
//	go test -count=1 -run 'TestDifferentialFlowOtherPrefix' ./internal/interoptest/
func TestDifferentialFlowOtherPrefix(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("broke")
	by := bullmqoracle.FromData("behavior")
	differentialReads(t, setup, func(s side, checkpointAll func(string), record func(string, any)) {
		other := newBundle(s.t, s.b.oracle, s.b.rdb, s.b.addr, s.b.prefix+":x")
		checkpoint := func(label string) {
			// drover's queue registry of the other prefix (drover's own
			// listing aid, which Node does not write) is under this
			// prefix's keys; the dump skips only this prefix's own.
			require.NoError(s.t, s.b.rdb.Del(context.Background(), keys.Registry(other.prefix)).Err())
			checkpointAll(label)
		}
		in := func(f bullmqoracle.FlowJob) bullmqoracle.FlowJob { f.Prefix = other.prefix; return f }
		s.addFlow(node("p", queueName, &echo, map[string]any{"timestamp": 1_700_000_000_000},
			in(node("m", partsQueue, &echo, map[string]any{"timestamp": 1_700_000_000_001},
				node("g", queueName, &echo, nil))),
			in(node("c1", partsQueue, &echo, nil)),
			in(node("c2", partsQueue, &fail, map[string]any{"ignoreDependencyOnFailure": true}))))
		checkpoint("added")
		record("flow", s.getFlow(queueName, "p", 0, 0))
		s.work(queueName, by, 1) // g: releases m in the other prefix
		o := side{s.t, other, s.by}
		o.work(partsQueue, by, 3)
		checkpoint("other prefix worked: p released")
		record("p", s.reads(queueName, "p"))
		s.work(queueName, by, 2)
		checkpoint("p completed")
		record("flow", s.getFlow(queueName, "p", 0, 0))
	})
}
