package interoptest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// Stall timings: short, so a killed worker's job is recovered in about
// victimLock + 2*rescueInterval.
const (
	victimLock     = time.Second
	rescueInterval = 200 * time.Millisecond
)

// Environment of TestDroverWorkerChild.
const (
	childRedisEnv  = "INTEROPTEST_DROVER_CHILD_REDIS"
	childPrefixEnv = "INTEROPTEST_DROVER_CHILD_PREFIX"
)

// TestDroverWorkerChild is not a test on its own: killDroverWorkerMidJob
// runs this test binary again with childRedisEnv set, and this function then
// becomes a drover worker process that takes one job, prints "started <id>"
// and hangs until it is SIGKILLed.
func TestDroverWorkerChild(t *testing.T) {
	addr := os.Getenv(childRedisEnv)
	if addr == "" {
		return
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	w, err := drover.NewWorker(rdb, queueName, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		fmt.Printf("started %s\n", job.ID)
		select {} // only SIGKILL ends this process
	}), &drover.WorkerOptions{
		Prefix: os.Getenv(childPrefixEnv), Name: "victim", LockDuration: victimLock,
		// The stalled-check key is shared by the queue's workers: the victim
		// must not set it for its (default, long) interval.
		SkipStalledCheck: true,
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	select {}
}

// killWorkerMidJob starts a worker process of the given implementation,
// waits until it runs job id, and SIGKILLs it: the job stays active with a
// lock that expires after victimLock.
func killWorkerMidJob(t *testing.T, b *bundle, by impl, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if by == nodeImpl {
		victim := bullmqoracle.StartWorkerProcess(t, b.addr, b.prefix, queueName, bullmqoracle.WorkerOptions{
			Name: "victim", LockDuration: victimLock, SkipStalledCheck: true,
			Behavior: bullmqoracle.Sleep(time.Hour, nil),
		})
		_, err := victim.WaitFor(ctx, func(e bullmqoracle.WorkerEvent) bool { return e.Event == "active" && e.JobID == id })
		require.NoError(t, err)
		require.NoError(t, victim.Kill())
		return
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDroverWorkerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childRedisEnv+"="+b.addr, childPrefixEnv+"="+b.prefix)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "started "+id, strings.TrimSpace(line))
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// TestInteropStalled kills a worker process of one implementation mid-job
// and lets a worker of the other recover the job: it completes, or, past
// maxStalledCount, fails with BullMQ's reason. Each case also runs with
// Node BullMQ on both sides under a second prefix, and the Redis states and
// event sequences must be equal.
func TestInteropStalled(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	tests := []struct {
		name            string
		victim, rescuer impl
		maxStalledCount int
	}{
		{"NodeKilledDroverRecovers", nodeImpl, droverImpl, 1},
		{"NodeKilledDroverFailsPastMaxStalledCount", nodeImpl, droverImpl, 0},
		{"DroverKilledNodeRecovers", droverImpl, nodeImpl, 1},
		{"DroverKilledNodeFailsPastMaxStalledCount", droverImpl, nodeImpl, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			run := func(b *bundle, victim, rescuer impl) []string {
				id := b.add(t, victim, jobSpec{name: "stall", data: payload("stall", 0), attempts: 3})
				killWorkerMidJob(t, b, victim, id)
				a := assertAgree(t, b, id)
				require.Equal(t, "active", a.states[id], "a killed worker leaves its job active")

				stop := b.startWorker(t, rescuer, workerSpec{
					lockDuration: victimLock, stalledInterval: rescueInterval, maxStalledCount: &tt.maxStalledCount,
				})
				evs := b.waitFinal(t, id, 1)
				stop()

				a = assertAgree(t, b, id)
				nj := assertJobAgree(t, b, id)
				require.EqualValues(t, 1, nj.StalledCounter, "stc")
				require.EqualValues(t, 2, nj.AttemptsStarted, "ats: the killed run and the recovery")
				require.EqualValues(t, 1, nj.AttemptsMade, "atm: a stall spends no attempt, the final run does")
				require.Equal(t, workerName, nj.ProcessedBy)
				require.Empty(t, nj.DeferredFailure)
				if tt.maxStalledCount == 1 {
					require.Equal(t, "completed", a.states[id])
					require.JSONEq(t, string(nj.Data), string(nj.ReturnValue))
				} else {
					require.Equal(t, "failed", a.states[id])
					require.Equal(t, "job stalled more than allowable limit", nj.FailedReason)
					require.Len(t, nj.Stacktrace, 1)
				}
				lines := eventLines(evs)
				stalledAt := indexOf(lines, "stalled "+id)
				require.Positive(t, stalledAt, "stalled event in %v", lines)
				require.Equal(t, "waiting "+id+" prev=active", lines[stalledAt-1], "the stalled job went back to wait")
				return lines
			}
			mixed := setup(t)
			ref := mixed.sibling(t)
			mixedEvents := run(mixed, tt.victim, tt.rescuer)
			refEvents := run(ref, nodeImpl, nodeImpl)
			require.Equal(t, refEvents, mixedEvents, "events: Node only (expected) vs mixed")
			// Also dropped: the stalled-check key, a PX rescueInterval guard
			// whose presence at dump time depends on when the last check ran.
			nodeState := comparableDump(t, ref.rdb, ref.prefix, dumpOptions{workersRan: true})
			mixedState := comparableDump(t, mixed.rdb, mixed.prefix, dumpOptions{workersRan: true})
			delete(nodeState.Keys, queueName+":stalled-check")
			delete(mixedState.Keys, queueName+":stalled-check")
			requireSameState(t, nodeState, mixedState)
		})
	}
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}

