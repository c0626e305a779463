package interoptest_test

import (
	"testing"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestDifferentialFlowAttachRunningJob: a flow that names a running job
// (one without a parent, taken by a worker) as a child attaches it, as
// BullMQ's updateExistingJobsParent does; when that job finishes, its
// worker updates the new parent (processed value, failure policy, release),
// because BullMQ's moveToFinished reads the job's parent fields at finish
// time. A drover worker decided at fetch time that the job had no parent
// and left the parent in waiting-children for ever.
//
//	go test -count=1 -run 'TestDifferentialFlowAttachRunningJob' ./internal/interoptest/
func TestDifferentialFlowAttachRunningJob(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, tc := range []struct {
		name  string
		copts map[string]any
		then  bullmqoracle.Behavior
	}{
		{"Completes", nil, bullmqoracle.Return("v")},
		{"CompletesRemoved", map[string]any{"removeOnComplete": true}, bullmqoracle.Return("v")},
		{"FailsFailParent", map[string]any{"failParentOnFailure": true}, bullmqoracle.Fail("broke")},
		{"FailsIgnoreDependency", map[string]any{"ignoreDependencyOnFailure": true}, bullmqoracle.Fail("broke")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				s.nodeAdd(partsQueue, "x", map[string]any{"n": 1}, map[string]any{"jobId": "x"})
				stop := s.b.startWorkerOn(s.t, s.by, partsQueue, workerSpec{behavior: bullmqoracle.WaitKey(s.gate(), tc.then)})
				s.waitActive(partsQueue, "x")
				s.flow(node("p", queueName, nil, nil, node("x", partsQueue, nil, tc.copts)))
				checkpoint("running job attached to a new parent")
				s.openGate()
				s.waitFinished(partsQueue, 1)
				stop()
				checkpoint("child finished: parent updated")
			})
		})
	}
}
