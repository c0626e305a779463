package interoptest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// Regression tests printed by the randomized differential tester
// (TestDifferentialRandom) for divergences it found, each shrunk to a
// minimal program. Each failed before its fix.

// TestDifferentialRegressionDrainedOnDelay: a drover worker failing the only
// job with attempts and a backoff moves it to delayed; BullMQ writes
// "drained" only from moveToFinished (completed or failed for good), so the
// events stream must not get one here (campaign: 265 programs).
func TestDifferentialRegressionDrainedOnDelay(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 1, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}, Attempts: 2,
			Backoff: &difftest.Backoff{Type: "fixed", Delay: 3600000}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "delay", Delay: 3600000}},
	}})
}

// TestDifferentialRegressionRetentionShapes: drover adds jobs with
// removeOnComplete/removeOnFail in BullMQ's object form; drover must store
// the shape Node stores ({"count":0} was stored as false, i.e. keep, and
// {"count":2} as 2) and act on it alike (campaign: 1,252 programs).
func TestDifferentialRegressionRetentionShapes(t *testing.T) {
	t.Parallel()

	zero, two := 0, 2
	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 2, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1},
			RemoveOnComplete: &difftest.Retention{Object: true, Count: &zero}}},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2},
			RemoveOnFail: &difftest.Retention{Object: true, Count: &two}}},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3},
			RemoveOnComplete: &difftest.Retention{Object: true, Age: 3600, Count: &zero}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 3}},
	}})
}

// TestDifferentialRegressionDeferredFailureOfFailedParent (seed 666642830,
// shrunk): a failParentOnFailure child failing after its parent already
// failed for good must not leave a deferred failure (defa) on the parent,
// or a later retry of the parent fails at once without running.
func TestDifferentialRegressionDeferredFailureOfFailedParent(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 666642830, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Parent: "j1", OnParentFailure: "failParentOnFailure"}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
		{Op: difftest.OpRetry, By: difftest.Node, Job: "j1", State: "failed"},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
	}})
}

// TestDifferentialRegressionTrimEventOrder (seed 666643568, shrunk): a
// failure whose retention trims a failed flow child releases the child's
// parent; BullMQ trims before it writes the failed event, so the parent's
// "waiting" event comes first.
func TestDifferentialRegressionTrimEventOrder(t *testing.T) {
	t.Parallel()

	one := 1
	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 666643568, Steps: []difftest.Step{
		{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}},
			Children: []*difftest.Add{{Name: "j2", Data: map[string]any{"n": 2, "s": "żółw ✓"}, Attempts: 2,
				Backoff: &difftest.Backoff{Type: "fixed", Delay: 3600000}, KeepLogs: 2}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "unrecoverable", Message: "fatal"}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j7", Data: map[string]any{"n": 7},
			RemoveOnFail: &difftest.Retention{Object: true, Age: 3600, Count: &one}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
	}})
}

// TestDifferentialUpdateData: Job.UpdateData stores the data bytes Node's
// job.updateData stores (no event), and both refuse a job that is gone.
func TestDifferentialUpdateData(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 3, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpUpdateData, By: difftest.Drover, Job: "j1", Value: map[string]any{"pct": 5, "path": "a/b", "s": "é<>&\u2028"}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpUpdateData, By: difftest.Drover, Job: "j1", Value: []any{1, "two", true}},
		{Op: difftest.OpUpdateData, By: difftest.Drover, Job: "j1", Value: nil},
		{Op: difftest.OpRemove, By: difftest.Node, Job: "j1"},
		{Op: difftest.OpUpdateData, By: difftest.Drover, Job: "j1", Value: 7},
		{Op: difftest.OpUpdateData, By: difftest.Drover, Job: "nosuch", Value: "v"},
	}})
}

// TestDifferentialRegressionDeferredFailureStep: a drover work step that
// takes a job with a deferred failure (its failParentOnFailure child failed)
// fails it without the processor; its result must be written without
// fetching the next job, as Node's one-job step (getNextJob + processJob,
// fetchNext false) does. Before, the drover step's finish call fetched the
// next ready job too (the harness limitation of the last campaigns, 16 of
// its 20 divergent programs), or, with only a delayed job left, wrote no
// "drained" where BullMQ's moveToFinished without fetchNext writes one
// (campaign seeds 433915263, 433916659, 433914141 at 2af0cd6, shrunk).
func TestDifferentialRegressionDeferredFailureStep(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	for _, tc := range []struct {
		name string
		p    difftest.Program
	}{
		{"NextJobReady", difftest.Program{Seed: 4, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}, Children: []*difftest.Add{
				{Name: "j2", Data: map[string]any{"n": 2}, OnParentFailure: "failParentOnFailure"},
				{Name: "j3", Data: map[string]any{"n": 3}}}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
		}}},
		{"Seed433915263", difftest.Program{Seed: 433915263, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}, Children: []*difftest.Add{
				{Name: "j4", Data: map[string]any{"n": 4}, JobID: "c4", RemoveOnFail: &difftest.Retention{Count: difftest.Ptr(3), Object: true, Age: 3600}, OnParentFailure: "failParentOnFailure"},
				{Name: "j5", Data: map[string]any{"n": 5}, Delay: 7200000, Attempts: 1, RemoveOnFail: &difftest.Retention{Count: difftest.Ptr(3)}}}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
		}}},
		{"Seed433916659", difftest.Program{Seed: 433916659, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j6", Data: map[string]any{"n": 6}}, Children: []*difftest.Add{
				{Name: "j8", Data: map[string]any{"n": 8}, Delay: 10800000, Attempts: 3, RemoveOnFail: &difftest.Retention{Count: difftest.Ptr(3), Object: true, Age: 3600}},
				{Name: "j9", Data: map[string]any{"n": 9}, LIFO: true, RemoveOnComplete: &difftest.Retention{Count: difftest.Ptr(0), Object: true, Age: 3600},
					RemoveOnFail: &difftest.Retention{Object: true, Age: 7200, Limit: 2}, KeepLogs: 1, StackTraceLimit: 1, OnParentFailure: "failParentOnFailure"}}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "unrecoverable", Message: "fatal"}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "delay", Delay: 7200000}},
		}}},
		{"Seed433914141", difftest.Program{Seed: 433914141, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Delay: 3600000, Parent: "j1", OnParentFailure: "failParentOnFailure"}},
			{Op: difftest.OpPromote, By: difftest.Node, Job: "j1"},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j9", Data: map[string]any{"n": 9}}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "delay", Delay: 7200000}},
			{Op: difftest.OpPromoteJobs, By: difftest.Node},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "delay", Delay: 7200000}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireNoDivergence(t, setup(t), &tc.p)
		})
	}
}

