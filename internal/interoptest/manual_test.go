package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// BullMQ's ErrorCode values a manual call can be refused with.
const (
	codeOK           = 0
	codeMissingJob   = -1
	codeMissingLock  = -2
	codeNotActive    = -3
	codePendingDeps  = -4
	codeLockMismatch = -6
	codeFailedChild  = -9
)

// manual drives BullMQ's manual processing on one side: Node's
// worker.getNextJob and Job methods through the oracle's manual worker, or
// drover's Worker.NextJob and Job methods on a worker without a Processor.
// Every call answers BullMQ's code for the refusal (0: done), so both
// sides' refusals compare.
type manual struct {
	side
	w    *drover.Worker         // drover's manual worker (drover side)
	jobs map[string]*drover.Job // the jobs NextJob returned, by id
	// q, when set, reads the jobs NextJob did not return (else the
	// bundle's queue).
	q *drover.Queue
}

func newManual(s side) *manual {
	s.t.Helper()
	m := &manual{side: s, jobs: map[string]*drover.Job{}}
	if s.by == droverImpl {
		w, err := drover.NewWorker(s.b.rdb, queueName, nil, &drover.WorkerOptions{Prefix: s.b.prefix, Name: workerName,
			BackoffStrategies: droverStrategies})
		require.NoError(s.t, err)
		s.t.Cleanup(func() { _ = w.Close(context.Background()) })
		m.w = w
	}
	return m
}

// next takes the next job under token; "" when none is ready.
func (m *manual) next(token string) string {
	m.t.Helper()
	ctx := context.Background()
	if m.by == nodeImpl {
		id, err := m.b.oracle.ManualNext(ctx, m.b.prefix, queueName, token, nil)
		require.NoError(m.t, err)
		return id
	}
	job, err := m.w.NextJob(ctx, token, 0)
	require.NoError(m.t, err)
	if job == nil {
		return ""
	}
	m.jobs[job.ID] = job
	return job.ID
}

// job is the drover Job for id: the one NextJob returned, else read.
func (m *manual) job(id string) *drover.Job {
	m.t.Helper()
	if j, ok := m.jobs[id]; ok {
		return j
	}
	q := m.b.dq
	if m.q != nil {
		q = m.q
	}
	j, err := q.GetJob(context.Background(), id)
	require.NoError(m.t, err)
	return j
}

// code is BullMQ's code for a drover refusal.
func (m *manual) code(err error) int {
	m.t.Helper()
	return manualCode(m.t, err)
}

// manualCode is BullMQ's code for a refusal of drover's manual calls
// (Complete, Fail, MoveToDelayed, MoveToWait): 0 for none.
func manualCode(t *testing.T, err error) int {
	t.Helper()
	switch {
	case err == nil:
		return codeOK
	case errors.Is(err, drover.ErrJobNotFound):
		return codeMissingJob
	case errors.Is(err, drover.ErrLockLost):
		return codeMissingLock
	case errors.Is(err, drover.ErrNotInState):
		return codeNotActive
	case errors.Is(err, drover.ErrPendingDependencies):
		return codePendingDeps
	case errors.Is(err, drover.ErrJobLocked):
		return codeLockMismatch
	case errors.Is(err, drover.ErrFailedChildren):
		return codeFailedChild
	}
	require.NoError(t, err, "a refusal BullMQ has no code for")
	return 0
}

// node calls a manual Job method with Node and returns BullMQ's code.
func (m *manual) node(id, method string, args ...any) (int, json.RawMessage) {
	m.t.Helper()
	out, err := m.b.oracle.ManualCall(context.Background(), m.b.prefix, queueName, id, method, args...)
	require.NoError(m.t, err)
	if out.Error != nil {
		m.t.Logf("Node %s(%s): %s (code %d)", method, id, out.Error.Message, out.Error.Code)
		return out.Error.Code, nil
	}
	return codeOK, out.Result
}

func (m *manual) complete(id, token string, value any) int {
	m.t.Helper()
	if m.by == nodeImpl {
		c, _ := m.node(id, "moveToCompleted", value, token, false)
		return c
	}
	err := m.job(id).Complete(context.Background(), token, value)
	m.logErr("Complete", id, err)
	return m.code(err)
}

