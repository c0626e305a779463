package interoptest_test

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestDifferentialRetry runs each failing/retrying scenario of issue 3 once
// with Node BullMQ (Queue.add + Worker) and once with drover (Queue.Add +
// Worker), and requires the same Redis state and the same event sequence.
func TestDifferentialRetry(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	fixed := func(d time.Duration) *drover.Backoff { return &drover.Backoff{Type: drover.BackoffFixed, Delay: d} }
	custom := func(name string) *drover.Backoff { return &drover.Backoff{Type: name} }

	tests := []struct {
		name     string
		job      jobSpec
		behavior bullmqoracle.Behavior
		// state is the final state; atm the final attemptsMade.
		state string
		atm   int64
		// events are the job's events after add, without ids.
		events []string
	}{
		{
			name:     "NoBackoff",
			job:      jobSpec{attempts: 3},
			behavior: bullmqoracle.Fail("boom"),
			state:    "failed", atm: 3,
			events: []string{
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			name:     "FixedBackoff",
			job:      jobSpec{attempts: 3, backoff: fixed(100 * time.Millisecond)},
			behavior: bullmqoracle.Fail("boom"),
			state:    "failed", atm: 3,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			name:     "ExponentialBackoff",
			job:      jobSpec{attempts: 3, backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: 50 * time.Millisecond}},
			behavior: bullmqoracle.Fail("boom"),
			state:    "failed", atm: 3,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			name:     "Unrecoverable",
			job:      jobSpec{attempts: 3, backoff: fixed(100 * time.Millisecond)},
			behavior: bullmqoracle.Unrecoverable("fatal"),
			state:    "failed", atm: 1,
			events: []string{"active prev=waiting", "failed prev=active", "drained"},
		},
		{
			name:     "CustomBackoffStop",
			job:      jobSpec{attempts: 3, backoff: custom("stop")},
			behavior: bullmqoracle.Fail("halt"),
			state:    "failed", atm: 1,
			events: []string{"active prev=waiting", "failed prev=active", "drained"},
		},
		{
			name:     "CustomBackoffZeroRetriesAtOnce",
			job:      jobSpec{attempts: 2, backoff: custom("zero")},
			behavior: bullmqoracle.Fail("again"),
			state:    "failed", atm: 2,
			events: []string{
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			// A negative delay other than -1 (BullMQ's stop) retries at
			// once, but through the delayed set: due now, delay field -5.
			name:     "CustomBackoffNegativeRetriesThroughDelayed",
			job:      jobSpec{attempts: 3, backoff: custom("minus5")},
			behavior: bullmqoracle.Fail("again"),
			state:    "failed", atm: 3,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			name:     "CustomBackoffThenSuccess",
			job:      jobSpec{attempts: 3, backoff: custom("linear100")},
			behavior: bullmqoracle.FailTimes(2, "flaky", map[string]any{"ok": true}),
			state:    "completed", atm: 3,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "completed prev=active", "drained",
			},
		},
		{
			name:     "RetryThenSuccess",
			job:      jobSpec{attempts: 2},
			behavior: bullmqoracle.FailTimes(1, "flaky", "ok"),
			state:    "completed", atm: 2,
			events: []string{
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "completed prev=active", "drained",
			},
		},
		{
			name:     "DefaultAttemptsFailOnce",
			job:      jobSpec{},
			behavior: bullmqoracle.Fail("once"),
			state:    "failed", atm: 1,
			events: []string{"active prev=waiting", "failed prev=active", "retries-exhausted", "drained"},
		},
		{
			// Retried into prioritized with a new counter score.
			name:     "PrioritizedRetry",
			job:      jobSpec{attempts: 2, priority: 3},
			behavior: bullmqoracle.FailTimes(1, "flaky", "ok"),
			state:    "completed", atm: 2,
			events: []string{
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "completed prev=active", "drained",
			},
		},
		{
			// Promoted from delayed into prioritized.
			name:     "PrioritizedBackoff",
			job:      jobSpec{attempts: 2, priority: 3, backoff: fixed(100 * time.Millisecond)},
			behavior: bullmqoracle.FailTimes(1, "flaky", "ok"),
			state:    "completed", atm: 2,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "completed prev=active", "drained",
			},
		},
		{
			// Dropped when it fails for good: state unknown, no job hash.
			name:     "RemoveOnFail",
			job:      jobSpec{attempts: 2, removeOnFail: true},
			behavior: bullmqoracle.Fail("boom"),
			state:    "unknown",
			events: []string{
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			name:     "StackTraceLimit",
			job:      jobSpec{attempts: 3, stackTraceLimit: 2},
			behavior: bullmqoracle.Fail("boom"),
			state:    "failed", atm: 3,
			events: []string{
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "waiting prev=active",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			// The processor moves its own job to delayed (BullMQ's
			// moveToDelayed + DelayedError, drover.Delay): no attempt spent.
			name:     "ProcessorDelaysItself",
			job:      jobSpec{attempts: 2},
			behavior: bullmqoracle.MoveToDelayed(100*time.Millisecond, 1, &bullmqoracle.Behavior{Kind: "return", Value: "later"}),
			state:    "completed", atm: 1,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "completed prev=active", "drained",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			nb := setup(t)
			db := nb.sibling(t)
			run := func(b *bundle, by impl) []string {
				spec := tt.job
				spec.name, spec.data = tt.name, map[string]any{"scenario": tt.name}
				id := b.add(t, by, spec)
				stop := b.startWorker(t, by, workerSpec{behavior: tt.behavior})
				evs := b.waitFinal(t, id, 1)
				stop()
				a := assertAgree(t, b, id)
				require.Equal(t, tt.state, a.states[id], "%s run", by)
				if tt.state != "unknown" {
					nj := assertJobAgree(t, b, id)
					require.Equal(t, tt.atm, nj.AttemptsMade, "%s run: attemptsMade", by)
					failures := int(tt.atm)
					if tt.state == "completed" {
						failures--
					}
					require.Len(t, nj.Stacktrace, min(failures, cmp.Or(tt.job.stackTraceLimit, 10)), "one trace per failed attempt")
				}
				return eventLines(evs)
			}
			nodeEvents := run(nb, nodeImpl)
			droverEvents := run(db, droverImpl)

			want := append([]string{"added 1", "waiting 1"}, withJob(tt.events, "1")...)
			require.Equal(t, want, nodeEvents, "Node BullMQ events (the reference)")
			require.Equal(t, nodeEvents, droverEvents, "drover events vs Node BullMQ's")
			requireSameState(t,
				comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true}),
				comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true}))
		})
	}
}

