package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// completeNext completes job id under token and takes the next job in the
// same call (BullMQ's moveToCompleted(value, token, true), drover's
// CompleteAndNext), answering BullMQ's code and the id taken ("" none).
func (m *manual) completeNext(id, token string, value any) (int, string) {
	m.t.Helper()
	if m.by == nodeImpl {
		c, res := m.node(id, "moveToCompleted", value, token, true)
		return c, nextIDOf(m.t, res)
	}
	j, err := m.job(id).CompleteAndNext(context.Background(), token, value)
	m.logErr("CompleteAndNext", id, err)
	return m.code(err), m.keep(j)
}

// failNext fails job id under token and takes the next job in the same
// call (BullMQ's moveToFailed(err, token, true), drover's FailAndNext).
func (m *manual) failNext(id, token, message string) (int, string) {
	m.t.Helper()
	if m.by == nodeImpl {
		c, res := m.node(id, "moveToFailed", map[string]any{"message": message}, token, true)
		return c, nextIDOf(m.t, res)
	}
	j, err := m.job(id).FailAndNext(context.Background(), token, errors.New(message))
	m.logErr("FailAndNext", id, err)
	return m.code(err), m.keep(j)
}

// keep remembers a job drover handed out and returns its id ("" for nil).
func (m *manual) keep(j *drover.Job) string {
	if j == nil {
		return ""
	}
	m.jobs[j.ID] = j
	return j.ID
}

// nextIDOf reads the id of the job a BullMQ finish with fetchNext took
// from its raw reply, [job fields, id, limitUntil, delayUntil]; "" for
// none (0, null, or an id of 0).
func nextIDOf(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var reply []json.RawMessage
	if json.Unmarshal(res, &reply) != nil || len(reply) < 2 {
		return ""
	}
	var id string
	if json.Unmarshal(reply[1], &id) != nil {
		return "" // 0: nothing taken
	}
	return id
}

// TestDifferentialManualFetchNext: BullMQ's manual finishes take the next
// job in the same call (moveToCompleted's fetchNext, true by default;
// moveToFailed's, false by default), locked with the same token; drover's
// CompleteAndNext and FailAndNext do the same. The reference run makes
// every call with Node; the other mixes Node and drover call by call on
// one queue, drover finishing jobs Node took and the other way round. The
// jobs taken and the Redis state, events included, must match.
//
//	go test -count=1 -run 'TestDifferentialManualFetchNext' ./internal/interoptest/
func TestDifferentialManualFetchNext(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	// drover makes the odd calls in one mixed run, the even ones in the
	// other, so each call is made by drover in one of them.
	for _, droverTurn := range []int{1, 0} {
		t.Run(map[int]string{1: "DroverOdd", 0: "DroverEven"}[droverTurn], func(t *testing.T) {
			t.Parallel()
			manualFetchNext(t, setup, droverTurn)
		})
	}
}

func manualFetchNext(t *testing.T, setup func(*testing.T) *bundle, droverTurn int) {
	taken := map[impl][]string{}
	checkpointed(t, setup, dumpOptions{workersRan: true}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		nodeM := newManual(side{t, b, nodeImpl})
		pick := func() *manual { return nodeM }
		if by == droverImpl {
			// drover reads the jobs Node took through its worker's queue,
			// as Node reads them with Job.fromId(worker, id).
			droverM := newManual(side{t, b, droverImpl})
			droverM.q = droverM.w.Queue()
			turn := 0
			pick = func() *manual {
				turn++
				if turn%2 == droverTurn {
					return droverM
				}
				// A drover handle is the attempt it was taken for: once
				// Node acts, drover reads the jobs again.
				clear(droverM.jobs)
				return nodeM
			}
		}
		s := side{t, b, by}
		s.addWithID("a", nil)
		s.addWithID("b", map[string]any{"attempts": 2})
		s.addWithID("c", map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 60000}})
		s.addWithID("d", map[string]any{"attempts": 1})
		s.addWithID("e", map[string]any{"removeOnComplete": true})
		s.addWithID("f", map[string]any{"priority": 2})
		checkpoint("added")
		var got []string
		record := func(code int, id string) string {
			got = append(got, id)
			require.Equal(t, codeOK, code)
			return id
		}
		require.Equal(t, "a", nodeM.next("t1"))
		id := record(pick().completeNext("a", "t1", map[string]any{"ok": 1}))
		checkpoint("a completed, next taken")
		// Retried at once: nothing is taken.
		id = record(pick().failNext(id, "t1", "broke"))
		require.Equal(t, "", id)
		checkpoint("retried at once, nothing taken")
		id = pick().next("t2")
		got = append(got, id)
		// Retried after its backoff: the next is taken.
		id = record(pick().failNext(id, "t2", "broke"))
		checkpoint("retried after backoff, next taken")
		// Failed for good: the next is taken.
		id = record(pick().failNext(id, "t2", "broke"))
		checkpoint("failed for good, next taken")
		// A refused completion or failure takes nothing (made by both
		// sides in the mixed run).
		code, none := pick().completeNext(id, "wrong", 1)
		require.Equal(t, codeLockMismatch, code)
		require.Equal(t, "", none)
		code, none = pick().failNext(id, "wrong", "no")
		require.Equal(t, codeLockMismatch, code)
		require.Equal(t, "", none)
		checkpoint("refused, nothing taken")
		for range 4 {
			id = record(pick().completeNext(id, "t2", "done"))
			checkpoint("completed " + id)
			if id == "" {
				break
			}
		}
		require.Equal(t, "", id, "the queue is empty but for c, delayed")
		t.Logf("%s took %q", by, got)
		taken[by] = got
	})
	require.Equal(t, taken[nodeImpl], taken[droverImpl], "the jobs taken")
}
