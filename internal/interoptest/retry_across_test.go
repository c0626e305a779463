package interoptest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropRetry finishes jobs with one implementation's worker, re-runs
// them with the other's manual retry (Job.Retry / job.retry(), Queue.RetryJobs
// / retryJobs) and completes them on that other side's worker. The attempt
// counters must be the ones BullMQ expects: each case also runs entirely on
// Node BullMQ under a second prefix, and the two Redis states and event
// sequences must be equal.
func TestInteropRetry(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	type retryMethod struct {
		bulk                  bool // Queue.RetryJobs / retryJobs; else Job.Retry / job.retry() per job
		resetMade, resetStart bool // Job.Retry's RetryOptions
		// fresh: the control room's "retry with fresh attempts" on the
		// drover side (inspect.RetryJob with reset, or inspect.RetryJobs
		// with ResetAttempts when bulk), on Node's job.retry(state,
		// {resetAttemptsMade: true, resetAttemptsStarted: true}) per job.
		fresh bool
	}
	tests := []struct {
		name string
		// first runs the first attempt(s); then does the retry and runs the
		// job again.
		first, then impl
		jobs        int
		firstState  string // failed or completed after the first worker
		method      retryMethod
		atm, ats    int64 // after the second run
	}{
		{name: "NodeFailedDroverJobRetry", first: nodeImpl, then: droverImpl, jobs: 1, firstState: "failed", atm: 3, ats: 3},
		{
			name: "NodeFailedDroverJobRetryResetAttempts", first: nodeImpl, then: droverImpl, jobs: 1, firstState: "failed",
			method: retryMethod{resetMade: true, resetStart: true}, atm: 1, ats: 1,
		},
		{name: "NodeFailedDroverRetryJobs", first: nodeImpl, then: droverImpl, jobs: 2, firstState: "failed", method: retryMethod{bulk: true}, atm: 3, ats: 3},
		{name: "NodeCompletedDroverJobRetry", first: nodeImpl, then: droverImpl, jobs: 1, firstState: "completed", atm: 2, ats: 2},
		{name: "DroverFailedNodeJobRetry", first: droverImpl, then: nodeImpl, jobs: 1, firstState: "failed", atm: 3, ats: 3},
		{
			name: "DroverFailedNodeJobRetryResetAttempts", first: droverImpl, then: nodeImpl, jobs: 1, firstState: "failed",
			method: retryMethod{resetMade: true}, atm: 1, ats: 3,
		},
		{name: "DroverFailedNodeRetryJobs", first: droverImpl, then: nodeImpl, jobs: 2, firstState: "failed", method: retryMethod{bulk: true}, atm: 3, ats: 3},
		{name: "DroverCompletedNodeJobRetry", first: droverImpl, then: nodeImpl, jobs: 1, firstState: "completed", atm: 2, ats: 2},
		// Fresh attempts reset attemptsStarted too, as Node's both resets
		// do. Before, inspect reset attemptsMade alone: ats 3, not 1.
		{name: "NodeFailedDroverInspectFreshRetry", first: nodeImpl, then: droverImpl, jobs: 1, firstState: "failed", method: retryMethod{fresh: true}, atm: 1, ats: 1},
		{name: "NodeFailedDroverInspectFreshBulkRetry", first: nodeImpl, then: droverImpl, jobs: 1, firstState: "failed", method: retryMethod{fresh: true, bulk: true}, atm: 1, ats: 1},
		{name: "DroverCompletedDroverInspectFreshRetry", first: droverImpl, then: droverImpl, jobs: 1, firstState: "completed", method: retryMethod{fresh: true}, atm: 1, ats: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			ctx := context.Background()
			firstBehavior := bullmqoracle.Fail("first run fails")
			if tt.firstState == "completed" {
				firstBehavior = bullmqoracle.Return("first")
			}
			retry := func(t *testing.T, b *bundle, by impl, ids []string) {
				t.Helper()
				m := tt.method
				switch {
				case m.fresh && by == nodeImpl:
					for _, id := range ids {
						require.NoError(t, b.oracle.RetryJob(ctx, b.prefix, queueName, id, tt.firstState, true, true))
					}
				case m.fresh:
					ins, err := inspect.New(b.rdb, &inspect.Options{Prefix: b.prefix})
					require.NoError(t, err)
					defer func() { require.NoError(t, ins.Close(ctx)) }()
					if m.bulk {
						res, err := ins.RetryJobs(ctx, queueName, &inspect.RetryOptions{State: drover.JobState(tt.firstState),
							ResetAttempts: true, IncludeUnrecoverable: true, Pause: -1})
						require.NoError(t, err)
						require.Equal(t, len(ids), res.Retried)
						break
					}
					for _, id := range ids {
						_, err := ins.RetryJob(ctx, queueName, id, true)
						require.NoError(t, err)
					}
				case m.bulk && by == nodeImpl:
					require.NoError(t, b.oracle.RetryJobs(ctx, b.prefix, queueName, bullmqoracle.RetryJobsOptions{State: tt.firstState}))
				case m.bulk:
					n, err := b.dq.RetryJobs(ctx, &drover.RetryJobsOptions{State: drover.JobState(tt.firstState)})
					require.NoError(t, err)
					require.Equal(t, len(ids), n)
				case by == nodeImpl:
					for _, id := range ids {
						require.NoError(t, b.oracle.RetryJob(ctx, b.prefix, queueName, id, tt.firstState, m.resetMade, m.resetStart))
					}
				default:
					for _, id := range ids {
						err := b.dq.Job(id).Retry(ctx, drover.JobState(tt.firstState),
							&drover.RetryOptions{ResetAttemptsMade: m.resetMade, ResetAttemptsStarted: m.resetStart})
						require.NoError(t, err)
					}
				}
			}
			run := func(b *bundle, first, then impl) []string {
				var ids []string
				for i := range tt.jobs {
					ids = append(ids, b.add(t, first, jobSpec{name: "r", data: payload("r", i), attempts: 2}))
				}
				stop := b.startWorker(t, first, workerSpec{behavior: firstBehavior})
				for _, id := range ids {
					b.waitFinal(t, id, 1)
				}
				stop()
				a := assertAgree(t, b, ids...)
				require.Equal(t, allCounts(tt.firstState, tt.jobs), a.counts)
				for _, id := range ids {
					nj := assertJobAgree(t, b, id)
					if tt.firstState == "failed" {
						require.EqualValues(t, 2, nj.AttemptsMade, "job %s failed after its 2 attempts", id)
						require.Len(t, nj.Stacktrace, 2)
					}
				}

				retry(t, b, then, ids)
				a = assertAgree(t, b, ids...)
				require.Equal(t, allCounts("waiting", tt.jobs), a.counts)
				for _, id := range ids {
					nj := assertJobAgree(t, b, id)
					require.Nil(t, nj.FinishedOn, "retry clears finishedOn of job %s", id)
					require.Nil(t, nj.ProcessedOn, "retry clears processedOn of job %s", id)
					require.Empty(t, nj.FailedReason, "retry clears failedReason of job %s", id)
				}

				stop = b.startWorker(t, then, workerSpec{behavior: bullmqoracle.Return("ok")})
				for _, id := range ids {
					b.waitFinal(t, id, 2)
				}
				stop()
				a = assertAgree(t, b, ids...)
				require.Equal(t, allCounts("completed", tt.jobs), a.counts)
				for _, id := range ids {
					nj := assertJobAgree(t, b, id)
					require.JSONEq(t, `"ok"`, string(nj.ReturnValue))
					require.Equal(t, tt.atm, nj.AttemptsMade, "attemptsMade of job %s", id)
					require.Equal(t, tt.ats, nj.AttemptsStarted, "attemptsStarted of job %s", id)
					if tt.firstState == "failed" {
						require.Len(t, nj.Stacktrace, 2, "a retry keeps the stacktrace of job %s", id)
					}
				}
				return eventLines(b.events(t))
			}
			mixed := setup(t)
			ref := mixed.sibling(t)
			mixedEvents := run(mixed, tt.first, tt.then)
			refEvents := run(ref, nodeImpl, nodeImpl)
			require.Equal(t, refEvents, mixedEvents, "events: Node only (expected) vs mixed")
			requireSameState(t,
				comparableDump(t, ref.rdb, ref.prefix, dumpOptions{workersRan: true}),
				comparableDump(t, mixed.rdb, mixed.prefix, dumpOptions{workersRan: true}))
		})
	}
}
