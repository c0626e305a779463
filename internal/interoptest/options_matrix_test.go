package interoptest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
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
	// nodeOnly: options only a Node producer writes (drover's
	// ParseJobOptions refuses them), run with Node adding only.
	nodeOnly bool
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
	// After the adds the marker is compared too: the adds write it alike.
	snaps := []*statedump.Snapshot{comparableDump(t, b.rdb, b.prefix, dumpOptions{})}
	o := dumpOptions{workersRan: true, workerRunning: true}
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
		// No options: both store {"attempts":0} (BullMQ's Job constructor
		// defaults attempts to 0, one run), which is what Node's job JSON
		// and drover's job views (dashboard, drover job --json) show.
		{name: "NoOptions", opts: map[string]any{}},
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
		// Node-added only: drover stores a backoff without delay as
		// {type, delay: 0} (README), which both workers read alike.
		{name: "BackoffFixedNoDelay", opts: map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed"}}, behavior: bullmqoracle.Fail("boom"), nodeOnly: true},
		{name: "BackoffExponentialNoDelay", opts: map[string]any{"attempts": 3, "backoff": map[string]any{"type": "exponential"}}, behavior: bullmqoracle.Fail("boom"), nodeOnly: true},
		{name: "BackoffExponentialZeroDelay", opts: map[string]any{"attempts": 3, "backoff": map[string]any{"type": "exponential", "delay": 0}}, behavior: bullmqoracle.Fail("boom")},
		{name: "BackoffZero", opts: map[string]any{"attempts": 2, "backoff": 0}, behavior: bullmqoracle.Fail("boom"), nodeOnly: true},
		{name: "ZeroOptions", opts: map[string]any{"attempts": 0, "delay": 0, "priority": 0, "lifo": false, "keepLogs": 0, "sizeLimit": 0,
			"removeOnComplete": false, "removeOnFail": 0, "stackTraceLimit": 0}, behavior: bullmqoracle.Fail("boom"), jobs: 2, nodeOnly: true},
		{name: "RemoveOnCompleteZero", opts: map[string]any{"removeOnComplete": 0}, jobs: 2, nodeOnly: true},
		{name: "RemoveOnCompleteNegative", opts: map[string]any{"removeOnComplete": -1}, jobs: 2},
		{name: "RemoveOnFailCountZeroObject", opts: map[string]any{"removeOnFail": map[string]any{"count": 0}}, behavior: bullmqoracle.Fail("boom"), jobs: 2},
		{name: "AttemptsUnrecoverable", opts: map[string]any{"attempts": 3, "backoff": 1}, behavior: bullmqoracle.Unrecoverable("fatal")},
		{name: "PriorityDelay", opts: map[string]any{"priority": 2, "delay": 3_600_000}, finished: -1},
		{name: "LifoDelay", opts: map[string]any{"lifo": true, "delay": 3_600_000}, finished: -1},
		{name: "NodeRepeatEvery", opts: map[string]any{"repeat": map[string]any{"every": 5000}}, nodeOnly: true},
		{name: "NodeRepeatPattern", opts: map[string]any{"repeat": map[string]any{"pattern": "0 * * * *"}, "prevMillis": 1_600_000_000_000}, nodeOnly: true},
		{name: "LegacyRepeatable", opts: map[string]any{"jobId": "repeat:k1:1600000000000", "repeatJobKey": "job::::5000",
			"repeat": map[string]any{"every": 5000, "count": 1}, "prevMillis": 1_600_000_000_000}, nodeOnly: true},
		{name: "LegacyRepeatableCron", opts: map[string]any{"jobId": "repeat:k2:1600000000000", "repeatJobKey": "job:k2::UTC:0 * * * *",
			"repeat": map[string]any{"pattern": "0 * * * *", "tz": "UTC", "count": 1}}, nodeOnly: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			nb := setup(t)
			base := runOptionCase(t, nb, c, nodeImpl, nodeImpl)
			for _, mix := range []struct{ add, work impl }{{nodeImpl, droverImpl}, {droverImpl, nodeImpl}, {droverImpl, droverImpl}} {
				if c.nodeOnly && mix.add == droverImpl {
					continue
				}
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

// workerOptionCase is one worker setting, spelled for each side, run over
// jobs a Node producer adds with opts.
type workerOptionCase struct {
	name     string
	opts     map[string]any
	jobs     int
	finished int // default jobs
	behavior bullmqoracle.Behavior
	node     bullmqoracle.WorkerOptions
	drover   drover.WorkerOptions
}

// TestDifferentialWorkerOptionsMatrix runs Node-added jobs with a Node
// worker and with a drover worker given the same worker options (default
// retention, limiter, metrics), comparing the normalised Redis state.
//
//	go test -count=1 -run 'TestDifferentialWorkerOptionsMatrix' ./internal/interoptest/
func TestDifferentialWorkerOptionsMatrix(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	fail := bullmqoracle.Fail("boom")
	cases := []workerOptionCase{
		{name: "RemoveOnCompleteCount", jobs: 3,
			node:   bullmqoracle.WorkerOptions{RemoveOnComplete: map[string]any{"count": 1}},
			drover: drover.WorkerOptions{RemoveOnComplete: &drover.Retention{Count: 1, Object: true}}},
		{name: "RemoveOnCompleteAll", jobs: 2,
			node:   bullmqoracle.WorkerOptions{RemoveOnComplete: map[string]any{"count": 0}},
			drover: drover.WorkerOptions{RemoveOnComplete: &drover.Retention{Remove: true, Object: true}}},
		{name: "RemoveOnFailAgeCount", jobs: 3, behavior: fail,
			node:   bullmqoracle.WorkerOptions{RemoveOnFail: map[string]any{"age": 3600, "count": 2}},
			drover: drover.WorkerOptions{RemoveOnFail: &drover.Retention{Age: time.Hour, Count: 2}}},
		{name: "JobRetentionWins", jobs: 2, opts: map[string]any{"removeOnComplete": false},
			node:   bullmqoracle.WorkerOptions{RemoveOnComplete: map[string]any{"count": 0}},
			drover: drover.WorkerOptions{RemoveOnComplete: &drover.Retention{Remove: true, Object: true}}},
		{name: "JobRetentionNumberWins", jobs: 3, opts: map[string]any{"removeOnComplete": 2},
			node:   bullmqoracle.WorkerOptions{RemoveOnComplete: map[string]any{"count": 0}},
			drover: drover.WorkerOptions{RemoveOnComplete: &drover.Retention{Remove: true, Object: true}}},
		{name: "FailRetentionWithRetries", jobs: 2, opts: map[string]any{"attempts": 2}, behavior: fail,
			node:   bullmqoracle.WorkerOptions{RemoveOnFail: map[string]any{"count": 1}},
			drover: drover.WorkerOptions{RemoveOnFail: &drover.Retention{Count: 1, Object: true}}},
		{name: "Limiter", jobs: 2, finished: 1,
			node:   bullmqoracle.WorkerOptions{Extra: map[string]any{"limiter": map[string]any{"max": 1, "duration": 3_600_000}}},
			drover: drover.WorkerOptions{Limiter: &drover.RateLimit{Max: 1, Duration: time.Hour}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			nb := setup(t)
			run := func(b *bundle, by impl) *statedump.Snapshot {
				ctx := context.Background()
				for i := range c.jobs {
					_, err := b.oracle.Add(ctx, b.prefix, queueName, "job", map[string]any{"i": i}, c.opts)
					require.NoError(t, err)
				}
				if by == nodeImpl {
					o := c.node
					o.ID, o.Name, o.Behavior = b.prefix+"-w", workerName, c.behavior
					if o.Behavior.Kind == "" {
						o.Behavior = bullmqoracle.Echo()
					}
					require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, o))
					side{t, b, by}.waitFinished(queueName, cmp.Or(c.finished, c.jobs))
					require.NoError(t, b.oracle.StopWorker(ctx, o.ID, false))
				} else {
					o := c.drover
					o.Prefix, o.Name = b.prefix, workerName
					w, err := drover.NewWorker(b.rdb, queueName, droverBehavior(c.behavior, b.rdb), &o)
					require.NoError(t, err)
					require.NoError(t, w.Start(ctx))
					side{t, b, by}.waitFinished(queueName, cmp.Or(c.finished, c.jobs))
					require.NoError(t, w.Close(ctx))
				}
				return comparableDump(t, b.rdb, b.prefix, dumpOptions{workersRan: true, workerRunning: true})
			}
			requireSameState(t, run(nb, nodeImpl), run(nb.sibling(t), droverImpl))
		})
	}
}

// TestInteropUnknownBackoffType: a job whose backoff type no strategy of
// the drover worker running it knows (a Node producer's custom strategy)
// fails for good at its first failure, with a reason naming the type, where
// a BullMQ 6.7 worker throws in moveToFailed and leaves the job in active
// until the stalled check takes it (README: deliberate difference). Node's
// reads must see the failure.
//
//	go test -count=1 -run 'TestInteropUnknownBackoffType' ./internal/interoptest/
func TestInteropUnknownBackoffType(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	id, err := b.oracle.Add(ctx, b.prefix, queueName, "job", map[string]any{"i": 1},
		map[string]any{"attempts": 3, "backoff": map[string]any{"type": "mystery", "delay": 1000}})
	require.NoError(t, err)
	w, err := drover.NewWorker(b.rdb, queueName, droverBehavior(bullmqoracle.Fail("boom"), b.rdb), &drover.WorkerOptions{Prefix: b.prefix, Name: workerName})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	b.waitFinal(t, id, 1)
	require.NoError(t, w.Close(ctx))
	require.Equal(t, []string{"added 1", "waiting 1", "active 1 prev=waiting", "failed 1 prev=active"},
		eventLines(b.events(t))[:4], "one attempt, no retry")

	state, err := b.oracle.GetState(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.Equal(t, "failed", state)
	job, err := b.oracle.GetJob(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.EqualValues(t, 1, job.AttemptsMade)
	require.Contains(t, job.FailedReason, `unknown backoff strategy "mystery"`)
}

// TestDifferentialFlowRootDedup: a lone flow root (no children, no parent:
// the only flow job BullMQ lets have deduplication) with each
// deduplication mode, added after a delayed owner of the id, with Node's
// FlowProducer and with drover's: same state.
//
//	go test -count=1 -run 'TestDifferentialFlowRootDedup' ./internal/interoptest/
func TestDifferentialFlowRootDedup(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, tc := range []struct {
		name string
		de   map[string]any
	}{
		{"Simple", map[string]any{"id": "d"}},
		{"Replace", map[string]any{"id": "d", "ttl": 600000, "replace": true}},
		{"Reschedule", map[string]any{"id": "d", "ttl": 600000, "reschedule": true}},
		{"ExtendReschedule", map[string]any{"id": "d", "ttl": 600000, "extend": true, "reschedule": true}},
		{"ReplaceReschedule", map[string]any{"id": "d", "ttl": 600000, "replace": true, "reschedule": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkpointed(t, setup, dumpOptions{}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
				s := side{t, b, by}
				ctx := context.Background()
				s.nodeAdd(queueName, "owner", map[string]any{}, map[string]any{"jobId": "owner", "delay": 60000, "deduplication": tc.de})
				checkpoint("owner added")
				popts := map[string]any{"jobId": "r", "delay": 7_200_000, "deduplication": tc.de}
				if s.by == nodeImpl {
					_, err := s.b.oracle.AddFlow(ctx, s.b.prefix, bullmqoracle.FlowJob{Name: "r", QueueName: queueName, Data: map[string]any{}, Opts: popts})
					require.NoError(s.t, err)
				} else {
					raw, err := json.Marshal(popts)
					require.NoError(s.t, err)
					o, err := drover.ParseJobOptions(raw)
					require.NoError(s.t, err)
					fp, err := drover.NewFlowProducer(s.b.rdb, &drover.FlowProducerOptions{Prefix: s.b.prefix})
					require.NoError(s.t, err)
					_, err = fp.Add(ctx, drover.FlowJob{Name: "r", QueueName: queueName, Data: map[string]any{}, Opts: o})
					require.NoError(s.t, err)
				}
				checkpoint("flow root added")
			})
		})
	}
}

// TestDifferentialSchedulerRunRetry: a job scheduler's run whose template
// has attempts, backoff or removeOnFail fails with a worker of either side,
// the scheduler made by either side: the retry, the next run and the
// failed run's removal leave Node's state.
//
//	go test -count=1 -run 'TestDifferentialSchedulerRunRetry' ./internal/interoptest/
func TestDifferentialSchedulerRunRetry(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, tmpl := range []struct {
		name string
		node map[string]any
		drv  *drover.JobOptions
		// delayed: the run is retried through delayed (wait for two
		// delayed jobs: the retry and the next run), else it fails.
		delayed bool
	}{
		{"RetryAtOnce", map[string]any{"attempts": 2}, &drover.JobOptions{Attempts: 2}, false},
		{"RetryDelayed", map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 3_600_000}},
			&drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}}, true},
		{"RemoveOnFail", map[string]any{"attempts": 1, "removeOnFail": true},
			&drover.JobOptions{Attempts: 1, RemoveOnFail: &drover.Retention{Remove: true}}, false},
	} {
		for _, upBy := range []impl{nodeImpl, droverImpl} {
			t.Run(tmpl.name+"/UpsertBy"+string(upBy), func(t *testing.T) {
				t.Parallel()
				run := func(b *bundle, workBy impl) *statedump.Snapshot {
					ctx := context.Background()
					if upBy == nodeImpl {
						_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 3_600_000},
							map[string]any{"name": "tick", "data": map[string]any{"a": 1}, "opts": tmpl.node})
						require.NoError(t, err)
					} else {
						_, err := b.dq.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: time.Hour},
							&drover.JobTemplate{Name: "tick", Data: map[string]any{"a": 1}, Opts: tmpl.drv})
						require.NoError(t, err)
					}
					stop := b.startWorker(t, workBy, workerSpec{behavior: bullmqoracle.Fail("boom")})
					if tmpl.delayed {
						testkit.WaitFor(t, waitLong, "the retry and the next run delayed", func() bool {
							n, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":delayed").Result()
							require.NoError(t, err)
							return n == 2
						})
					} else {
						readQueueEvents(t, b.rdb, b.prefix, queueName, 1, func(e drover.Event) bool { return e.Name == drover.EventFailed }, waitLong)
					}
					stop()
					return comparableDump(t, b.rdb, b.prefix, dumpOptions{workersRan: true, rewrite: rankRuns})
				}
				nb := setup(t)
				requireSameState(t, run(nb, nodeImpl), run(nb.sibling(t), droverImpl))
			})
		}
	}
}