// TestDifferentialRegressionKeepLastIfActiveAdd (issue 10, item 1, from
// drover's producer): adds with Deduplication.KeepLastIfActive made while
// the owner is active (here: taken by a worker that died) keep the newest
// one in dn:<id> with a "deduplicated" event and the key's expiry removed,
// in each mode (simple, ttl + extend, ttl + replace); when the owner
// finishes the kept add is queued and runs, and a later add is
// deduplicated against it. Before, drover's producer could not set
// keepLastIfActive: its adds were stored as plain deduplication and kept
// nothing.
func TestDifferentialRegressionKeepLastIfActiveAdd(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	add := func(name string, by difftest.Impl, d difftest.Dedup, extra func(*difftest.Add)) difftest.Step {
		a := &difftest.Add{Name: name, Data: map[string]any{"n": name}, Dedup: &d}
		if extra != nil {
			extra(a)
		}
		return difftest.Step{Op: difftest.OpAdd, By: by, Add: a}
	}
	for _, tc := range []struct {
		name string
		d    difftest.Dedup
	}{
		{"Simple", difftest.Dedup{ID: "d1", KeepLastIfActive: true}},
		{"TTL", difftest.Dedup{ID: "d1", TTL: difftest.Hour, KeepLastIfActive: true}},
		{"Extend", difftest.Dedup{ID: "d1", TTL: difftest.Hour, Extend: true, KeepLastIfActive: true}},
		{"Replace", difftest.Dedup{ID: "d1", TTL: difftest.Hour, Replace: true, KeepLastIfActive: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireNoDivergence(t, setup(t), &difftest.Program{Seed: 5, Steps: []difftest.Step{
				add("j1", difftest.Drover, tc.d, nil),
				add("j2", difftest.Drover, tc.d, nil), // owner waiting: deduplicated, nothing kept
				{Op: difftest.OpStall, By: difftest.Node},
				add("j3", difftest.Drover, tc.d, nil),                                      // owner active: kept
				add("j4", difftest.Drover, tc.d, func(a *difftest.Add) { a.Priority = 2 }), // the newest kept
				{Op: difftest.OpCheckStalled, By: difftest.Node},
				{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
				add("j5", difftest.Drover, tc.d, nil), // deduplicated against the queued j4
				{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
				add("j6", difftest.Drover, tc.d, func(a *difftest.Add) { a.Delay = difftest.Hour }),
				add("j7", difftest.Drover, tc.d, nil),
			}})
		})
	}
}

// TestDifferentialRegressionSchedulerNextRunOpts (campaign seed 585926990,
// shrunk): the run a drover worker makes when it takes a job scheduler's
// run carries attempts 0 in its opts, as the run a Node worker makes
// (Node passes the run's Job.opts, which its Job constructor gave attempts
// 0). Before, drover's next run had no attempts key.
func TestDifferentialRegressionSchedulerNextRunOpts(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 585926990, Steps: []difftest.Step{
		{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}},
			Scheduler: &difftest.Scheduler{ID: "s2", Every: 3600000, Start: 10800000}},
		{Op: difftest.OpPromoteJobs, By: difftest.Node},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
	}})
}

// TestDifferentialRegressionSchedulerRunStalled (campaign seed 585926763,
// shrunk): a drover worker that takes a scheduler's run and dies has made
// the next run first, as Node's getNextJob does. Before, the tester's
// drover stall step (a bare moveToActive) made none.
func TestDifferentialRegressionSchedulerRunStalled(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 585926763, Steps: []difftest.Step{
		{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}},
			Scheduler: &difftest.Scheduler{ID: "s1", Every: 3600000, Start: 10800000, Limit: 2}},
		{Op: difftest.OpPromote, By: difftest.Node, Job: "j1"},
		{Op: difftest.OpStall, By: difftest.Drover},
		{Op: difftest.OpCheckStalled, By: difftest.Drover},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
	}})
}

// TestDifferentialDeliberateDifferences: the programs the campaign shrank
// each deliberate difference of difftest.Known to still diverge, and are
// classified as that difference (README's compatibility table gives the
// reasons). If one stops diverging, its entry and README row must go.
func TestDifferentialDeliberateDifferences(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	for _, tc := range []struct {
		name string
		want string // the start of the Known entry's name
		p    difftest.Program
	}{
		{"FlowChildUnderAnotherParent", "flow with a job id that is already", difftest.Program{Seed: 585926776, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j5", Data: map[string]any{"n": 5}},
				Children: []*difftest.Add{{Name: "j7", Data: map[string]any{"n": 7}, JobID: "c4"}}},
			{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j9", Data: map[string]any{"n": 9}},
				Children: []*difftest.Add{{Name: "j11", Data: map[string]any{"n": 11}, JobID: "c4", Delay: 10800000}}},
		}}},
		{"FlowChildWithTheParentsID", "flow with a job id used twice", difftest.Program{Seed: 585926930, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}, JobID: "c3"},
				Children: []*difftest.Add{{Name: "j3", Data: map[string]any{"n": 3}, JobID: "c3"}}},
		}}},
		{"DrainWithASchedulerRunInWait", "drain with a job scheduler's run", difftest.Program{Seed: 585926995, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j5", Data: map[string]any{"n": 5}, Attempts: 4}},
			{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j10", Data: map[string]any{"n": 10}},
				Scheduler: &difftest.Scheduler{ID: "s1", Every: 7200000, Start: 7200000, Limit: 1}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
			{Op: difftest.OpPromoteJobs, By: difftest.Node},
			{Op: difftest.OpDrain, By: difftest.Drover, Delayed: true},
		}}},
		{"WorkerAfterNodesDrain", "drain with a job scheduler's run", difftest.Program{Seed: 585927096, Steps: []difftest.Step{
			{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}},
				Scheduler: &difftest.Scheduler{ID: "s1", Every: 3600000, Start: 3600000, Limit: 2}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
			{Op: difftest.OpPromoteJobs, By: difftest.Node},
			{Op: difftest.OpDrain, By: difftest.Node, Delayed: true},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
		}}},
		{"RefusedAddDrawsNoID", "an add both refuse", difftest.Program{Seed: 136200054, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j10", Data: map[string]any{"n": 10}},
				Children: []*difftest.Add{{Name: "j13", Data: map[string]any{"n": 13}, JobID: "c4", Delay: 3600000}}},
			{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j17", Data: map[string]any{"n": 17}, JobID: "c4", Parent: "j13"}},
		}}},
		{"ReadersOfADrainedSchedulerRun", "drain with a job scheduler's run", difftest.Program{Seed: 136200263, Steps: []difftest.Step{
			{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}},
				Scheduler: &difftest.Scheduler{ID: "s2", Every: 3600000, Start: 3600000}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j8", Data: map[string]any{"n": 8}}},
			{Op: difftest.OpPromoteJobs, By: difftest.Node},
			{Op: difftest.OpDrain, By: difftest.Node},
		}}},
		{"SchedulerReplacedWhilePaused", "replacing a job scheduler while", difftest.Program{Seed: 216989508, Steps: []difftest.Step{
			{Op: difftest.OpPause, By: difftest.Node},
			{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j7", Data: map[string]any{"n": 7}},
				Scheduler: &difftest.Scheduler{ID: "s1", Every: 7200000, Start: 10800000, Limit: 1}},
			{Op: difftest.OpPromoteJobs, By: difftest.Node},
			{Op: difftest.OpUpsertScheduler, By: difftest.Drover, Add: &difftest.Add{Name: "j12", Data: map[string]any{"n": 12}},
				Scheduler: &difftest.Scheduler{ID: "s1", Every: 3600000, Start: 3600000}},
		}}},
		{"DefaultPolicyUnderOwn", "default job options with a failure policy", difftest.Program{Seed: 820491180, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j7", Data: map[string]any{"n": 7}},
				Children: []*difftest.Add{{Name: "j9", Data: map[string]any{"n": 9}, OnParentFailure: "ignoreDependencyOnFailure"}}},
		}, Defaults: &difftest.Add{OnParentFailure: "removeDependencyOnFailure"}}},
		{"OrphanNamedByTheDelayMarker", "removeOrphanedJobs of an orphaned job with id 1", difftest.Program{Seed: 820492980, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}, Delay: 10800000}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete"}},
			{Op: difftest.OpOrphan, By: difftest.Node, Job: "j3"},
			{Op: difftest.OpRemoveOrphanedJobs, By: difftest.Drover, Priority: 1000},
		}}},
		{"StalledPastTheLimitTakenByHand", "a job taken by hand that must not run", difftest.Program{Seed: 93649186, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j6", Data: map[string]any{"n": 6}}},
			{Op: difftest.OpStall, By: difftest.Node},
			{Op: difftest.OpCheckStalled, By: difftest.Node},
			{Op: difftest.OpCheckStalled, By: difftest.Node, Limit: -1},
			{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
		}}},
		{"LinkedRootRefusedChildrenAdded", "a flow whose root has a parent link to a missing job", difftest.Program{Seed: 215697440, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}, JobID: "c3"}},
			{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}, JobID: "c3", Parent: "j2"},
				Children: []*difftest.Add{{Name: "j4", Data: map[string]any{"n": 4}, OtherQueue: true}}},
		}}},
		{"OrphanSweepTakesFailedMetrics", "removeOrphanedJobs after a worker with the metrics", difftest.Program{Seed: 508424454, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}, Metrics: 2},
			{Op: difftest.OpRemoveOrphanedJobs, By: difftest.Drover, Priority: 1000},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := runDifferential(t, setup(t), &tc.p, false)
			require.NotNil(t, d, "the program no longer diverges")
			k := knownFor(&tc.p, d)
			require.NotNil(t, k, "divergence not classified: %s", d)
			require.True(t, strings.HasPrefix(k.Name, tc.want), "classified as %q: %s", k.Name, d)
		})
	}
}