// withJob inserts the job id after the event name of each line that names
// a job ("drained" names none).
func withJob(lines []string, id string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		name, rest, _ := strings.Cut(l, " ")
		if name == "drained" {
			out[i] = l
			continue
		}
		out[i] = name + " " + id
		if rest != "" {
			out[i] += " " + rest
		}
	}
	return out
}

// TestDifferentialRetryNodeBackoff runs jobs Node BullMQ added with a
// backoff drover's Queue.Add refuses (a negative delay, which BullMQ
// accepts) through a Node worker under one prefix and a drover worker under
// another, and requires the same events and Redis state: BullMQ's fixed and
// exponential strategies compute the delay in ms, stop at exactly -1 and
// retry through the delayed set, due at once, at any other negative value.
func TestDifferentialRetryNodeBackoff(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	tests := []struct {
		name    string
		backoff *drover.Backoff
		state   string
		atm     int64
		events  []string
	}{
		{
			name:    "FixedMinus5RetriesThroughDelayed",
			backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: -5 * time.Millisecond},
			state:   "failed", atm: 3,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
		{
			name:    "FixedMinus1Stops",
			backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: -time.Millisecond},
			state:   "failed", atm: 1,
			events: []string{"active prev=waiting", "failed prev=active", "drained"},
		},
		{
			// round(2^0 * -1) = -1 stops after the first attempt.
			name:    "ExponentialMinus1Stops",
			backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: -time.Millisecond},
			state:   "failed", atm: 1,
			events: []string{"active prev=waiting", "failed prev=active", "drained"},
		},
		{
			// round(2^0 * -3) = -3, then -6: retried through delayed.
			name:    "ExponentialMinus3RetriesThroughDelayed",
			backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: -3 * time.Millisecond},
			state:   "failed", atm: 3,
			events: []string{
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "delayed", "waiting prev=delayed",
				"active prev=waiting", "failed prev=active", "retries-exhausted", "drained",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			nb := setup(t)
			db := nb.sibling(t)
			run := func(b *bundle, by impl) []string {
				id := b.add(t, nodeImpl, jobSpec{name: tt.name, data: map[string]any{"scenario": tt.name}, attempts: 3, backoff: tt.backoff})
				stop := b.startWorker(t, by, workerSpec{behavior: bullmqoracle.Fail("boom")})
				evs := b.waitFinal(t, id, 1)
				stop()
				a := assertAgree(t, b, id)
				require.Equal(t, tt.state, a.states[id], "%s run", by)
				nj := assertJobAgree(t, b, id)
				require.Equal(t, tt.atm, nj.AttemptsMade, "%s run: attemptsMade", by)
				return eventLines(evs)
			}
			nodeEvents := run(nb, nodeImpl)
			droverEvents := run(db, droverImpl)

			want := append([]string{"added 1", "waiting 1"}, withJob(tt.events, "1")...)
			require.Equal(t, want, nodeEvents, "Node BullMQ events (the reference)")
			require.Equal(t, nodeEvents, droverEvents, "drover worker events vs Node BullMQ's")
			requireSameState(t,
				comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true}),
				comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true}))
		})
	}
}

