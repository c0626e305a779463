package interoptest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// optionCase is one set of job options, in BullMQ's public form, added and
// then processed with a behaviour.
type optionCase struct {
	name     string
	opts     map[string]any
	behavior bullmqoracle.Behavior
	// jobs is how many jobs with these options are added (default 1).
	jobs int
	// later, when set, are the options of every job after the first.
	later map[string]any
	// finished is how many of them finish (default jobs); negative: no
	// worker runs.
	finished int
}

// runOptionCase adds the case's jobs with addBy and runs them with a worker
// of workBy, taking a dump after the adds and after the work.
func runOptionCase(t *testing.T, b *bundle, c optionCase, addBy, workBy impl) []*statedump.Snapshot {
	t.Helper()
	ctx := context.Background()
	n := max(c.jobs, 1)
	for i := range n {
		data := map[string]any{"i": i}
		opts := c.opts
		if i > 0 && c.later != nil {
			opts = c.later
		}
		if addBy == nodeImpl {
			_, err := b.oracle.Add(ctx, b.prefix, queueName, "job", data, opts)
			require.NoError(t, err)
			continue
		}
		raw, err := json.Marshal(opts)
		require.NoError(t, err)
		o, err := drover.ParseJobOptions(raw)
		require.NoError(t, err)
		_, err = b.dq.Add(ctx, "job", data, o)
		require.NoError(t, err)
	}
	o := dumpOptions{workersRan: true, workerRunning: true}
	snaps := []*statedump.Snapshot{comparableDump(t, b.rdb, b.prefix, o)}
	if c.finished < 0 {
		return snaps
	}
	stop := b.startWorker(t, workBy, workerSpec{behavior: c.behavior})
	side{t, b, workBy}.waitFinished(queueName, cmp.Or(c.finished, n))
	stop()
	snaps = append(snaps, comparableDump(t, b.rdb, b.prefix, o))
	return snaps
}

// TestDifferentialJobOptionsMatrix adds jobs with each set of BullMQ job
// options (the public form, ParseJobOptions on drover's side) and runs
// them, four ways: Node adds and works (the reference), Node adds and
// drover works, drover adds and Node works, drover does both. The
// normalised Redis state, events included, must match the reference after
// the adds and after the work. It covers the options the generator does
// not (timestamp, sizeLimit, odd custom ids, telemetry, keepLogs on
// failures, stackTraceLimit 0, jittered fixed and number backoffs, age
// retention) and deduplication's reschedule.
//
//	go test -count=1 -run 'TestDifferentialJobOptionsMatrix' ./internal/interoptest/
func TestDifferentialJobOptionsMatrix(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	cases := []optionCase{
		{name: "Timestamp", opts: map[string]any{"timestamp": 1_600_000_000_000}},
		{name: "TimestampDelay", opts: map[string]any{"timestamp": time.Now().Add(-time.Hour).UnixMilli(), "delay": 1000}, behavior: bullmqoracle.Echo()},
		{name: "SizeLimit", opts: map[string]any{"sizeLimit": 1000}},
		{name: "OddJobID", opts: map[string]any{"jobId": "a/b c?d#e%f&g=h+é✓"}},
		{name: "Telemetry", opts: map[string]any{"telemetry": map[string]any{"metadata": `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`}}},
		{name: "TelemetryOmit", opts: map[string]any{"telemetry": map[string]any{"metadata": "x", "omitContext": true}}},
		{name: "KeepLogsFail", opts: map[string]any{"keepLogs": 1, "attempts": 2}, behavior: bullmqoracle.Fail("boom")},
		{name: "StackTraceLimit0", opts: map[string]any{"stackTraceLimit": 0, "attempts": 2}, behavior: bullmqoracle.Fail("boom")},
		{name: "StackTraceLimit1", opts: map[string]any{"stackTraceLimit": 1, "attempts": 3}, behavior: bullmqoracle.Fail("boom")},
		{name: "BackoffFixedJitter", opts: map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 1, "jitter": 0.5}}, behavior: bullmqoracle.Fail("boom")},
		{name: "BackoffNumber", opts: map[string]any{"attempts": 2, "backoff": 1}, behavior: bullmqoracle.Fail("boom")},
		{name: "RemoveOnCompleteAge", opts: map[string]any{"removeOnComplete": map[string]any{"age": 1}}, jobs: 2},
		{name: "RemoveOnCompleteCount", opts: map[string]any{"removeOnComplete": 1}, jobs: 3},
		{name: "RemoveOnFailAgeCount", opts: map[string]any{"removeOnFail": map[string]any{"age": 3600, "count": 1}}, behavior: bullmqoracle.Fail("boom"), jobs: 3},
		{name: "LifoPriority", opts: map[string]any{"lifo": true, "priority": 3}, jobs: 2},
		{name: "DedupTTL", opts: map[string]any{"deduplication": map[string]any{"id": "d", "ttl": 60000}}, jobs: 2, finished: 1},
		// The second add moves the delayed owner to its own delay: its
		// delay field, a delayed event and its score behind "other".
		{name: "DedupReschedule", opts: map[string]any{"delay": 60000, "deduplication": map[string]any{"id": "d", "ttl": 600000, "reschedule": true}},
			later: map[string]any{"delay": 7_200_000, "deduplication": map[string]any{"id": "d", "ttl": 600000, "reschedule": true}}, jobs: 3, finished: -1},
		{name: "DedupRescheduleNoDelay", opts: map[string]any{"delay": 60000, "deduplication": map[string]any{"id": "d", "reschedule": true}},
			later: map[string]any{"deduplication": map[string]any{"id": "d", "reschedule": true}}, jobs: 2, finished: 1},
		{name: "DedupRescheduleExtend", opts: map[string]any{"delay": 60000, "deduplication": map[string]any{"id": "d", "ttl": 600000, "extend": true, "reschedule": true}},
			later: map[string]any{"delay": 7_200_000, "deduplication": map[string]any{"id": "d", "ttl": 600000, "extend": true, "reschedule": true}}, jobs: 2, finished: -1},
		{name: "DedupRescheduleReplace", opts: map[string]any{"delay": 60000, "deduplication": map[string]any{"id": "d", "ttl": 600000, "replace": true, "reschedule": true}},
			later: map[string]any{"delay": 7_200_000, "deduplication": map[string]any{"id": "d", "ttl": 600000, "replace": true, "reschedule": true}}, jobs: 2, finished: -1},
		{name: "Timeout", opts: map[string]any{"timeout": 60000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			nb := setup(t)
			base := runOptionCase(t, nb, c, nodeImpl, nodeImpl)
			for _, mix := range []struct{ add, work impl }{{nodeImpl, droverImpl}, {droverImpl, nodeImpl}, {droverImpl, droverImpl}} {
				t.Run(string(mix.add)+"Adds"+string(mix.work)+"Works", func(t *testing.T) {
					got := runOptionCase(t, nb.sibling(t), c, mix.add, mix.work)
					for i, label := range []string{"added", "worked"}[:len(base)] {
						t.Logf("checkpoint %s", label)
						requireSameState(t, base[i], got[i])
					}
				})
			}
		})
	}
}