// TestDifferentialRegressionSchedulerNextRunBackoff (campaign seed
// 136200209, shrunk): a Node scheduler whose template gives the backoff as
// a number; the run a drover worker makes next has it in object form
// ({type: fixed, delay}), as the run a Node worker makes (its Job
// constructor normalises the run's opts). Before, drover copied the number.
func TestDifferentialRegressionSchedulerNextRunBackoff(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 136200209, Steps: []difftest.Step{
		{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}, Attempts: 2,
			Backoff: &difftest.Backoff{Type: "fixed", Delay: 3600000, Number: true}},
			Scheduler: &difftest.Scheduler{ID: "s1", Every: 3600000, Start: 10800000}},
		{Op: difftest.OpPromote, By: difftest.Node, Job: "j1"},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
	}})
}

// TestDifferentialRegressionCleanLimitWindow (campaign seed 136201207,
// shrunk, and a delayed-set twin): Clean with a limit looks only at that
// many jobs, as BullMQ's clean does: the entries at the tail of a list, the
// oldest members of a sorted set; a scheduler's run among them is skipped,
// not replaced by the next job. Before, drover went on past the window and
// removed a job Node keeps.
func TestDifferentialRegressionCleanLimitWindow(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	for _, tc := range []struct {
		name string
		p    difftest.Program
	}{
		{"Wait", difftest.Program{Seed: 136201207, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j5", Data: map[string]any{"n": 5}}},
			{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j6", Data: map[string]any{"n": 6}},
				Scheduler: &difftest.Scheduler{ID: "s2", Every: 3600000, Start: 3600000, Limit: 2}},
			{Op: difftest.OpPromote, By: difftest.Node, Job: "j6"},
			{Op: difftest.OpStall, By: difftest.Node},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
			{Op: difftest.OpRetryJobs, By: difftest.Node, State: "failed"},
			{Op: difftest.OpClean, By: difftest.Drover, State: "wait", Limit: 1},
		}}},
		{"Delayed", difftest.Program{Seed: 6, Steps: []difftest.Step{
			{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}},
				Scheduler: &difftest.Scheduler{ID: "s1", Every: 3600000, Start: 3600000}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Delay: 5 * difftest.Hour}},
			{Op: difftest.OpClean, By: difftest.Drover, State: "delayed", Limit: 1},
			{Op: difftest.OpClean, By: difftest.Drover, State: "delayed", Limit: 2},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireNoDivergence(t, setup(t), &tc.p)
		})
	}
}

// TestDifferentialRegressionDedupReplaceKeepsDelayMarker: one bulk add of a
// delayed job and a job that replaces it through deduplication (replace
// mode). BullMQ marks the delayed job's due time in the marker set when it
// adds it, and removing the job does not take the mark back; drover set
// the mark once at the end of the batch, from what was still delayed then,
// so the marker had no delay entry (32-minute campaign, seed 526735608).
func TestDifferentialRegressionDedupReplaceKeepsDelayMarker(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 526735608, Steps: []difftest.Step{
		{Op: difftest.OpAddBulk, By: difftest.Drover, Children: []*difftest.Add{
			{Name: "j3", Data: map[string]any{"n": 3}, Delay: 3 * difftest.Hour, Dedup: &difftest.Dedup{ID: "d2", TTL: difftest.Hour}},
			{Name: "j4", Data: map[string]any{"n": 4}, Dedup: &difftest.Dedup{ID: "d2", TTL: difftest.Hour, Replace: true}},
		}},
	}})
}

// TestDifferentialRegressionManualWrongTokenPendingChild: a job taken by
// hand becomes a flow parent (a child added with the parent option) and is
// completed under another token. BullMQ's moveToFinished looks at the
// children first and answers -4 (pending dependencies); finishJobs
// answered -6 (lock taken): "code -4" (Node only) vs "code -6" (mixed).
func TestDifferentialRegressionManualWrongTokenPendingChild(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 920495382, Steps: []difftest.Step{
		{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}, Scheduler: &difftest.Scheduler{ID: "s2", Every: 3600000, Start: 7200000, Limit: 0}},
		{Op: difftest.OpPromote, By: difftest.Node, Job: "j1"},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tB"},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Parent: "j1"}},
		{Op: difftest.OpManualFinish, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}, Token: "tA"},
	}})
}

// TestDifferentialRegressionFinishAfterObliterate: a job taken by hand is
// obliterated, then failed: drover's refusal (job missing) wrote the
// default events cap into the queue's meta, which BullMQ's moveToFinished
// never writes: "q:meta: only in b (hash)". A refused finish writes
// nothing now.
func TestDifferentialRegressionFinishAfterObliterate(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 920495281, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tB"},
		{Op: difftest.OpObliterate, By: difftest.Node},
		{Op: difftest.OpManualFinish, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "unrecoverable", Message: "fatal"}, Token: "tB"},
	}})
}

// TestDifferentialRegressionTrimEventsKeepsCap: BullMQ's queue.trimEvents
// trims the events stream once; drover's TrimEvents also wrote its length
// into the queue's meta as the cap every later event is trimmed to:
// "q:meta: field opts.maxLenEvents: a="10000" b="0"" (campaign of the
// rate-limit/trimEvents generator, seeds 13, 14, 21 of 30).
func TestDifferentialRegressionTrimEventsKeepsCap(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 13, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpTrimEvents, By: difftest.Drover, Limit: 0},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpTrimEvents, By: difftest.Drover, Limit: 1000},
	}})
}

// TestDifferentialRegressionObliterateKeepsLimiter: BullMQ's obliterate
// deletes the queue's keys but not its rate limiter (a window or a
// queue.rateLimit runs out by its expiry); drover's deleted it too:
// "q:limiter: only in a (string)" (seeds 113, 116, 188 of 100-200).
func TestDifferentialRegressionObliterateKeepsLimiter(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 116, Steps: []difftest.Step{
		{Op: difftest.OpRateLimit, By: difftest.Node, Delay: 3600000},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpObliterate, By: difftest.Drover},
		{Op: difftest.OpSetGlobalRateLimit, By: difftest.Node, Limit: 1, Delay: 3600000},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
	}})
}

