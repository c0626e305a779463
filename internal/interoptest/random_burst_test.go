package interoptest_test

import (
	"testing"

	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// TestDifferentialMixedBurst: plain and custom-id adds released together
// from goroutines (drover's group commit sends them in batches, pure
// plain batches to addPlainJobs, the rest to addJobs, in an order of its
// own) store what BullMQ's adds one after another in that order store:
// ids, lists, priorities, events and the id counter, job for job. A
// custom id taken by an earlier burst is a duplicate; workers then take
// the jobs in the order both stored them.
func TestDifferentialMixedBurst(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	burst := func(first int, ids ...string) difftest.Step {
		s := difftest.Step{Op: difftest.OpAddMixedBurst, By: difftest.Drover}
		for k, id := range ids {
			n := first + k
			a := &difftest.Add{Name: "j" + string(rune('a'+n)), Data: map[string]any{"n": n}, JobID: id, TimestampAgo: 17 * 60_000}
			switch n % 4 {
			case 1:
				a.Priority = 1 + n%3
			case 2:
				a.LIFO = true
			}
			s.Children = append(s.Children, a)
		}
		return s
	}
	for range 3 {
		requireNoDivergence(t, b, &difftest.Program{Seed: 1, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j0", Data: map[string]any{"n": 0}}},
			burst(1, "", "m1", "", "", "m:a", "", "m b", ""),
			burst(9, "m1", "", "m2", ""),
			{Op: difftest.OpGetJobs, By: difftest.Drover, State: "wait", Limit: 20},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 3},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete"}},
		}})
	}
}

// TestDifferentialWaitFinished: Job.waitUntilFinished against drover's
// Job.WaitUntilFinished on a completed job (its value, an object whose
// keys JSON.stringify orders), a failed one (its reason), one still
// waiting (neither finishes in the moment) and a missing one.
func TestDifferentialWaitFinished(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, by := range []difftest.Impl{difftest.Drover, difftest.Node} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 1, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
			{Op: difftest.OpWork, By: by, Outcome: &difftest.Outcome{Kind: "complete", Value: map[string]any{"b": 1, "a": []any{1.5, "x"}}}},
			{Op: difftest.OpWork, By: by, Outcome: &difftest.Outcome{Kind: "unrecoverable", Message: "bad input"}},
			{Op: difftest.OpWaitFinished, By: by, Job: "j1"},
			{Op: difftest.OpWaitFinished, By: by, Job: "j2"},
			{Op: difftest.OpWaitFinished, By: by, Job: "j3"},
			{Op: difftest.OpWaitFinished, By: by, Job: "nosuch"},
		}})
	}
}