// TestInteropStalledGlobalConcurrency: with a global concurrency of 1 (set
// by Node), the stalled job itself fills the active list until the checker
// takes it out, so the checker must judge "maxed" after moving it, as
// BullMQ does, and write the wake-up marker: an idle worker then takes the
// recovered job at once instead of after its drain delay (5 s on both
// sides).
func TestInteropStalledGlobalConcurrency(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	for _, tt := range []struct {
		name    string
		rescuer impl
	}{{"DroverRescuer", droverImpl}, {"NodeRescuer", nodeImpl}} {
		rescuer := tt.rescuer
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b := setup(t)
			ctx := context.Background()
			require.NoError(t, b.oracle.SetGlobalConcurrency(ctx, b.prefix, queueName, 1))
			id := b.add(t, nodeImpl, jobSpec{name: "stall", data: payload("stall", 0)})
			killWorkerMidJob(t, b, rescuer.other(), id)

			b.startWorker(t, rescuer, workerSpec{lockDuration: victimLock, stalledInterval: rescueInterval})
			b.waitEvents(t, 1, func(e drover.Event) bool { return e.Name == drover.EventStalled && e.JobID == id })
			b.waitEventsWithin(t, 3*time.Second, 1, func(e drover.Event) bool { return isCompleted(e) && e.JobID == id })
			a := assertAgree(t, b, id)
			require.Equal(t, "completed", a.states[id])
			nj := assertJobAgree(t, b, id)
			require.EqualValues(t, 1, nj.StalledCounter)
		})
	}
}

// TestDifferentialStalledLegacyRepeatable: a legacy repeatable job (BullMQ
// v5's, listed in the repeat sorted set by its legacy key, without a
// repeat:<key> hash) that stalls past maxStalledCount is not failed by
// BullMQ 6.7's stalled checker: it goes back to wait and runs again. A
// drover rescuer must keep it the same way; the Redis states and event
// sequences of a Node rescuer and a drover rescuer must be equal.
func TestDifferentialStalledLegacyRepeatable(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	const legacyKey = "job::::5000"
	zero := 0
	run := func(b *bundle, rescuer impl) []string {
		ctx := context.Background()
		// What BullMQ v5 left: the repeat sorted set lists the legacy key
		// by its next run; the run's id is repeat:<hash>:<ms>.
		require.NoError(t, b.rdb.ZAdd(ctx, b.prefix+":"+queueName+":repeat",
			redis.Z{Score: 1_600_000_005_000, Member: legacyKey}).Err())
		id, err := b.oracle.Add(ctx, b.prefix, queueName, "job", payload("legacy", 0), map[string]any{
			"jobId": "repeat:k1:1600000000000", "repeatJobKey": legacyKey,
			"repeat": map[string]any{"every": 5000, "count": 1}, "prevMillis": 1_600_000_000_000,
		})
		require.NoError(t, err)
		killWorkerMidJob(t, b, nodeImpl, id)

		stop := b.startWorker(t, rescuer, workerSpec{
			lockDuration: victimLock, stalledInterval: rescueInterval, maxStalledCount: &zero,
		})
		evs := b.waitFinal(t, id, 1)
		stop()
		a := assertAgree(t, b, id)
		require.Equal(t, "completed", a.states[id], "a legacy repeatable job is kept past maxStalledCount")
		return eventLines(evs)
	}
	mixed := setup(t)
	ref := mixed.sibling(t)
	refEvents := run(ref, nodeImpl)
	mixedEvents := run(mixed, droverImpl)
	require.Equal(t, refEvents, mixedEvents, "events: Node only (expected) vs drover rescuer")
	nodeState := comparableDump(t, ref.rdb, ref.prefix, dumpOptions{workersRan: true})
	mixedState := comparableDump(t, mixed.rdb, mixed.prefix, dumpOptions{workersRan: true})
	delete(nodeState.Keys, queueName+":stalled-check")
	delete(mixedState.Keys, queueName+":stalled-check")
	requireSameState(t, nodeState, mixedState)
}