// TestDifferentialRegressionNullProgress: a progress set to null is stored
// as "null", which Node's job reads as 0 (JSON.parse, then ?? 0) and
// drover's as the JSON null it is; the job views compare drover's Progress
// as Node reads the same hash, so a stored null must read as 0 there too
// (seeds 940184215 and 940184243, campaign of 100-step programs).
func TestDifferentialRegressionNullProgress(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 940184243, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j12", Data: map[string]any{"n": 12}}},
		{Op: difftest.OpProgress, By: difftest.Node, Job: "j12"},
		{Op: difftest.OpGetJob, By: difftest.Drover, Job: "j12"},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j13", Data: map[string]any{"n": 13}}},
		{Op: difftest.OpProgress, By: difftest.Drover, Job: "j13"},
		{Op: difftest.OpGetJob, By: difftest.Drover, Job: "j13"},
		{Op: difftest.OpGetJob, By: difftest.Node, Job: "j13"},
	}})
}

// TestDifferentialRegressionDeferredNamesChild: a parent's deferred failure
// (failParentOnFailure) names the failed child by its key, which carries
// each run's own prefix; the job views compared the text as it was, so two
// all-Node runs of one program differed ("NONDETERMINISTIC", seed
// 608409575, campaign of 3,646 programs). The views now write the run's
// prefix as P, as they do for the parent key.
func TestDifferentialRegressionDeferredNamesChild(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 608409575, Steps: []difftest.Step{
		{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}, JobID: "fj4"},
			Children: []*difftest.Add{{Name: "j5", Data: map[string]any{"n": 5}, JobID: "fj5", Attempts: 1,
				OnParentFailure: "failParentOnFailure"}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
		{Op: difftest.OpGetJob, By: difftest.Node, Job: "j4"},
		{Op: difftest.OpGetJob, By: difftest.Drover, Job: "j4"},
	}})
}

// TestDifferentialRegressionManualCompleteFailedChild: a job taken by hand
// becomes a flow parent, its failParentOnFailure child fails while it is
// active, and it is then completed by hand. BullMQ's moveToFinished answers
// -9 (a failed child), drover ErrFailedChildren; the harness had no code for
// that refusal and stopped the campaign ("a refusal BullMQ has no code
// for", campaign of 100-step programs).
func TestDifferentialRegressionManualCompleteFailedChild(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 7, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Parent: difftest.TakenJob,
			Attempts: 1, OnParentFailure: "failParentOnFailure"}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
		{Op: difftest.OpManualFinish, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}, Token: "tA"},
	}})
}

// TestDifferentialMetricsAndReads pins the reads of the generator's read
// family on a program where each has something to read: worker metrics
// written by a Node and a drover worker (completed and failed, with
// maxDataPoints), job logs in both orders and negative ranges, counts by
// type with BullMQ's "waiting" and "wait" both given, isPaused, and a
// flow read to depth 2 and in full.
func TestDifferentialMetricsAndReads(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 3, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}},
			Children: []*difftest.Add{{Name: "j5", Data: map[string]any{"n": 5}, Children: []*difftest.Add{{Name: "j6", Data: map[string]any{"n": 6}}}},
				{Name: "j7", Data: map[string]any{"n": 7}, OtherQueue: true}}},
		{Op: difftest.OpLog, By: difftest.Node, Job: "j1", Line: "a"},
		{Op: difftest.OpLog, By: difftest.Drover, Job: "j1", Line: "b"},
		{Op: difftest.OpLog, By: difftest.Node, Job: "j1", Line: "c"},
		{Op: difftest.OpWork, By: difftest.Drover, Metrics: 2, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpWork, By: difftest.Node, Metrics: 60, Outcome: &difftest.Outcome{Kind: "complete", Value: 2}},
		{Op: difftest.OpWork, By: difftest.Drover, Metrics: 1, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpGetMetrics, By: difftest.Drover, State: "completed"},
		{Op: difftest.OpGetMetrics, By: difftest.Drover, State: "failed", Limit: 1},
		{Op: difftest.OpGetLogs, By: difftest.Drover, Job: "j1", LIFO: true, Limit: 2},
		{Op: difftest.OpGetLogs, By: difftest.Drover, Job: "j1", Priority: -2},
		{Op: difftest.OpGetLogs, By: difftest.Drover, Job: "j1", Priority: -1, LIFO: true},
		{Op: difftest.OpGetCountByTypes, By: difftest.Drover, Types: []string{"waiting", "wait", "completed"}},
		{Op: difftest.OpPause, By: difftest.Node},
		{Op: difftest.OpIsPaused, By: difftest.Drover},
		{Op: difftest.OpGetCountByTypes, By: difftest.Drover, Types: []string{"paused", "waiting-children"}},
		{Op: difftest.OpGetFlow, By: difftest.Drover, Job: "j4"},
		{Op: difftest.OpGetFlow, By: difftest.Drover, Job: "j4", Priority: 2, Limit: 5},
	}})
}

// TestDifferentialRegressionFlowBulkOrder (seed 950664739, shrunk): an
// AddBulk of two trees, a parent with a child and a lone job. BullMQ's
// FlowProducer.addBulk adds the jobs level by level across the trees
// (every root, then every root's children), so the lone root is in wait
// before the first tree's child, and its events come first; drover added
// tree after tree.
func TestDifferentialRegressionFlowBulkOrder(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 950664739, Steps: []difftest.Step{
		{Op: difftest.OpAddFlows, By: difftest.Drover, Children: []*difftest.Add{
			{Name: "j4", Data: map[string]any{"n": 4}, Children: []*difftest.Add{{Name: "j5", Data: map[string]any{"n": 5}},
				{Name: "j6", Data: map[string]any{"n": 6}, OtherQueue: true}}},
			{Name: "j7", Data: map[string]any{"n": 7}},
			{Name: "j8", Data: map[string]any{"n": 8}, Children: []*difftest.Add{{Name: "j9", Data: map[string]any{"n": 9}}}},
		}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpGetFlow, By: difftest.Drover, Job: "j8"},
	}})
}

// TestDifferentialWorkerRetention pins the work steps' worker retention
// options (BullMQ's KeepJobs objects): they apply to jobs without their
// own (j1, j3) and yield to a job's own (j2).
func TestDifferentialWorkerRetention(t *testing.T) {
	t.Parallel()

	zero, one := 0, 1
	keep := true
	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 4, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, RemoveOnComplete: &difftest.Retention{Bool: &keep}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1},
			WorkerRemoveOnComplete: &difftest.Retention{Object: true, Count: &zero}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 2},
			WorkerRemoveOnComplete: &difftest.Retention{Object: true, Count: &zero}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"},
			WorkerRemoveOnFail: &difftest.Retention{Object: true, Age: 3600, Count: &one}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"},
			WorkerRemoveOnFail: &difftest.Retention{Object: true, Age: 3600, Count: &one}},
	}})
}