func (m *manual) fail(id, token, message string, unrecoverable bool) int {
	m.t.Helper()
	if m.by == nodeImpl {
		c, _ := m.node(id, "moveToFailed", map[string]any{"message": message, "unrecoverable": unrecoverable}, token, false)
		return c
	}
	err := errors.New(message)
	if unrecoverable {
		err = drover.Unrecoverable(err)
	}
	err = m.job(id).Fail(context.Background(), token, err)
	m.logErr("Fail", id, err)
	return m.code(err)
}

func (m *manual) delay(id, token string, until time.Time) int {
	m.t.Helper()
	if m.by == nodeImpl {
		c, _ := m.node(id, "moveToDelayed", until.UnixMilli(), token)
		return c
	}
	err := m.job(id).MoveToDelayed(context.Background(), token, until)
	m.logErr("MoveToDelayed", id, err)
	return m.code(err)
}

func (m *manual) toWait(id, token string) int {
	m.t.Helper()
	if m.by == nodeImpl {
		c, _ := m.node(id, "moveToWait", token)
		return c
	}
	err := m.job(id).MoveToWait(context.Background(), token)
	m.logErr("MoveToWait", id, err)
	return m.code(err)
}

// waitChildren moves the job taken with token to waiting-children if a
// child is pending, and reports whether it moved.
func (m *manual) waitChildren(id, token string) bool {
	m.t.Helper()
	if m.by == nodeImpl {
		c, res := m.node(id, "moveToWaitingChildren", token, map[string]any{})
		require.Equal(m.t, codeOK, c)
		return string(res) == "true"
	}
	j := m.job(id)
	require.Equal(m.t, token, m.tokenOf(id), "drover's MoveToWaitingChildren acts under the token NextJob took the job with")
	moved, err := j.MoveToWaitingChildren(context.Background(), nil)
	require.NoError(m.t, err)
	return moved
}

// tokenOf is the token drover's NextJob took job id with.
func (m *manual) tokenOf(id string) string {
	m.t.Helper()
	lock, err := m.b.rdb.Get(context.Background(), m.b.prefix+":"+queueName+":"+id+":lock").Result()
	require.NoError(m.t, err)
	return lock
}

// extend renews the lock and reports whether it was renewed (Node's
// extendLock answers 1 or 0; drover's refuses with an error).
func (m *manual) extend(id, token string, d time.Duration) bool {
	m.t.Helper()
	if m.by == nodeImpl {
		c, res := m.node(id, "extendLock", token, d.Milliseconds())
		require.Equal(m.t, codeOK, c)
		return string(res) == "1"
	}
	err := m.job(id).ExtendLock(context.Background(), token, d)
	m.logErr("ExtendLock", id, err)
	if err != nil {
		require.True(m.t, errors.Is(err, drover.ErrLockLost) || errors.Is(err, drover.ErrJobLocked), "%v", err)
	}
	return err == nil
}

func (m *manual) logErr(op, id string, err error) {
	if err != nil {
		m.t.Logf("drover %s(%s): %v", op, id, err)
	}
}