// TestDifferentialBulkReschedule: deduplicated adds in one addBulk call,
// the later ones rescheduling the first (delayed) one, then a plain
// delayed job: Node's addBulk and drover's AddBulk leave the same state.
//
//	go test -count=1 -run 'TestDifferentialBulkReschedule' ./internal/interoptest/
func TestDifferentialBulkReschedule(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	de := map[string]any{"id": "d", "ttl": 600000, "reschedule": true}
	jobs := []bullmqoracle.BulkJob{
		{Name: "a", Data: map[string]any{"n": 1}, Opts: map[string]any{"delay": 60000, "deduplication": de}},
		{Name: "b", Data: map[string]any{"n": 2}, Opts: map[string]any{"delay": 7_200_000}},
		{Name: "c", Data: map[string]any{"n": 3}, Opts: map[string]any{"delay": 10_800_000, "deduplication": de}},
		{Name: "d", Data: map[string]any{"n": 4}, Opts: map[string]any{"deduplication": map[string]any{"id": "e", "reschedule": true}}},
		{Name: "e", Data: map[string]any{"n": 5}, Opts: map[string]any{"delay": 3_600_000, "deduplication": map[string]any{"id": "e", "reschedule": true}}},
	}
	// dumpOptions{}: the delay marker each add leaves is compared too.
	checkpointed(t, setup, dumpOptions{}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
		s := side{t, b, by}
		ctx := context.Background()
		if s.by == nodeImpl {
			_, err := s.b.oracle.AddBulk(ctx, s.b.prefix, queueName, jobs)
			require.NoError(s.t, err)
		} else {
			bulk := make([]drover.BulkJob, len(jobs))
			for i, j := range jobs {
				raw, err := json.Marshal(j.Opts)
				require.NoError(s.t, err)
				o, err := drover.ParseJobOptions(raw)
				require.NoError(s.t, err)
				bulk[i] = drover.BulkJob{Name: j.Name, Data: j.Data, Opts: o}
			}
			_, err := s.b.dq.AddBulk(ctx, bulk)
			require.NoError(s.t, err)
		}
		checkpoint("bulk added")
	})
}