// TestDifferentialManualWorkerOptions pins the program's manual workers'
// options: metrics and retention apply to jobs ended by hand on both
// sides (Node's moveToCompleted/moveToFailed read the worker's options).
func TestDifferentialManualWorkerOptions(t *testing.T) {
	t.Parallel()

	zero, one := 0, 1
	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 5, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
		{Op: difftest.OpManualFinish, By: difftest.Drover, Token: "tA", Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpManualTake, By: difftest.Node, Token: "tA"},
		{Op: difftest.OpManualFinish, By: difftest.Drover, Token: "tA", Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
		{Op: difftest.OpManualFinish, By: difftest.Node, Token: "tA", Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpGetMetrics, By: difftest.Drover, State: "failed"},
	}, Manual: &difftest.ManualWorker{Metrics: 2, RemoveOnComplete: &difftest.Retention{Object: true, Count: &zero},
		RemoveOnFail: &difftest.Retention{Object: true, Age: 3600, Count: &one}}})
}

// TestDifferentialRegressionOrphanState: a completed job whose id the
// completed set lost (the harness's OpOrphan, as BullMQ 5.66.6's age
// retention left such hashes) is in no state: Node's getState answers
// "unknown", drover's GetJobState answered "waiting" (its state lookup
// took any stored job in no sorted set and not active for a waiting one
// without looking in the lists): "state of job 1: Node getState
// "unknown", drover GetJobState "waiting"" (campaign seed 508424374).
func TestDifferentialRegressionOrphanState(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 508424374, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete"}},
		{Op: difftest.OpOrphan, By: difftest.Node, Job: "j3"},
	}})
}

// TestDifferentialOrphanRemoval: orphans of both finished sets (the
// harness's OpOrphan), read and then removed by drover's
// RemoveOrphanedJobs in SCAN steps of 10, leave the state, answers and
// events Node's removeOrphanedJobs leaves; a second call finds none.
func TestDifferentialOrphanRemoval(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 1, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete", Value: 12.5}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpLog, By: difftest.Node, Job: "j2", Line: "line 1"},
		{Op: difftest.OpOrphan, By: difftest.Node, Job: "j1"},
		{Op: difftest.OpOrphan, By: difftest.Node, Job: "j2"},
		{Op: difftest.OpGetJob, By: difftest.Drover, Job: "j2"},
		{Op: difftest.OpRemoveOrphanedJobs, By: difftest.Drover, Priority: 10},
		{Op: difftest.OpRemoveOrphanedJobs, By: difftest.Drover, Priority: 1000, Limit: 8},
		{Op: difftest.OpGetMeta, By: difftest.Drover},
		{Op: difftest.OpExportMetrics, By: difftest.Drover, LIFO: true},
	}})
}

// TestDifferentialGlobalConcurrencyZero: a global concurrency of 0 that
// Node stores (drover's SetGlobalConcurrency refuses it, deliberately)
// stops drover's takes as Node's: a manual take and a work step find
// nothing, the limits read as maxed with a cap of 0, and after the cap is
// removed drover takes the job.
func TestDifferentialGlobalConcurrencyZero(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 1, Steps: []difftest.Step{
		{Op: difftest.OpSetGlobalConcurrency, By: difftest.Node, Limit: 0},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
		{Op: difftest.OpGetLimits, By: difftest.Drover},
		{Op: difftest.OpGetMeta, By: difftest.Drover},
		{Op: difftest.OpRemoveGlobalConcurrency, By: difftest.Drover},
		{Op: difftest.OpManualTake, By: difftest.Drover, Token: "tA"},
	}})
}

// TestDifferentialRegressionResumeMarkerAtCap (campaign seed 93650732,
// shrunk): resuming a queue whose global concurrency is reached (a cap of
// 0, as a Node app may store) with jobs in wait writes the wake-up marker
// as BullMQ's resume does: it checks only that jobs are ready, not the
// cap. drover's resume wrote none at the cap. Paused or not before the
// resume, and with a job in wait or prioritized.
func TestDifferentialRegressionResumeMarkerAtCap(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	t.Run("NotPaused", func(t *testing.T) {
		requireNoDivergence(t, b, &difftest.Program{Seed: 93650732, Steps: []difftest.Step{
			{Op: difftest.OpSetGlobalConcurrency, By: difftest.Node},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
			{Op: difftest.OpResume, By: difftest.Drover},
		}})
	})
	t.Run("PausedPrioritized", func(t *testing.T) {
		requireNoDivergence(t, b, &difftest.Program{Seed: 93650732, Steps: []difftest.Step{
			{Op: difftest.OpPause, By: difftest.Node},
			{Op: difftest.OpSetGlobalConcurrency, By: difftest.Node},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}, Priority: 2}},
			{Op: difftest.OpResume, By: difftest.Drover},
		}})
	})
}

// TestDifferentialRegressionRefusedCompletionFetchesAfterFailure: a running
// drover worker completes a job that became a flow parent while it ran (a
// child added with the parent option). BullMQ's moveToFinished refuses the
// completion before it fetches anything, and the worker's moveToFailed
// (fetchNext) then fails the job (attempts 1) or retries it (attempts 2)
// and only then takes the next job. drover's finish script took the next
// job in the refused call, before the job failed: its "active" event came
// before "failed" and the failure's own drained/marker logic saw a job in
// flight (campaign seeds 969489722 and 969490376, shrunk).
func TestDifferentialRegressionRefusedCompletionFetchesAfterFailure(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, attempts := range []int{0, 2} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 969489722, Steps: []difftest.Step{
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Attempts: attempts}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}, Parent: "j2"}},
			{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}}},
			{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}},
		}})
	}
}

// TestDifferentialConcurrencyPair pins the concurrency-2 work step (two
// jobs in flight, finished in the order taken): a plain pair, a pair
// under a worker limiter of one take (the second take is refused), a
// parent whose completion is refused beside another job, a job that must
// not run taken in a pair, and a pair that fails with retries.
func TestDifferentialConcurrencyPair(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	add := func(name string, n int, a *difftest.Add) difftest.Step {
		if a == nil {
			a = &difftest.Add{}
		}
		a.Name, a.Data = name, map[string]any{"n": n}
		return difftest.Step{Op: difftest.OpAdd, By: difftest.Node, Add: a}
	}
	for _, tc := range []struct {
		name  string
		steps []difftest.Step
	}{
		{"plain", []difftest.Step{
			add("j1", 1, nil), add("j2", 2, &difftest.Add{Priority: 2}), add("j3", 3, nil),
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "complete", Value: 7}},
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "complete"}},
		}},
		{"limiter", []difftest.Step{
			add("j1", 1, nil), add("j2", 2, nil),
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, LimiterMax: 1, Outcome: &difftest.Outcome{Kind: "complete"}},
		}},
		{"refusedParent", []difftest.Step{
			add("j1", 1, nil), add("j2", 2, &difftest.Add{Parent: "j1", JobID: "pj2"}), add("j3", 3, nil),
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "complete"}},
		}},
		// A parent whose failParentOnFailure child failed must not run: it
		// fails as soon as it is taken and its slot takes another job
		// (campaign seed 931667370: the Node step took no third job).
		{"deferredFailureRefills", []difftest.Step{
			add("j2", 2, nil), add("j3", 3, &difftest.Add{Priority: 5}), add("j4", 4, &difftest.Add{Priority: 2}),
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j8", Data: map[string]any{"n": 8}},
				Children: []*difftest.Add{{Name: "j9", Data: map[string]any{"n": 9}, OnParentFailure: "failParentOnFailure"}}},
			{Op: difftest.OpWork, By: difftest.Node, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
			add("j11", 11, nil),
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		}},
		{"retries", []difftest.Step{
			add("j1", 1, &difftest.Add{Attempts: 2}), add("j2", 2, &difftest.Add{Attempts: 3}),
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
			{Op: difftest.OpWork, By: difftest.Drover, Concurrency: 2, Outcome: &difftest.Outcome{Kind: "unrecoverable", Message: "fatal"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireNoDivergence(t, b, &difftest.Program{Seed: 2, Steps: tc.steps})
		})
	}
}

