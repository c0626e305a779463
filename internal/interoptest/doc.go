// Package interoptest holds drover's interop and differential suites against
// Node BullMQ (pinned by internal/testkit/bullmqoracle). It has no library code:
// everything is in its _test.go files, run by `make test-interop`
// (go test -run 'Interop|Differential' ./internal/interoptest/), one line
// per scenario.
//
// # Interop
//
// TestInterop runs each queue scenario (plain, delayed, prioritized, LIFO,
// custom job id and its duplicate, paused queue, bulk add of 1,000, an idle
// worker woken by an add) in both directions: Node BullMQ adds and a drover
// Worker processes, then drover adds and a Node Worker processes. After
// every step, Node's getJobCounts()/getState() and drover's
// GetJobCounts/GetJobState must agree (assertAgree), and each finished job
// must read the same through Node's Queue.getJob and drover's GetJob
// (assertJobAgree). It also runs a Node and a drover worker on one queue,
// and a drover worker under a global concurrency Node set.
//
// TestInteropStalled kills a worker process of one implementation mid-job
// and lets the other's stalled checker recover (or, past maxStalledCount,
// fail) the job. TestInteropRetry fails a job with one implementation and
// retries it with the other (Job.Retry / job.retry(), Queue.RetryJobs /
// retryJobs). TestInteropEvents reads each side's events with the other's
// QueueEvents.
//
// # Differential
//
// TestDifferentialLayout, TestDifferentialLayoutAdmin and
// TestDifferentialRetry run the same operations once with Node BullMQ and
// once with drover, each under its own key prefix, dump both Redis states
// with internal/testkit/statedump, normalise them and require them to be equal. The
// few legitimate differences are removed by comparableDump; each exclusion
// is listed there with its reason. Retry scenarios also compare the event
// sequences (name, jobId, prev). TestInteropRetry and TestInteropStalled
// compare their mixed runs with the same scenario run by Node alone.
//
// TestDifferentialRandom runs the seeded random programs of
// internal/testkit/difftest step by step, once all Node and once mixed, and
// shrinks any divergence to a regression test (`make test-differential`,
// SEEDS=/DURATION= for campaigns).
//
// # Processes
//
// Each top-level test starts one Node driver (bullmqoracle.Start) shared by
// its subtests; every subtest has its own key prefix on the package's
// redis-server (internal/testkit/redistest). Stall tests run worker processes: a Node
// one (bullmqoracle.StartWorkerProcess) or a drover one, which is this test
// binary re-executed as TestDroverWorkerChild.
package interoptest