// TestDifferentialExponentialBackoffPastDuration: a job with many attempts
// and exponential backoff has failed 55 times (its atm set so), and a Node
// worker under one prefix and a drover worker under another fail it once
// more. BullMQ computes 2^55 * 1000 ms in float and holds the job in
// delayed for a million years; drover must hold it too (clamped to the
// longest Duration, about 292 years: the delay field differs, so it is
// compared as "more than a century ahead", not byte for byte). Before, the
// delay wrapped round to 0 in Go's Duration and the drover worker retried
// the job at once, 45 times within the second, until it failed for good
// (with atm 35 the wrapped delay was negative: retried at once too).
//
// The same holds for a fixed backoff whose stored delay is past a Duration
// (1e13 ms, 317 years, which Node's Queue.add accepts): drover read it
// wrapped round to a negative delay and retried the job at once, three
// attempts spent within the second.
func TestDifferentialExponentialBackoffPastDuration(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, tc := range []struct {
		name string
		opts map[string]any
		atm  int
	}{
		{"Exponential56th", map[string]any{"attempts": 100, "backoff": map[string]any{"type": "exponential", "delay": 1000}}, 55},
		{"Fixed1e13ms", map[string]any{"attempts": 3, "backoff": map[string]any{"type": "fixed", "delay": 1e13}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			backoffPastDuration(t, setup, tc.opts, tc.atm)
		})
	}
}

func backoffPastDuration(t *testing.T, setup func(t *testing.T) *bundle, opts map[string]any, atm int) {
	ctx := context.Background()
	nb := setup(t)
	db := nb.sibling(t)
	for _, b := range []*bundle{nb, db} {
		by := nodeImpl
		if b == db {
			by = droverImpl
		}
		id, err := b.oracle.Add(ctx, b.prefix, queueName, "patient", nil, opts)
		require.NoError(t, err)
		require.NoError(t, b.rdb.HSet(ctx, b.prefix+":"+queueName+":"+id, "atm", atm).Err())
		stop := b.startWorker(t, by, workerSpec{behavior: bullmqoracle.Fail("boom")})
		var state drover.JobState
		testkit.WaitFor(t, 10*time.Second, "the failure is written", func() bool {
			j, err := b.dq.GetJob(ctx, id)
			require.NoError(t, err)
			state, err = j.GetState(ctx)
			require.NoError(t, err)
			return j.AttemptsMade > atm && state != drover.StateActive
		})
		stop()
		j, err := b.dq.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateDelayed, state, "%s worker: state after failure %d (attemptsMade %d)", by, atm+1, j.AttemptsMade)
		require.Equal(t, atm+1, j.AttemptsMade, "%s worker", by)
		score, err := b.rdb.ZScore(ctx, b.prefix+":"+queueName+":delayed", id).Result()
		require.NoError(t, err)
		// In float ms: Node's due (2^55 s from now) is past what an int64 of
		// ms holds.
		ahead := score/4096 - float64(time.Now().UnixMilli())
		require.Greater(t, ahead, float64((100 * 365 * 24 * time.Hour).Milliseconds()), "%s worker: due %.0f ms ahead", by, ahead)
	}
}