// TestDifferentialRegressionObliterateCountListOrder: obliterate with a
// count smaller than a list takes that many jobs from the list's head
// (LRANGE 0..count-1), as BullMQ's removeListJobs does; drover's took them
// from the tail, so the jobs went in the opposite order and their flow
// parents in another queue were released to its wait list in the opposite
// order (campaign seed 931667552, shrunk).
func TestDifferentialRegressionObliterateCountListOrder(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	tree := func(n int) difftest.Step {
		return difftest.Step{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: fmt.Sprintf("j%d", n), Data: map[string]any{"n": n}},
			Children: []*difftest.Add{{Name: fmt.Sprintf("j%d", n+1), Data: map[string]any{"n": n + 1}, OtherQueue: true,
				Children: []*difftest.Add{{Name: fmt.Sprintf("j%d", n+2), Data: map[string]any{"n": n + 2}}}}}}
	}
	for _, count := range []int{1, 2} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 931667552, Steps: []difftest.Step{
			tree(1), tree(4), tree(7),
			{Op: difftest.OpObliterate, By: difftest.Drover, Limit: count},
		}})
	}
}

// TestDifferentialRegressionFailedReasonPrefix: a parent failed by a child
// with failParentOnFailure has a failedReason naming the child's key, run
// prefix included ("child <prefix>:q:c1 failed"); the tester compared the
// getJob read's reason raw, so the all-Node program diverged from itself
// (campaign seed 969491002). Reads now compare it with the prefix masked,
// as the deferred failure already was.
func TestDifferentialRegressionFailedReasonPrefix(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, by := range []difftest.Impl{difftest.Node, difftest.Drover} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 969491002, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j5", Data: map[string]any{"n": 5}, Attempts: 4,
				Backoff: &difftest.Backoff{Type: "fixed", Delay: 7200000}},
				Children: []*difftest.Add{{Name: "j6", Data: map[string]any{"n": 6}, JobID: "c1", OnParentFailure: "failParentOnFailure"}}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "bad input"}},
			{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete"}},
			{Op: difftest.OpGetJob, By: by, Job: "j5"},
		}})
	}
}

// TestDifferentialRegressionSchedulerNullData: a job scheduler upserted
// with a template whose data is JSON null. Node's Queue.upsertJobScheduler
// takes `data ?? {}`, so it stores no data field in the scheduler's hash
// and {} in its runs; drover stored "null" in both (campaign seed
// 118966054, shrunk; the generator's non-object data). A worker of either
// side then makes the next run from the template: the program works the
// first run too.
func TestDifferentialRegressionSchedulerNullData(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, by := range []difftest.Impl{difftest.Node, difftest.Drover} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 118966054, Steps: []difftest.Step{
			{Op: difftest.OpUpsertScheduler, By: difftest.Drover, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}, DataRaw: "null"},
				Scheduler: &difftest.Scheduler{ID: "s1", Every: 7200000, Start: 10800000, Limit: 2}},
			{Op: difftest.OpPromoteJobs, By: by},
			{Op: difftest.OpWork, By: by, Outcome: &difftest.Outcome{Kind: "complete"}},
			{Op: difftest.OpGetScheduler, By: by, Scheduler: &difftest.Scheduler{ID: "s1"}},
		}})
	}
}

// TestDifferentialRegressionFinishTrimsEventsFirst: on a queue whose events
// stream is capped (streams.events.maxLen, opts.maxLenEvents), BullMQ's
// moveToFinished trims the stream (XTRIM MAXLEN ~) before it writes the
// finish's events, which it adds untrimmed; drover's finish added its
// events with XADD MAXLEN ~, trimming after the first of them, so with
// the stream one entry short of a whole node over the cap it kept one node
// fewer than Node (campaign seeds 42 and 59 of the fixed set, with
// Program.EventsMaxLen; shrunk). Five jobs write ten entries, the take an
// eleventh: Node's trim before the finish's event finds nothing to remove
// (a node off would leave 7 < 8), drover's XADD at 12 removed one.
func TestDifferentialRegressionFinishTrimsEventsFirst(t *testing.T) {
	t.Parallel()

	b := newSmallStreamNodesSetup(t)(t)
	for _, w := range []difftest.Step{
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}, WorkerRemoveOnComplete: &difftest.Retention{Object: true, Count: difftest.Ptr(1)}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1, FetchNext: true}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}, Concurrency: 2},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}, Concurrency: 2},
	} {
		var steps []difftest.Step
		for n := 1; n <= 5; n++ {
			steps = append(steps, difftest.Step{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: fmt.Sprintf("j%d", n), Data: map[string]any{"n": n}}})
		}
		requireNoDivergence(t, b, &difftest.Program{Seed: 42, Steps: append(steps, w, w), EventsMaxLen: 8})
	}
}

// TestDifferentialEmptyNamedNodeScheduler pins the README's claim about a
// job scheduler a Node app upserted with a template named "" (drover's
// own upsert names such runs after the scheduler: a deliberate
// difference): a drover worker that takes its run names the next run ""
// as Node's does, and drover reads the scheduler as Node does.
func TestDifferentialEmptyNamedNodeScheduler(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 40922303, Steps: []difftest.Step{
		{Op: difftest.OpUpsertScheduler, By: difftest.Node, Add: &difftest.Add{Name: "j3", JobName: difftest.NoName, Data: map[string]any{"n": 3}},
			Scheduler: &difftest.Scheduler{ID: "s1", Every: 7200000, Start: 10800000}},
		{Op: difftest.OpPromoteJobs, By: difftest.Node},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
		{Op: difftest.OpGetScheduler, By: difftest.Drover, Scheduler: &difftest.Scheduler{ID: "s1"}},
	}})
}

// TestDifferentialRegressionFlowEmptyName: a flow job named "" (a tree of
// FlowProducer.add, a parent-linked add, which drover makes with its
// FlowProducer). BullMQ 6.7 adds it, as Queue.add does and as drover's
// Queue.Add did; drover's FlowProducer refused it ("FlowJob.Name must not
// be empty"; campaign seeds 40922489, 40922639 and 40922750, shrunk).
func TestDifferentialRegressionFlowEmptyName(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 40922750, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j3", JobName: difftest.NoName, Data: map[string]any{"n": 3}, JobID: "pj3", Parent: "j2"}},
		{Op: difftest.OpAddFlow, By: difftest.Drover, Add: &difftest.Add{Name: "j4", JobName: difftest.NoName, Data: map[string]any{"n": 4}},
			Children: []*difftest.Add{{Name: "j5", JobName: difftest.NoName, Data: map[string]any{"n": 5}, Delay: 3600000}}},
		{Op: difftest.OpAddFlows, By: difftest.Drover, Children: []*difftest.Add{{Name: "j6", JobName: difftest.NoName, Data: map[string]any{"n": 6}}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete"}},
	}})
}