// TestDifferentialNodeStringOptions: a Node producer may pass numbers as
// strings (attempts: process.env.ATTEMPTS); BullMQ stores them as given and
// its worker reads them as numbers (JS coercion, Lua's tonumber), and a
// string retention by its truthiness. A drover worker running such a job
// must do what a Node worker does, not fail it as undecodable.
//
//	go test -count=1 -run 'TestDifferentialNodeStringOptions' ./internal/interoptest/
func TestDifferentialNodeStringOptions(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	fail := bullmqoracle.Fail("boom")
	for _, c := range []optionCase{
		{name: "Attempts", opts: map[string]any{"attempts": "3"}, behavior: fail},
		{name: "AttemptsSpaces", opts: map[string]any{"attempts": " 2 "}, behavior: fail},
		// Not a string, but as loose: BullMQ retries while attemptsMade <
		// 2.5, so the job runs three times.
		{name: "AttemptsFraction", opts: map[string]any{"attempts": 2.5}, behavior: fail},
		{name: "StackTraceLimit", opts: map[string]any{"stackTraceLimit": "1", "attempts": 2}, behavior: fail},
		{name: "BackoffDelay", opts: map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": "10"}}, behavior: fail},
		{name: "BackoffExponentialDelay", opts: map[string]any{"attempts": 3, "backoff": map[string]any{"type": "exponential", "delay": "5"}}, behavior: fail},
		{name: "Timeout", opts: map[string]any{"timeout": "60000"}},
		{name: "RemoveOnComplete", opts: map[string]any{"removeOnComplete": "yes"}, jobs: 2},
		{name: "RemoveOnCompleteEmpty", opts: map[string]any{"removeOnComplete": ""}, jobs: 2},
		{name: "RemoveOnFail", opts: map[string]any{"removeOnFail": "1"}, behavior: fail, jobs: 2},
		// An age in seconds given as a string: BullMQ's Lua multiplies it
		// as a number (a Node scheduler's template may carry it too).
		{name: "RemoveOnCompleteAge", opts: map[string]any{"removeOnComplete": map[string]any{"age": "3600"}}, jobs: 2},
		{name: "RemoveOnFailAge", opts: map[string]any{"removeOnFail": map[string]any{"age": "0.5", "count": 5}}, behavior: fail, jobs: 2},
	} {
		c.nodeOnly = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			nb := setup(t)
			want := runOptionCase(t, nb, c, nodeImpl, nodeImpl)
			got := runOptionCase(t, nb.sibling(t), c, nodeImpl, droverImpl)
			for i, label := range []string{"added", "worked"} {
				t.Logf("checkpoint %s", label)
				requireSameState(t, want[i], got[i])
			}
		})
	}
}

