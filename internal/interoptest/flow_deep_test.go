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
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
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