// TestDifferentialRegressionBigIDCounter: adds without a custom id once the
// queue's id counter is past 10^14. Both sides' scripts make the id with
// Lua's tostring, 14 significant digits ("1e+14", "9.007199254741e+15"),
// and store the job's hash there; BullMQ's add answers that id, drover's
// Queue.Add and AddBulk answered the counter's value in full digits, an
// id no job had (campaign seed 27, shrunk; the plain add path and the
// general one, by bulk and by group commit).
func TestDifferentialRegressionBigIDCounter(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 27, Steps: []difftest.Step{
		{Op: difftest.OpSetIDCounter, By: difftest.Node, Delay: 9007199254740990},
		{Op: difftest.OpAddBulk, By: difftest.Drover, Children: []*difftest.Add{{Name: "j12", Data: map[string]any{"n": 12}, RemoveOnFail: &difftest.Retention{Object: true, Age: 3600, Limit: 2}}}},
		{Op: difftest.OpSetIDCounter, By: difftest.Node, Delay: 99_999_999_999_998},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j13", Data: map[string]any{"n": 13}}},
		{Op: difftest.OpAdd, By: difftest.Drover, Add: &difftest.Add{Name: "j14", Data: map[string]any{"n": 14}, Priority: 2}},
		{Op: difftest.OpAddBurst, By: difftest.Drover, Add: &difftest.Add{Name: "j15", Data: map[string]any{"n": 15}}, Limit: 3},
	}})
}

// TestDifferentialFlowAltPrefix: flow children under another key prefix
// (Add.AltPrefix: FlowJob.prefix), in both queues, below a parent that
// is then read, its other child worked, and removed, by each side.
func TestDifferentialFlowAltPrefix(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, by := range []difftest.Impl{difftest.Node, difftest.Drover} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 1, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: by, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}},
				Children: []*difftest.Add{{Name: "j2", Data: map[string]any{"n": 2}, AltPrefix: true},
					{Name: "j3", Data: map[string]any{"n": 3}, AltPrefix: true, OtherQueue: true},
					{Name: "j4", Data: map[string]any{"n": 4}}}},
			{Op: difftest.OpGetFlow, By: by, Job: "j1"},
			{Op: difftest.OpFlowRead, By: by, Job: "j1", Read: difftest.ReadDependenciesCount},
			{Op: difftest.OpWork, By: by, Outcome: &difftest.Outcome{Kind: "complete"}},
			{Op: difftest.OpRemove, By: by, Job: "j1"},
		}, EventsMaxLen: 3})
	}
}

// TestDifferentialStaleHashUnderAdd: an add without a custom id whose id
// has a hash left over (OpStaleHash: finish stamps two hours old, a
// return value, attempts), plain and not, by bulk and by burst, then
// cleaned from wait with and without a grace (the stale finishedOn is
// the job's age for BullMQ's clean), worked and read.
func TestDifferentialStaleHashUnderAdd(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, by := range []difftest.Impl{difftest.Node, difftest.Drover} {
		for _, grace := range []int64{0, difftest.Hour} {
			requireNoDivergence(t, b, &difftest.Program{Seed: 861102457, Steps: []difftest.Step{
				{Op: difftest.OpStaleHash, By: difftest.Node},
				{Op: difftest.OpAddBulk, By: by, Children: []*difftest.Add{{Name: "j5", Data: map[string]any{"n": 5}, Attempts: 4, StackTraceLimit: 1}}},
				{Op: difftest.OpStaleHash, By: difftest.Node, Limit: 1},
				{Op: difftest.OpAddBurst, By: by, Add: &difftest.Add{Name: "j6", Data: map[string]any{"n": 6}}, Limit: 2},
				{Op: difftest.OpStaleHash, By: difftest.Node},
				{Op: difftest.OpAdd, By: by, Add: &difftest.Add{Name: "j7", Data: map[string]any{"n": 7}, Priority: 2}},
				{Op: difftest.OpGetJob, By: by, Job: "j5"},
				{Op: difftest.OpClean, By: by, State: "wait", Delay: grace, Limit: 1},
				{Op: difftest.OpWork, By: by, Outcome: &difftest.Outcome{Kind: "complete"}},
				{Op: difftest.OpClean, By: by, State: "prioritized", Delay: grace},
				{Op: difftest.OpWork, By: by, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
			}})
		}
	}
}

// TestDifferentialFlowAltPrefixDelayed: delayed flow children under
// another prefix, whose delayed scores are compared to the minute as the
// run's queues' are (all-Node campaign seeds 77813528 and 77813760 differed
// from themselves by the score's milliseconds before the comparison
// normalised the alt:<queue> queues).
func TestDifferentialFlowAltPrefixDelayed(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	for _, by := range []difftest.Impl{difftest.Node, difftest.Drover} {
		requireNoDivergence(t, b, &difftest.Program{Seed: 77813528, Steps: []difftest.Step{
			{Op: difftest.OpAddFlow, By: by, Add: &difftest.Add{Name: "j9", Data: map[string]any{"n": 9}},
				Children: []*difftest.Add{{Name: "j11", Data: map[string]any{"n": 11}, Delay: 7200000, Priority: 4, AltPrefix: true},
					{Name: "j12", Data: map[string]any{"n": 12}, Delay: 3600000, AltPrefix: true, OtherQueue: true}}},
			{Op: difftest.OpRemove, By: by, Job: "j9"},
		}})
	}
}

// TestDifferentialRegressionBatchTrimMixedSpecs (campaign seed 30,
// shrunk): a drover worker at concurrency 2 fails two jobs in one
// finishJobs call, the first with the worker's removeOnFail {count: 1},
// the second keeping every failed job (its own removeOnFail false). BullMQ
// trims after each job, so the first job's trim runs before the second is
// failed and both stay; the batch trimmed once, after both were added,
// with the first job's count, and deleted the job that asked to be kept.
func TestDifferentialRegressionBatchTrimMixedSpecs(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 30, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j7", Data: map[string]any{"n": 7}, RemoveOnFail: &difftest.Retention{Bool: difftest.Ptr(false)}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom", FetchNext: true},
			WorkerRemoveOnFail: &difftest.Retention{Object: true, Count: difftest.Ptr(1)}, Concurrency: 2},
	}})
}

// TestDifferentialRegressionBatchTrimMixedSpecsStraight: the same on the
// path of a batch of plain completions (finishJobs' straight path): the
// first job keeps one completed job, the second every one; both stay, as
// after BullMQ's two moveToFinished calls.
func TestDifferentialRegressionBatchTrimMixedSpecsStraight(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 30, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}, RemoveOnComplete: &difftest.Retention{Count: difftest.Ptr(1)}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, RemoveOnComplete: &difftest.Retention{Bool: difftest.Ptr(false)}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1, FetchNext: true}, Concurrency: 2},
	}})
}

// TestDifferentialRegressionBatchTrimAgeLimit: two jobs completed in one
// batch, each with removeOnComplete {age: 3600, limit: 1}, after three
// completed jobs aged past the hour: BullMQ's two calls trim one expired
// job each, the batch trimmed once and removed one.
func TestDifferentialRegressionBatchTrimAgeLimit(t *testing.T) {
	t.Parallel()

	keep := &difftest.Retention{Object: true, Age: 3600, Limit: 1}
	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 30, Steps: []difftest.Step{
		{Op: difftest.OpAddBulk, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j1", Data: map[string]any{"n": 1}}, {Name: "j2", Data: map[string]any{"n": 2}}, {Name: "j3", Data: map[string]any{"n": 3}},
			{Name: "j4", Data: map[string]any{"n": 4}, RemoveOnComplete: keep}, {Name: "j5", Data: map[string]any{"n": 5}, RemoveOnComplete: keep},
		}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete", Value: 1}},
		{Op: difftest.OpAgeFinished, By: difftest.Node},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", Value: 1, FetchNext: true}, Concurrency: 2},
	}})
}