// TestDifferentialManualProcessing runs BullMQ's manual processing steps
// (take with a token, extend, complete, fail with attempts left with and
// without backoff, fail for good, fail unrecoverably, move to delayed, move
// back to wait, refusals for a wrong token, a finished job and a waiting
// one) once all with Node BullMQ and once all with drover, and requires the
// same answers and the same Redis state, events included, at each
// checkpoint.
func TestDifferentialManualProcessing(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	// e's delay is until minus the time of the call, in ms: 60000 or a
	// millisecond or two less on either side, by when the call ran.
	roundDelay := roundMinuteDelay(t, "e")
	checkpointed(t, setup, dumpOptions{workersRan: true, rewrite: roundDelay}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		s := side{t, b, by}
		m := newManual(s)
		add := s.addWithID
		add("a", nil)
		add("b", map[string]any{"attempts": 3, "backoff": map[string]any{"type": "fixed", "delay": 1000}})
		add("c", map[string]any{"attempts": 2})
		add("d", map[string]any{"attempts": 1})
		add("e", map[string]any{"attempts": 2})
		add("f", map[string]any{"attempts": 3, "removeOnFail": 5})
		add("g", map[string]any{"priority": 2, "removeOnComplete": true})
		checkpoint("added")

		require.Equal(t, "a", m.next("t1"))
		require.True(t, m.extend("a", "t1", time.Minute))
		checkpoint("a taken, lock extended")
		require.Equal(t, codeOK, m.complete("a", "t1", map[string]any{"ok": 1}))
		checkpoint("a completed")
		require.Equal(t, codeMissingLock, m.complete("a", "t1", "again"), "completing twice")
		require.Equal(t, codeMissingLock, m.toWait("a", "t1"), "a finished job")
		require.False(t, m.extend("a", "t1", time.Minute))
		checkpoint("a's second completion refused")

		require.Equal(t, "b", m.next("t2"))
		require.Equal(t, codeLockMismatch, m.complete("b", "wrong", 1))
		require.Equal(t, codeLockMismatch, m.fail("b", "wrong", "no", false))
		require.Equal(t, codeLockMismatch, m.delay("b", "wrong", time.Now().Add(time.Minute)))
		require.Equal(t, codeLockMismatch, m.toWait("b", "wrong"))
		require.False(t, m.extend("b", "wrong", time.Minute))
		checkpoint("wrong token refused")
		require.Equal(t, codeOK, m.fail("b", "t2", "b broke", false))
		checkpoint("b failed with attempts left: retried after its backoff")

		require.Equal(t, "c", m.next("t3"))
		require.Equal(t, codeOK, m.fail("c", "t3", "c broke", false))
		checkpoint("c failed with attempts left, no backoff: back in wait")

		require.Equal(t, "d", m.next("t4"))
		require.Equal(t, codeOK, m.fail("d", "t4", "d broke", false))
		checkpoint("d failed for good: retries exhausted")

		require.Equal(t, "e", m.next("t5"))
		require.Equal(t, codeOK, m.delay("e", "t5", time.Now().Add(time.Minute)))
		checkpoint("e moved to delayed")

		require.Equal(t, "f", m.next("t6"))
		require.Equal(t, codeOK, m.toWait("f", "t6"))
		checkpoint("f moved back to wait")
		require.Equal(t, "f", m.next("t7"), "moved back to the end read first")
		require.Equal(t, codeOK, m.fail("f", "t7", "f is hopeless", true))
		checkpoint("f failed unrecoverably")

		require.Equal(t, "c", m.next("t8"))
		require.Equal(t, codeOK, m.complete("c", "t8", nil))
		checkpoint("c completed on its second attempt")

		require.Equal(t, "g", m.next("t9"), "prioritized after wait")
		require.Equal(t, codeOK, m.toWait("g", "t9"))
		checkpoint("g back to the front of its priority band")
		require.Equal(t, "g", m.next("t10"))
		require.Equal(t, codeOK, m.complete("g", "t10", "done"))
		checkpoint("g completed and removed")

		// A job that adds a child while taken waits for it, and runs again.
		add("p", nil)
		require.Equal(t, "p", m.next("t13"))
		require.False(t, m.waitChildren("p", "t13"), "no child yet: the job stays active")
		s.nodeAdd(queueName, "kid", map[string]any{"id": "kid"},
			map[string]any{"jobId": "kid", "parent": map[string]any{"id": "p", "queue": b.prefix + ":" + queueName}})
		require.True(t, m.waitChildren("p", "t13"))
		checkpoint("p waits for its child")
		require.Equal(t, "kid", m.next("t14"))
		require.Equal(t, codeOK, m.complete("kid", "t14", "kid done"))
		checkpoint("the child completed: p released")
		require.Equal(t, "p", m.next("t15"))
		require.Equal(t, codeOK, m.complete("p", "t15", "p done"))
		checkpoint("p completed")

		require.Equal(t, "", m.next("t11"), "only delayed jobs are left")
		add("h", nil)
		require.Equal(t, codeMissingLock, m.complete("h", "t12", 1), "a waiting job")
		require.Equal(t, codeMissingLock, m.fail("h", "t12", "no", false))
		checkpoint("refusals on a waiting job")
	})
}