// TestDifferentialNodeStringFlags: a Node producer may store any value for
// a flag (lifo: "false" from an environment variable). BullMQ's worker and
// job.retry() test lifo with JS truthiness ("false" and "0" are true, 0 and
// "" are false), so a job retried at once, or retried after it failed, goes
// to the front of wait exactly then. A flow child's failure policy is
// copied into its parent field by JS truthiness when Node adds it, and both
// sides' scripts read that field. Node adds in both runs; the worker and
// the retries are Node's in one run and drover's in the other.
//
//	go test -count=1 -run 'TestDifferentialNodeStringFlags' ./internal/interoptest/
func TestDifferentialNodeStringFlags(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	values := []struct {
		name  string
		value any
	}{
		{"StringFalse", "false"}, {"StringZero", "0"}, {"StringEmpty", ""}, {"StringTrue", "true"},
		{"Zero", 0}, {"One", 1}, {"Null", nil}, {"False", false}, {"True", true},
	}
	for _, v := range values {
		t.Run("Lifo"+v.name, func(t *testing.T) {
			t.Parallel()
			differential(t, setup, func(s side, checkpoint func(string)) {
				ids := []string{"a", "b", "c"}
				for _, id := range ids {
					s.nodeAdd(queueName, id, map[string]any{"id": id}, map[string]any{"jobId": id, "lifo": v.value, "attempts": 2})
				}
				checkpoint("added")
				// One worker: each job fails, is retried at once (to the
				// front of wait when lifo holds) and fails for good.
				s.work(queueName, bullmqoracle.Fail("boom"), len(ids))
				checkpoint("worked")
				for _, id := range ids {
					s.retry(queueName, id, drover.StateFailed)
				}
				checkpoint("retried")
			})
		})
	}
	for _, flag := range []string{"failParentOnFailure", "continueParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure"} {
		for _, v := range values[:5] {
			t.Run(flag+v.name, func(t *testing.T) {
				t.Parallel()
				differential(t, setup, func(s side, checkpoint func(string)) {
					s.flow(node("p", queueName, nil, nil,
						node("c", partsQueue, nil, map[string]any{flag: v.value}),
						node("d", partsQueue, nil, map[string]any{"delay": 3_600_000})))
					s.work(partsQueue, bullmqoracle.Fail("boom"), 1)
					checkpoint("child failed")
				})
			})
		}
	}
}