// TestDifferentialRegressionBatchParentBeforeChild (campaign seed 2156,
// shrunk): a job and a child added with the parent option are both taken
// by a drover worker at concurrency 2 and both complete. BullMQ's calls
// refuse the parent's completion (its child is pending) and fail it, then
// complete the child; the batch wrote the child's completion in the call
// that refused the parent and the parent's failure in the next, so the
// events came child first.
func TestDifferentialRegressionBatchParentBeforeChild(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 2156, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Parent: "j1"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 2},
	}})
}

// TestDifferentialRegressionBatchRefusedBeforeLater (the Known entry
// "batch-refused", campaign seed 10213): a drover worker at concurrency 2
// finishes a job that became a parent while it waited (a child added with
// the parent option, still in wait) and a plain job after it in one call.
// BullMQ's calls refuse the parent's completion and fail it, then complete
// the plain job; finishJobs completed the plain job in the call that
// refused the parent and the worker failed the parent in the next call, so
// the events came plain job first.
func TestDifferentialRegressionBatchRefusedBeforeLater(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 10213, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}, Parent: "j1"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 2},
	}})
	// Two refusals in a batch of four: the follow-up call that fails the
	// first refused job stops at the second.
	requireNoDivergence(t, b, &difftest.Program{Seed: 10213, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j4", Data: map[string]any{"n": 4}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j5", Data: map[string]any{"n": 5}, Parent: "j1"}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j6", Data: map[string]any{"n": 6}, Parent: "j3"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 4},
	}})
}

// TestDifferentialRegressionBatchRefusedOneTime (campaign seed 5000556,
// shrunk): a batch of four in which the second job's completion is refused
// (a flow root that a duplicate add made c1's parent) and the last job
// trims the completed set to two. The follow-up call that failed the
// refused job and finished the rest stamped them with its own time, later
// than the first call's, so the trim dropped the first call's job, where
// the batch's jobs share one finishedOn and a trim keeps by id among them.
func TestDifferentialRegressionBatchRefusedOneTime(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 5000556, Steps: []difftest.Step{
		{Op: difftest.OpAddFlows, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j12", Data: map[string]any{"n": 12}, RemoveOnComplete: &difftest.Retention{Count: difftest.Ptr(3)}},
			{Name: "j13", Data: map[string]any{"n": 13}, LIFO: true, Attempts: 2, Backoff: &difftest.Backoff{Type: "fixed", Delay: 3600000, Number: true}},
		}},
		{Op: difftest.OpAddBulk, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j15", Data: map[string]any{"n": 15}, JobID: "c1", Attempts: 2, Backoff: &difftest.Backoff{Type: "exponential", Delay: 3600000}},
			{Name: "j16", Data: map[string]any{"n": 16}, JobID: "c1", Delay: 7200000, Priority: 2, Attempts: 1, Backoff: &difftest.Backoff{Type: "exponential", Delay: 3600000}, Parent: "j12"},
			{Name: "j17", Data: map[string]any{"n": 17}, RemoveOnComplete: &difftest.Retention{Count: difftest.Ptr(2), Object: true}, RemoveOnFail: &difftest.Retention{Object: true, Age: 3600}},
		}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 4},
	}, AddChunk: 3})
}

// TestDifferentialRegressionBatchChildAfterRefusedParent (campaign seeds
// 6000595 and 6000652, shrunk): a drover batch holds a job that became a
// parent while it waited and, after it, that job's child. The batch was
// cut before the child, so the parent's refusal and failure went in calls
// of their own, whose fetch took the next job before the child's and the
// later jobs' completions (events: active 4 before completed 2 and c2),
// or wrote "drained" where BullMQ's last finish met the global rate limit.
// The call now stops at the refusal and the next one fails the parent and
// writes the rest, then fetches, as BullMQ's calls do.
func TestDifferentialRegressionBatchChildAfterRefusedParent(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 6000595, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpPromote, By: difftest.Node, Job: "j1"},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}, Parent: "j1"}},
		{Op: difftest.OpAddBulk, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j10", Data: map[string]any{"n": 10}, JobID: "c2", Attempts: 2, Backoff: &difftest.Backoff{Type: "stop", Delay: 0},
				RemoveOnComplete: &difftest.Retention{Bool: difftest.Ptr(true)}, RemoveOnFail: &difftest.Retention{Count: difftest.Ptr(1)}},
			{Name: "j11", Data: map[string]any{"n": 11}, StackTraceLimit: 2},
		}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 3},
	}})
	requireNoDivergence(t, b, &difftest.Program{Seed: 6000652, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpSetGlobalRateLimit, By: difftest.Node, Delay: 7200000, Limit: 2},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, Parent: "j1"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 3},
	}})
}

// TestDifferentialRegressionBatchParentAfterChild (campaign seed 7001850,
// shrunk, and a smaller program of the same): a drover batch of a child
// (taken first: lifo) and its parent after it. flowCut writes the child
// in a call of its own, so that the parent's completion finds it done;
// that call fetched for the free slots, so the next job's active came
// before the parent's completed, where BullMQ's worker fetches after its
// batch's last finish. The first call now fetches nothing. Whether the
// two results share a call depends on timing (the child's result may be
// written before the parent's processor returns, and then its call
// fetches, as a Node worker's would): 1 run in 30 diverged so, and a
// program is run up to three times (requireAgreesOnce).
func TestDifferentialRegressionBatchParentAfterChild(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireAgreesOnce(t, b, &difftest.Program{Seed: 7001850, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j3", Data: map[string]any{"n": 3}}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j2", Data: map[string]any{"n": 2}, LIFO: true, Parent: "j1"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 2},
	}})
	requireAgreesOnce(t, b, &difftest.Program{Seed: 7001850, Steps: []difftest.Step{
		{Op: difftest.OpAddFlow, By: difftest.Node, Add: &difftest.Add{Name: "j1", Data: map[string]any{"n": 1}}, Children: []*difftest.Add{
			{Name: "j2", Data: map[string]any{"n": 2}, OnParentFailure: "removeDependencyOnFailure"},
			{Name: "j3", Data: map[string]any{"n": 3}, OnParentFailure: "continueParentOnFailure"},
		}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "delay", Delay: 3600000}},
		{Op: difftest.OpAddBulk, By: difftest.Node, Children: []*difftest.Add{
			{Name: "j4", Data: map[string]any{"n": 4}, JobID: "c4", Attempts: 3, KeepLogs: 3},
			{Name: "j7", Data: map[string]any{"n": 7}, DataRaw: "{\"b\":1,\"a\":2,\"10\":3,\"2\":4}", JobName: "with space", RemoveOnComplete: &difftest.Retention{Bool: difftest.Ptr(true)}},
		}},
		{Op: difftest.OpChangePriority, By: difftest.Node, Job: "j6", Priority: 3},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom"}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "fail", Message: "boom", FetchNext: true}},
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j10", Data: map[string]any{"n": 10}, LIFORaw: "0", Parent: "j7"}},
		{Op: difftest.OpWork, By: difftest.Drover, Outcome: &difftest.Outcome{Kind: "complete", FetchNext: true}, Concurrency: 2},
	}, Manual: &difftest.ManualWorker{Metrics: 60}})
}

// requireAgreesOnce runs p up to three times and fails only when every run
// diverges: for a program whose drover batch depends on timing.
func requireAgreesOnce(t *testing.T, b *bundle, p *difftest.Program) {
	t.Helper()
	var d any
	for range 3 {
		got := runDifferential(t, b, p, false)
		if got == nil {
			return
		}
		d = got
	}
	t.Fatalf("divergence in %s (3 runs)\n%s", p, d)
}