// TestInteropManualProcessing: a job one side took manually is finished by
// the other side with the same token: the token is the lock value on both.
func TestInteropManualProcessing(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)

	t.Run("DroverTakesNodeCompletes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m := newManual(side{t, b, droverImpl})
		n := &manual{side: side{t, b, nodeImpl}}
		id := b.add(t, nodeImpl, jobSpec{name: "x", data: map[string]any{"n": 1}, attempts: 2})
		require.Equal(t, id, m.next("shared-1"))
		require.True(t, n.extend(id, "shared-1", time.Minute), "Node renews the lock drover took")
		require.Equal(t, codeLockMismatch, n.complete(id, "other", 1))
		require.Equal(t, codeOK, n.complete(id, "shared-1", map[string]any{"by": "node"}))
		nj := assertJobAgree(t, b, id)
		require.Equal(t, `{"by":"node"}`, string(nj.ReturnValue))
		require.Equal(t, drover.StateCompleted, mustState(t, m.job(id)))
		require.Equal(t, codeMissingLock, m.complete(id, "shared-1", 2), "drover sees the attempt ended")
	})

	t.Run("NodeTakesDroverFinishes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		n := &manual{side: side{t, b, nodeImpl}}
		d := newManual(side{t, b, droverImpl})
		first := b.add(t, nodeImpl, jobSpec{name: "x", data: map[string]any{"n": 1}, attempts: 2})
		second := b.add(t, nodeImpl, jobSpec{name: "y", data: map[string]any{"n": 2}})
		require.Equal(t, first, n.next("node-1"))
		require.True(t, d.extend(first, "node-1", time.Minute), "drover renews the lock Node took")
		require.Equal(t, codeLockMismatch, d.complete(first, "other", 1))
		// A failure with an attempt left: the job is retried.
		require.Equal(t, codeOK, d.fail(first, "node-1", "drover says no", false))
		require.Equal(t, drover.StateWaiting, mustState(t, d.job(first)))
		require.Equal(t, second, n.next("node-2"))
		require.Equal(t, codeOK, d.complete(second, "node-2", map[string]any{"by": "drover"}))
		nj := assertJobAgree(t, b, second)
		require.Equal(t, `{"by":"drover"}`, string(nj.ReturnValue))
		// The retried job, taken by Node again, completed by drover.
		require.Equal(t, first, n.next("node-3"))
		require.Equal(t, codeOK, d.complete(first, "node-3", "second try"))
		nj = assertJobAgree(t, b, first)
		require.Equal(t, int64(2), nj.AttemptsMade)
		require.Equal(t, `"second try"`, string(nj.ReturnValue))
		require.Equal(t, codeMissingLock, n.complete(first, "node-3", 1), "Node sees the attempt ended")
	})
}

// TestDifferentialManualFinishLeavesDueDelayed: a manual finish fetches no
// next job, and BullMQ's calls for it (moveToFinished with fetchNext
// false, moveToDelayed, moveJobFromActiveToWait) promote no due delayed
// job; only a retry with attempts left and no backoff (retryJob) promotes
// them, before it queues the retried job. A completion that empties the
// queue writes drained even on a paused queue. Node runs the steps once,
// drover once, and the Redis states must match at every checkpoint.
func TestDifferentialManualFinishLeavesDueDelayed(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	roundDelay := roundMinuteDelay(t, "c")
	checkpointed(t, setup, dumpOptions{workersRan: true, rewrite: roundDelay}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		s := side{t, b, by}
		m := newManual(s)
		add := s.addWithID
		for _, id := range []string{"a", "b", "c", "d"} {
			add(id, nil)
		}
		add("r", map[string]any{"attempts": 2})
		for i, id := range []string{"a", "b", "c", "d", "r"} {
			require.Equal(t, id, m.next("t"+strconv.Itoa(i)))
		}
		// Due in a millisecond, and left due: no take follows until the
		// retry.
		add("x", map[string]any{"delay": 1})
		time.Sleep(20 * time.Millisecond)
		checkpoint("five taken, x due in delayed")

		require.Equal(t, codeOK, m.complete("a", "t0", "a done"))
		checkpoint("a completed: x stays delayed")
		require.Equal(t, codeOK, m.fail("b", "t1", "b broke", false))
		checkpoint("b failed for good: x stays delayed")
		require.Equal(t, codeOK, m.delay("c", "t2", time.Now().Add(time.Minute)))
		checkpoint("c moved to delayed: x stays delayed")
		require.Equal(t, codeOK, m.toWait("d", "t3"))
		checkpoint("d moved back to wait: x stays delayed")
		require.Equal(t, codeOK, m.fail("r", "t4", "r broke", false))
		checkpoint("r retried at once: x promoted first")

		require.Equal(t, "d", m.next("t5"))
		require.Equal(t, "x", m.next("t7"), "promoted before r was queued")
		require.Equal(t, "r", m.next("t6"))
		require.Equal(t, codeOK, m.complete("d", "t5", nil))
		require.Equal(t, codeOK, m.fail("r", "t6", "r broke again", false))
		b.pause(t, nodeImpl)
		require.Equal(t, codeOK, m.complete("x", "t7", nil))
		checkpoint("the last job completed on a paused queue: drained")
	})
}

