package interoptest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// crossQueueProgram has drover do the job and queue steps on the queue of
// flow children (difftest.OtherQueueName) whose parents wait in the
// program's queue, and the other way round: a retry, priority change,
// progress, log, data update, removal, stall past maxStalledCount, pause,
// clean, drain and obliterate there, a lone add there linked to a parent
// in the program's queue, a root there with a child in the program's
// queue, manual takes there (one waits for a child added in the program's
// queue, one completes and takes the next), and that queue's own default
// job options.
func crossQueueProgram() *difftest.Program {
	d := func(n int) map[string]any { return map[string]any{"n": n} }
	on := func(s difftest.Step) difftest.Step { s.OtherQueue, s.By = true, difftest.Drover; return s }
	fail := &difftest.Outcome{Kind: "fail", Message: "boom"}
	done := &difftest.Outcome{Kind: "complete", Value: "v"}
	return &difftest.Program{Seed: 13, OtherDefaults: &difftest.Add{KeepLogs: 1, Priority: 2}, Steps: []difftest.Step{
		{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j1", Data: d(1)}, Children: []*difftest.Add{
			{Name: "j2", Data: d(2), OtherQueue: true, OnParentFailure: "ignoreDependencyOnFailure"},
			{Name: "j3", Data: d(3), OtherQueue: true},
			{Name: "j4", Data: d(4), Children: []*difftest.Add{{Name: "j5", Data: d(5), OtherQueue: true, OnParentFailure: "failParentOnFailure"}}},
		}},
		on(difftest.Step{Op: difftest.OpAdd, Add: &difftest.Add{Name: "j6", Data: d(6), JobID: "pj6", Parent: "j1"}}),
		{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j7", Data: d(7), OtherQueue: true},
			Children: []*difftest.Add{{Name: "j8", Data: d(8)}}},
		on(difftest.Step{Op: difftest.OpChangePriority, Job: "j3", Priority: 1}),
		on(difftest.Step{Op: difftest.OpWork, Outcome: fail}),
		on(difftest.Step{Op: difftest.OpFlowRead, Job: "j7", Read: difftest.ReadDependenciesCount}),
		on(difftest.Step{Op: difftest.OpRetry, Job: "j3", State: "failed"}),
		on(difftest.Step{Op: difftest.OpProgress, Job: "j3", Value: 50}),
		on(difftest.Step{Op: difftest.OpLog, Job: "j3", Line: "one"}),
		on(difftest.Step{Op: difftest.OpLog, Job: "j3", Line: "two"}),
		on(difftest.Step{Op: difftest.OpUpdateData, Job: "j3", Value: "x"}),
		on(difftest.Step{Op: difftest.OpGetJob, Job: "j3"}),
		on(difftest.Step{Op: difftest.OpGetLogs, Job: "j3"}),
		on(difftest.Step{Op: difftest.OpWork, Outcome: done}),
		{Op: difftest.OpFlowRead, By: difftest.Drover, Job: "j1", Read: difftest.ReadDependencies},
		on(difftest.Step{Op: difftest.OpRemove, Job: "j6"}),
		on(difftest.Step{Op: difftest.OpStall}),
		// The first check marks it, the second moves it back to wait.
		on(difftest.Step{Op: difftest.OpCheckStalled}),
		on(difftest.Step{Op: difftest.OpCheckStalled}),
		{Op: difftest.OpGetCounts, By: difftest.Drover},
		on(difftest.Step{Op: difftest.OpPause}),
		on(difftest.Step{Op: difftest.OpGetCounts}),
		on(difftest.Step{Op: difftest.OpResume}),
		on(difftest.Step{Op: difftest.OpWork, Outcome: fail}),
		on(difftest.Step{Op: difftest.OpClean, State: "failed"}),
		on(difftest.Step{Op: difftest.OpGetJobs, State: "failed"}),
		{Op: difftest.OpGetFlow, By: difftest.Drover, Job: "j1"},
		// By hand there: a job taken waits for a child added in the
		// program's queue, another is completed with a next fetch.
		on(difftest.Step{Op: difftest.OpAdd, Add: &difftest.Add{Name: "j9", Data: d(9)}}),
		on(difftest.Step{Op: difftest.OpManualTake, Token: "tA"}),
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j10", Data: d(10), JobID: "pj10", Parent: difftest.TakenJob}},
		{Op: difftest.OpManualWaitChildren, By: difftest.Drover, Job: "j10"},
		on(difftest.Step{Op: difftest.OpAdd, Add: &difftest.Add{Name: "j11", Data: d(11)}}),
		on(difftest.Step{Op: difftest.OpManualTake, Token: "tA"}),
		{Op: difftest.OpManualFinish, By: difftest.Drover, Token: "tA", Outcome: &difftest.Outcome{Kind: "complete", Value: 11, FetchNext: true}},
		on(difftest.Step{Op: difftest.OpGetCounts}),
		on(difftest.Step{Op: difftest.OpDrain}),
		on(difftest.Step{Op: difftest.OpObliterate}),
		{Op: difftest.OpGetCounts, By: difftest.Drover},
	}}
}

// TestDifferentialCrossQueueSteps runs crossQueueProgram: the states,
// events and answers of both queues must be Node's. The generator makes
// such steps (Step.OtherQueue) in a fraction of programs; this program has
// every kind in one, so `make test` always runs them.
func TestDifferentialCrossQueueSteps(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	p := crossQueueProgram()
	requireNoDivergence(t, b, p)

	// The steps reach jobs there (not refused, not empty): the answers of
	// an all-Node run of the program, which the mixed run matched.
	r := newProgramRun(t, b, false, 0, p, false)
	defer r.close()
	got := make([]string, len(p.Steps))
	for i := range p.Steps {
		got[i] = r.step(&p.Steps[i], nodeImpl)
		t.Logf("%d %s -> %s", i, p.Steps[i].String(), got[i])
	}
	want := map[int]string{
		4:  "ok fj3", // priority 1 over the queue's default 2
		6:  "ok ",    // the retry of the failed child
		12: `ok ["two"] count=1`,
		15: "ok ", // the removal of the child linked to j1
		16: "ok fj2",
		18: "ok [fj2]",
		24: "ok [fj2]",
		28: "ok fj5",
		30: "ok moved", // fj5 waits for its child pj10 in the program's queue
		33: "code 0 next 7",
		34: "ok active=1 completed=2 delayed=0 failed=0 paused=0 prioritized=0 wait=0 waiting-children=2",
		37: "ok active=0 completed=0 delayed=0 failed=0 paused=0 prioritized=0 wait=2 waiting-children=2",
	}
	for i, w := range want {
		require.Equal(t, w, got[i], "step %d %s", i, p.Steps[i].String())
	}

}
