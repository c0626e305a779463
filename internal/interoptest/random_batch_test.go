package interoptest_test

import (
	"testing"

	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// TestDifferentialBatchSameMsTrim (campaign seed 451326424, shrunk): a
// batch finish fails three jobs in one drover call, which stamps them
// with one finishedOn, and a later count trim keeps by id among them.
// The harness' Node step finished them a few ms apart, which keeps the
// last finished, and reported a divergence; Node's step now finishes a
// batch in one clock reading, as a Node worker's calls within one
// millisecond do.
func TestDifferentialBatchSameMsTrim(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 451326424, Steps: []difftest.Step{
		{Op: difftest.OpAddBulk, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j6", Data: map[string]any{"n": 6}}, {Name: "j8", Data: map[string]any{"n": 8}, SizeLimit: 7},
			{Name: "j9", Data: map[string]any{"n": 9}, LIFO: true, StackTraceLimit: 2},
		}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input", FetchNext: true}, Concurrency: 4},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j10", Data: map[string]any{"n": 10}, RemoveOnFail: &difftest.Retention{Count: difftest.Ptr(3)}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
	}})
}

// TestDifferentialBatchSameMsRetryJobs (campaign seed 11931, shrunk): the
// same for retryJobs, which moves failed jobs back in the failed set's
// order (ties by id).
func TestDifferentialBatchSameMsRetryJobs(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 11931, Steps: []difftest.Step{
		{Op: difftest.OpAddBulk, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j5", Data: map[string]any{"n": 5}, JobID: "c2", KeepLogs: 2, StackTraceLimit: 1}, {Name: "j11", Data: map[string]any{"n": 11}},
		}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input", FetchNext: true}, Concurrency: 4},
		{Op: difftest.OpRetryJobs, By: difftest.Node, State: "failed"},
	}})
}