// TestDifferentialManualNotActiveDropsLock: a finish whose token matches
// the job's lock but whose job is not in active is refused with -3 (not
// active), and, as BullMQ's moveToFinished and moveToWaitingChildren check
// the lock first, the lock is deleted (and the job left the stalled set)
// before the refusal; a failure's reason and stack trace are written too.
// The state is seeded (locks left on waiting jobs): no path of drover's
// or BullMQ's leaves a job's lock once it left active.
func TestDifferentialManualNotActiveDropsLock(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	checkpointed(t, setup, dumpOptions{workersRan: true}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		s := side{t, b, by}
		m := newManual(s)
		ctx := context.Background()
		jobKey := func(id string) string { return b.prefix + ":" + queueName + ":" + id }
		stalled := b.prefix + ":" + queueName + ":stalled"
		for _, id := range []string{"a", "b", "p"} {
			s.nodeAdd(queueName, id, map[string]any{"id": id}, map[string]any{"jobId": id})
		}
		s.nodeAdd(queueName, "c", map[string]any{"id": "c"}, map[string]any{"jobId": "c", "attempts": 2})
		s.nodeAdd(queueName, "kid", map[string]any{"id": "kid"},
			map[string]any{"jobId": "kid", "parent": map[string]any{"id": "p", "queue": b.prefix + ":" + queueName}})
		for _, id := range []string{"a", "b", "c", "p"} {
			require.NoError(t, b.rdb.Set(ctx, jobKey(id)+":lock", "tok-"+id, time.Minute).Err())
			require.NoError(t, b.rdb.SAdd(ctx, stalled, id).Err())
		}
		checkpoint("locks left on waiting jobs")

		require.Equal(t, codeNotActive, m.complete("a", "tok-a", "a done"))
		checkpoint("completion refused: not active, lock gone")
		require.Equal(t, codeNotActive, m.fail("b", "tok-b", "b broke", false))
		checkpoint("failure refused: not active, lock gone, reason written")
		require.Equal(t, codeNotActive, m.fail("c", "tok-c", "c broke", false))
		checkpoint("retry refused: not active, lock gone, reason written")
		if by == nodeImpl {
			c, _ := m.node("p", "moveToWaitingChildren", "tok-p", map[string]any{})
			require.Equal(t, codeNotActive, c)
		} else {
			// A processor's MoveToWaitingChildren acts under its own
			// token; the script is called with the seeded one.
			_, err := scripts.MoveToWaitingChildren(ctx, b.rdb, keys.New(b.prefix, queueName), "p", "tok-p", "",
				time.Now().UnixMilli(), "")
			require.Equal(t, codeNotActive, manualCode(t, err))
		}
		checkpoint("move to waiting-children refused: not active, lock gone")
	})
}

// roundMinuteDelay rewrites the stored delay of job id, which a step sets
// to a time a minute ahead minus the moment the call ran (60000 ms, give
// or take a millisecond or two), to one value both sides share.
func roundMinuteDelay(t *testing.T, id string) func(*statedump.Snapshot) {
	return func(raw *statedump.Snapshot) {
		for name, k := range raw.Keys {
			if (name == queueName+":"+id || strings.HasSuffix(name, ":"+queueName+":"+id)) && k.Hash["delay"] != "0" {
				ms, err := strconv.Atoi(k.Hash["delay"])
				require.NoError(t, err)
				require.InDelta(t, 60000, ms, 1000, "%s's delay", id)
				k.Hash["delay"] = "<about 60000>"
			}
		}
	}
}

// addWithID adds a job with custom id id (its data {"id": id}) from Node,
// with opts on top.
func (s side) addWithID(id string, opts map[string]any) {
	s.t.Helper()
	o := map[string]any{"jobId": id}
	for k, v := range opts {
		o[k] = v
	}
	s.nodeAdd(queueName, id, map[string]any{"id": id}, o)
}
