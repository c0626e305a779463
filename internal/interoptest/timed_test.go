package interoptest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// timedRoles says which implementation does each part of a timed scenario:
// the adds, the workers and the admin calls in between.
type timedRoles struct {
	add, work, admin impl
}

func (r timedRoles) String() string {
	return fmt.Sprintf("add=%s,work=%s,admin=%s", r.add, r.work, r.admin)
}

// nodeRoles is the reference run: Node BullMQ does everything.
var nodeRoles = timedRoles{nodeImpl, nodeImpl, nodeImpl}

// timedMixes are the runs compared with nodeRoles: drover's worker with
// Node's producer, Node's worker with drover's producer, drover alone.
var timedMixes = []timedRoles{
	{nodeImpl, droverImpl, nodeImpl},
	{droverImpl, nodeImpl, droverImpl},
	{droverImpl, droverImpl, droverImpl},
}

// timedJob is one add of a timed scenario, spelled for both sides.
type timedJob struct {
	name string
	node map[string]any
	drv  *drover.JobOptions
}

// addTimed adds j with the given implementation and returns the job's id:
// the new job's, or, for a deduplicated add, the owning job's (both sides).
func (b *bundle) addTimed(t *testing.T, by impl, j timedJob, data any) string {
	t.Helper()
	ctx := context.Background()
	if by == nodeImpl {
		opts := j.node
		if opts == nil {
			opts = map[string]any{}
		}
		id, err := b.oracle.Add(ctx, b.prefix, queueName, j.name, data, opts)
		require.NoError(t, err)
		return id
	}
	res, err := b.dq.Add(ctx, j.name, data, j.drv)
	require.NoError(t, err)
	return res.Job.ID
}

// timedWorker is a worker of a timed scenario: workerSpec plus the options
// only these scenarios use. With a limiter, only the worker's behavior,
// drover processor and concurrency are used from workerSpec.
type timedWorker struct {
	workerSpec
	limiter *drover.RateLimit
}

func (b *bundle) startTimedWorker(t *testing.T, by impl, w timedWorker) (stop func()) {
	t.Helper()
	if w.limiter == nil {
		return b.startWorker(t, by, w.workerSpec)
	}
	if by == droverImpl {
		proc := w.drover
		if proc == nil {
			proc = droverBehavior(w.behavior, b.rdb)
		}
		o := &drover.WorkerOptions{
			Prefix: b.prefix, Name: workerName, Concurrency: w.concurrency,
			BackoffStrategies: droverStrategies, Limiter: w.limiter,
		}
		wk, err := drover.NewWorker(b.rdb, queueName, proc, o)
		require.NoError(t, err)
		require.NoError(t, wk.Start(context.Background()))
		var done bool
		stop = func() {
			if done {
				return
			}
			done = true
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, wk.Close(cctx))
		}
		t.Cleanup(stop)
		return stop
	}
	ctx := context.Background()
	behavior := w.behavior
	if behavior.Kind == "" {
		behavior = bullmqoracle.Echo()
	}
	id := fmt.Sprintf("%s-w%d", b.prefix, b.seq.Add(1))
	require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
		ID: id, Name: workerName, Concurrency: w.concurrency, Behavior: behavior, BackoffStrategy: "byType",
		Extra: map[string]any{"limiter": map[string]any{"max": w.limiter.Max, "duration": w.limiter.Duration.Milliseconds()}},
	}))
	var done bool
	stop = func() {
		if done {
			return
		}
		done = true
		require.NoError(t, b.oracle.StopWorker(ctx, id, false))
	}
	t.Cleanup(stop)
	return stop
}

// waitFinished waits until the queue's completed+failed count reaches n.
func (b *bundle) waitFinished(t *testing.T, n int64) {
	t.Helper()
	testkit.WaitFor(t, waitLong, fmt.Sprintf("%d jobs finished", n), func() bool {
		c, err := b.rdb.ZCard(context.Background(), b.prefix+":"+queueName+":completed").Result()
		require.NoError(t, err)
		f, err := b.rdb.ZCard(context.Background(), b.prefix+":"+queueName+":failed").Result()
		require.NoError(t, err)
		return c+f >= n
	})
}

// timedOutcome is what a run of a timed scenario is compared on.
type timedOutcome struct {
	// order is the job ids in the order they became active (ids are the
	// same in every run of a scenario; scheduler runs by rank).
	order []string
	// events is each job's events in stream order (queue-level events under
	// ""): how the events of different jobs interleave depends on timing.
	events map[string][]string
	state  *statedump.Snapshot
	notes  []string
	// took is how long the scenario ran: a job that waits far longer for a
	// worker than under Node shows here.
	took time.Duration
}

// timedScenario is one scenario: run does it with the given roles, returns
// after its jobs finished and returns notes (returned ids, states read
// midway, timing checks) compared between runs.
type timedScenario struct {
	name string
	run  func(t *testing.T, b *bundle, r timedRoles) []string
	// rewrite adjusts the raw state before the comparison (nil: none).
	rewrite func(raw *statedump.Snapshot)
	// unordered skips the processing order (concurrent workers).
	unordered bool
	// anyDuration skips the duration check: the scenario's run time varies
	// by seconds between runs of Node BullMQ alone.
	anyDuration bool
}

func runTimed(t *testing.T, b *bundle, sc timedScenario, r timedRoles) timedOutcome {
	t.Helper()
	start := time.Now()
	notes := sc.run(t, b, r)
	took := time.Since(start)
	evs := b.events(t)
	{
		// Scheduler runs are named by rank, as rankRuns does in the state.
		var ids []string
		for _, e := range evs {
			if runIDRE.MatchString(e.JobID) && !slices.Contains(ids, e.JobID) {
				ids = append(ids, e.JobID)
			}
		}
		slices.Sort(ids)
		for i := range evs {
			if k := slices.Index(ids, evs[i].JobID); k >= 0 {
				evs[i].JobID = fmt.Sprintf("repeat:s1:#%d", k)
			}
		}
	}
	state := comparableDump(t, b.rdb, b.prefix, dumpOptions{workersRan: true, rewrite: func(raw *statedump.Snapshot) {
		// A PX stalledInterval guard: there or not by timing.
		delete(raw.Keys, queueName+":stalled-check")
		// A running drover worker's wake key ("<queue>:marker:<worker
		// id>"): written to end its wait, there until it waits again.
		for name := range raw.Keys {
			if strings.HasPrefix(name, queueName+":marker:") {
				delete(raw.Keys, name)
			}
		}
		if sc.rewrite != nil {
			sc.rewrite(raw)
		}
	}})
	// The events stream, normalised (timestamps are "<ts>"), is compared
	// per job: how different jobs' events interleave depends on timing.
	lines := map[string][]string{}
	if k := state.Keys[queueName+":events"]; k != nil {
		for _, e := range k.Stream {
			var job, line string
			for i := 0; i+1 < len(e.Fields); i += 2 {
				if e.Fields[i] == "jobId" {
					job = e.Fields[i+1]
				}
				line += e.Fields[i] + "=" + e.Fields[i+1] + " "
			}
			if line == "event=drained " { // when a worker finds nothing: timing
				continue
			}
			lines[job] = append(lines[job], line)
		}
		delete(state.Keys, queueName+":events")
	}
	return timedOutcome{
		order:  activeOrder(evs),
		events: lines,
		state:  state,
		notes:  notes,
		took:   took,
	}
}

// TestDifferentialTimed runs scenarios in which time passes (short delays
// and backoffs becoming due, deduplication ttls expiring, rate limit windows
// ending, locks expiring, scheduler runs) once with Node BullMQ alone and
// once per mix of drover and Node ([timedMixes]; all seven with
// DIFFTEST_TIMED_ALL=1), and requires the same processing order, each job's
// events (timestamps and interleaving aside), the same scenario notes and
// final Redis state, and no run far slower than Node's. The randomized
// differential tester keeps every delay an hour long; this covers what it
// cannot.
//
// Opt-in (DIFFTEST_TIMED=1, or `make test-timed`): the scenarios sleep,
// about 20 s with -parallel 32 (35 s with every mix), several times that
// at go test's default parallelism of GOMAXPROCS.
// DIFFTEST_TIMED_ONLY=<prefix> runs the scenarios whose name starts with
// it; DIFFTEST_TIMED_SEEDS=n adds n random ones (randomTimedScenarios).
// Their time margins (due times from one creation time, 100ms+ apart where
// the order is compared, ttls waited out) keep them deterministic on a
// loaded machine; the regression tests of what they found run in `make
// test`.
func TestDifferentialTimed(t *testing.T) {
	if os.Getenv("DIFFTEST_TIMED") == "" {
		t.Skip("opt-in: DIFFTEST_TIMED=1 (make test-timed)")
	}
	t.Parallel()
	setup := newSetup(t)
	only := os.Getenv("DIFFTEST_TIMED_ONLY")
	for _, sc := range append(timedScenarios(), randomTimedScenarios()...) {
		if !strings.HasPrefix(sc.name, only) {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			ref := setup(t)
			want := runTimed(t, ref, sc, nodeRoles)
			t.Logf("Node only: notes %q, order %v", want.notes, want.order)
			mixes := timedMixes
			if os.Getenv("DIFFTEST_TIMED_ALL") != "" {
				mixes = nil
				for _, a := range []impl{nodeImpl, droverImpl} {
					for _, w := range []impl{nodeImpl, droverImpl} {
						for _, m := range []impl{nodeImpl, droverImpl} {
							if r := (timedRoles{a, w, m}); r != nodeRoles {
								mixes = append(mixes, r)
							}
						}
					}
				}
			}
			for _, r := range mixes {
				t.Run(r.String(), func(t *testing.T) {
					b := ref.sibling(t)
					got := runTimed(t, b, sc, r)
					require.Equal(t, want.notes, got.notes, "scenario notes: Node only (expected) vs %s", r)
					if sc.unordered {
						want.order, got.order = nil, nil
					}
					require.Equal(t, want.order, got.order, "processing order: Node only (expected) vs %s", r)
					require.Equal(t, want.events, got.events, "events: Node only (expected) vs %s", r)
					requireSameState(t, want.state, got.state)
					t.Logf("took %s (Node only %s)", got.took, want.took)
					if !sc.anyDuration {
						require.Less(t, got.took, want.took+2*time.Second, "scenario duration: far longer than with Node alone")
					}
				})
			}
		})
	}
}

func sleepMS(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }

func timedScenarios() []timedScenario {
	return []timedScenario{
		{
			// Delayed jobs of several priorities and LIFO become due while
			// no worker runs; the worker then promotes them all at once.
			name: "DueTogetherPriorityLIFO",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				// One creation time for all: due times are then exact
				// whatever each add's latency.
				t0 := time.Now()
				dj := func(name string, ms, prio int, lifo bool) timedJob {
					n := map[string]any{"timestamp": t0.UnixMilli()}
					if ms > 0 {
						n["delay"] = ms
					}
					if prio > 0 {
						n["priority"] = prio
					}
					if lifo {
						n["lifo"] = true
					}
					return timedJob{name, n, &drover.JobOptions{Delay: time.Duration(ms) * time.Millisecond, Priority: prio, LIFO: lifo, Timestamp: t0}}
				}
				jobs := []timedJob{
					dj("plain", 0, 0, false),
					dj("d360", 360, 0, false),
					dj("d100p5", 100, 5, false),
					dj("d220p1", 220, 1, false),
					dj("d160lifo", 160, 0, true),
					dj("d280lifo", 280, 0, true),
					dj("p3", 0, 3, false),
					dj("d400p5", 400, 5, false),
					dj("d460", 460, 0, false),
					dj("d520lifo", 520, 0, true),
				}
				for i, j := range jobs {
					b.addTimed(t, r.add, j, map[string]any{"i": i})
				}
				sleepMS(800)
				b.startTimedWorker(t, r.work, timedWorker{})
				b.waitFinished(t, int64(len(jobs)))
				return nil
			},
		},
		{
			// Delayed jobs added while a worker idles: it must wake when
			// each becomes due.
			name: "DueWhileWorkerIdle",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.startTimedWorker(t, r.work, timedWorker{})
				sleepMS(200)
				b.addTimed(t, r.add, timedJob{"d1500", map[string]any{"delay": 1500}, &drover.JobOptions{Delay: 1500 * time.Millisecond}}, 1)
				b.addTimed(t, r.add, timedJob{"d100", map[string]any{"delay": 100}, &drover.JobOptions{Delay: 100 * time.Millisecond}}, 2)
				b.waitFinished(t, 1)
				b.addTimed(t, r.add, timedJob{"d50", map[string]any{"delay": 50}, &drover.JobOptions{Delay: 50 * time.Millisecond}}, 3)
				b.waitFinished(t, 3)
				return nil
			},
		},
		{
			// Retries with each backoff kind come due and are taken again.
			name: "BackoffRetries",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				bo := func(typ string, ms int) timedJob {
					return timedJob{
						typ,
						map[string]any{"attempts": 3, "backoff": map[string]any{"type": typ, "delay": ms}},
						&drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: typ, Delay: time.Duration(ms) * time.Millisecond}},
					}
				}
				b.addTimed(t, r.add, bo("fixed", 100), 1)
				b.addTimed(t, r.add, bo("exponential", 60), 2)
				b.addTimed(t, r.add, bo("linear100", 0), 3)
				b.addTimed(t, r.add, bo("zero", 0), 4)
				b.addTimed(t, r.add, bo("minus5", 0), 5)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.FailTimes(2, "again", "ok")}})
				b.waitFinished(t, 5)
				return nil
			},
			// Retries of different jobs can come due in the same
			// millisecond: only each job's own events are compared.
			unordered: true,
		},
		{
			// A job the processor moves to delayed comes back when due.
			name: "MoveToDelayedFromProcessor",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				then := bullmqoracle.Return("done")
				b.addTimed(t, r.add, timedJob{"a", nil, &drover.JobOptions{}}, 1)
				b.addTimed(t, r.add, timedJob{"b", map[string]any{"priority": 2}, &drover.JobOptions{Priority: 2}}, 2)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.MoveToDelayed(150*time.Millisecond, 2, &then)}})
				b.waitFinished(t, 2)
				return nil
			},
		},
		{
			// A deduplication id with a ttl: held until the ttl expires,
			// then a new job takes it.
			name: "DedupTTLExpires",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"dd", map[string]any{"deduplication": map[string]any{"id": "x", "ttl": 250}},
					&drover.JobOptions{Deduplication: &drover.Deduplication{ID: "x", TTL: 250 * time.Millisecond}}}
				var notes []string
				notes = append(notes, b.addTimed(t, r.add, j, 1))
				notes = append(notes, b.addTimed(t, r.add, j, 2))
				sleepMS(400)
				notes = append(notes, b.addTimed(t, r.add, j, 3))
				// A ttl outlives its job: "y" stays taken after its job
				// completed, until the ttl ends.
				y := timedJob{"dy", map[string]any{"deduplication": map[string]any{"id": "y", "ttl": 1500}},
					&drover.JobOptions{Deduplication: &drover.Deduplication{ID: "y", TTL: 1500 * time.Millisecond}}}
				notes = append(notes, b.addTimed(t, r.add, y, 4))
				b.startTimedWorker(t, r.work, timedWorker{})
				b.waitFinished(t, 3)
				notes = append(notes, b.addTimed(t, r.add, y, 5))
				sleepMS(1700)
				notes = append(notes, b.addTimed(t, r.add, y, 6))
				b.waitFinished(t, 4)
				sleepMS(1700)
				return notes
			},
		},
		{
			// extend: each deduplicated add restarts the ttl.
			name: "DedupExtend",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"dd", map[string]any{"deduplication": map[string]any{"id": "x", "ttl": 400, "extend": true}},
					&drover.JobOptions{Deduplication: &drover.Deduplication{ID: "x", TTL: 400 * time.Millisecond, Extend: true}}}
				var notes []string
				notes = append(notes, b.addTimed(t, r.add, j, 1))
				sleepMS(250)
				notes = append(notes, b.addTimed(t, r.add, j, 2))
				sleepMS(250)
				notes = append(notes, b.addTimed(t, r.add, j, 3)) // past the first ttl, within the extended one
				sleepMS(600)
				notes = append(notes, b.addTimed(t, r.add, j, 4))
				b.startTimedWorker(t, r.work, timedWorker{})
				b.waitFinished(t, 2)
				sleepMS(600) // past the ttl: a key left without one shows
				return notes
			},
		},
		{
			// Debounce: replace + extend with a delay: the last add's data
			// runs once, after the delay.
			name: "DedupDebounce",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"dd", map[string]any{"delay": 300, "deduplication": map[string]any{"id": "x", "ttl": 300, "extend": true, "replace": true}},
					&drover.JobOptions{Delay: 300 * time.Millisecond, Deduplication: &drover.Deduplication{ID: "x", TTL: 300 * time.Millisecond, Extend: true, Replace: true}}}
				b.startTimedWorker(t, r.work, timedWorker{})
				var notes []string
				for i := range 3 {
					notes = append(notes, b.addTimed(t, r.add, j, i))
					sleepMS(100)
				}
				b.waitFinished(t, 1)
				sleepMS(500)
				notes = append(notes, b.addTimed(t, r.add, j, 9))
				b.waitFinished(t, 2)
				sleepMS(500) // past the ttl: a key left without one shows
				return notes
			},
		},
		{
			// A deduplication id without ttl on a delayed job: held until
			// the job finishes.
			name: "DedupUntilFinishedDelayed",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"dd", map[string]any{"delay": 200, "deduplication": map[string]any{"id": "x"}},
					&drover.JobOptions{Delay: 200 * time.Millisecond, Deduplication: &drover.Deduplication{ID: "x"}}}
				b.startTimedWorker(t, r.work, timedWorker{})
				var notes []string
				notes = append(notes, b.addTimed(t, r.add, j, 1))
				notes = append(notes, b.addTimed(t, r.add, j, 2))
				b.waitFinished(t, 1)
				notes = append(notes, b.addTimed(t, r.add, j, 3))
				b.waitFinished(t, 2)
				return notes
			},
		},
		{
			// A worker limiter of 2 jobs per 300ms over 5 jobs.
			name: "WorkerLimiter",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				for i := range 5 {
					j := timedJob{"rl", map[string]any{}, &drover.JobOptions{}}
					if i%3 > 0 {
						j.node["priority"], j.drv.Priority = i%3, i%3
					}
					b.addTimed(t, r.add, j, i)
				}
				start := time.Now()
				b.startTimedWorker(t, r.work, timedWorker{limiter: &drover.RateLimit{Max: 2, Duration: 300 * time.Millisecond}})
				b.waitFinished(t, 5)
				return []string{fmt.Sprint("at least two windows: ", time.Since(start) >= 600*time.Millisecond)}
			},
			rewrite: dropLimiterKey,
		},
		{
			// A global rate limit of 1 per 250ms set by the admin side.
			name: "GlobalRateLimit",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				if r.admin == nodeImpl {
					require.NoError(t, b.oracle.SetGlobalRateLimit(ctx, b.prefix, queueName, 1, 250*time.Millisecond))
				} else {
					require.NoError(t, b.dq.SetGlobalRateLimit(ctx, 1, 250*time.Millisecond))
				}
				for i := range 3 {
					b.addTimed(t, r.add, timedJob{"g", nil, &drover.JobOptions{}}, i)
				}
				start := time.Now()
				b.startTimedWorker(t, r.work, timedWorker{})
				b.waitFinished(t, 3)
				return []string{fmt.Sprint("at least two windows: ", time.Since(start) >= 500*time.Millisecond)}
			},
			rewrite: dropLimiterKey,
		},
		{
			// The processor rate-limits the queue once (queue.rateLimit +
			// RateLimitError); the job runs again after the window.
			name: "RateLimitFromProcessor",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				then := bullmqoracle.Return("ok")
				for i := range 2 {
					b.addTimed(t, r.add, timedJob{"rp", nil, &drover.JobOptions{}}, i)
				}
				start := time.Now()
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.RateLimited(300*time.Millisecond, 1, &then)}})
				b.waitFinished(t, 2)
				return []string{fmt.Sprint("waited a window: ", time.Since(start) >= 300*time.Millisecond)}
			},
			rewrite: dropLimiterKey,
		},
		{
			// Delayed jobs become due while the queue is paused, then the
			// queue resumes.
			name: "DelayedWhilePaused",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.startTimedWorker(t, r.work, timedWorker{})
				b.pause(t, r.admin)
				var ids []string
				for i, d := range []int{100, 2000} {
					ids = append(ids, b.addTimed(t, r.add, timedJob{"dp", map[string]any{"delay": d}, &drover.JobOptions{Delay: time.Duration(d) * time.Millisecond}}, i))
				}
				sleepMS(1000)
				notes := []string{fmt.Sprint(assertAgree(t, b, ids...).states)}
				b.resume(t, r.admin)
				b.waitFinished(t, 2)
				return notes
			},
		},
		{
			// changeDelay from an hour to 150ms while a worker idles.
			name: "ChangeDelayShort",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				b.startTimedWorker(t, r.work, timedWorker{})
				sleepMS(100)
				id := b.addTimed(t, r.add, timedJob{"cd", map[string]any{"delay": 3600000}, &drover.JobOptions{Delay: time.Hour}}, 1)
				id2 := b.addTimed(t, r.add, timedJob{"cd2", map[string]any{"delay": 1500}, &drover.JobOptions{Delay: 1500 * time.Millisecond}}, 2)
				sleepMS(100)
				if r.admin == nodeImpl {
					require.NoError(t, b.oracle.ChangeDelay(ctx, b.prefix, queueName, id, 150))
					require.NoError(t, b.oracle.ChangeDelay(ctx, b.prefix, queueName, id2, 3600000))
				} else {
					require.NoError(t, b.dq.Job(id).ChangeDelay(ctx, 150*time.Millisecond))
					require.NoError(t, b.dq.Job(id2).ChangeDelay(ctx, time.Hour))
				}
				b.waitFinished(t, 1)
				sleepMS(300)
				return []string{fmt.Sprint(assertAgree(t, b, id, id2).states)}
			},
		},
		{
			// Many jobs due at the same moment, three at a time: each runs
			// exactly once.
			name: "ManyDueAtOnce",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{concurrency: 3}})
				for i := range 20 {
					b.addTimed(t, r.add, timedJob{"m", map[string]any{"delay": 200}, &drover.JobOptions{Delay: 200 * time.Millisecond}}, i)
				}
				b.waitFinished(t, 20)
				return nil
			},
			unordered: true,
		},
		{
			// Exponential backoff with jitter: random delays, same
			// attempts and outcome.
			name: "BackoffJitter",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"j",
					map[string]any{"attempts": 3, "backoff": map[string]any{"type": "exponential", "delay": 100, "jitter": 0.5}},
					&drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "exponential", Delay: 100 * time.Millisecond, Jitter: 0.5}}}
				b.addTimed(t, r.add, j, 1)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.FailTimes(2, "again", "ok")}})
				b.waitFinished(t, 1)
				return nil
			},
		},
		{
			// A processor's moveToDelayed to now: the job is due at once.
			name: "MoveToDelayedNow",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				then := bullmqoracle.Return("done")
				b.addTimed(t, r.add, timedJob{"a", nil, &drover.JobOptions{}}, 1)
				b.addTimed(t, r.add, timedJob{"b", nil, &drover.JobOptions{}}, 2)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.MoveToDelayed(0, 1, &then)}})
				b.waitFinished(t, 2)
				return nil
			},
			unordered: true,
		},
		{
			// Jobs running longer than their lock, renewed, while the other
			// side's worker checks for stalled jobs every 150ms: none
			// stalls.
			name: "LongJobsShortLock",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				for i := range 2 {
					b.addTimed(t, r.add, timedJob{"long", nil, &drover.JobOptions{}}, i)
				}
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{
					concurrency: 2, lockDuration: 300 * time.Millisecond, stalledInterval: 150 * time.Millisecond,
					behavior: bullmqoracle.Sleep(1200*time.Millisecond, "slept"),
				}})
				testkit.WaitFor(t, waitLong, "both jobs active", func() bool {
					n, err := b.rdb.LLen(context.Background(), b.prefix+":"+queueName+":active").Result()
					require.NoError(t, err)
					return n == 2
				})
				b.startTimedWorker(t, r.admin, timedWorker{workerSpec: workerSpec{
					name: "checker", lockDuration: 300 * time.Millisecond, stalledInterval: 150 * time.Millisecond,
				}})
				b.waitFinished(t, 2)
				return nil
			},
			unordered: true,
		},
		{
			// A worker limiter of 1 per 300ms while delayed jobs come due.
			name: "LimiterWithDelayed",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.addTimed(t, r.add, timedJob{"w1", nil, &drover.JobOptions{}}, 1)
				b.addTimed(t, r.add, timedJob{"w2", nil, &drover.JobOptions{}}, 2)
				b.addTimed(t, r.add, timedJob{"d100p1", map[string]any{"delay": 100, "priority": 1}, &drover.JobOptions{Delay: 100 * time.Millisecond, Priority: 1}}, 3)
				b.addTimed(t, r.add, timedJob{"d150lifo", map[string]any{"delay": 150, "lifo": true}, &drover.JobOptions{Delay: 150 * time.Millisecond, LIFO: true}}, 4)
				b.startTimedWorker(t, r.work, timedWorker{limiter: &drover.RateLimit{Max: 1, Duration: 400 * time.Millisecond}})
				b.waitFinished(t, 4)
				return nil
			},
			rewrite: dropLimiterKey,
		},
		{
			// A throttle ttl shorter than the job's delay: once the ttl
			// ended a second add makes a second job.
			name: "DedupThrottleDelayed",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"dt", map[string]any{"delay": 500, "deduplication": map[string]any{"id": "x", "ttl": 150}},
					&drover.JobOptions{Delay: 500 * time.Millisecond, Deduplication: &drover.Deduplication{ID: "x", TTL: 150 * time.Millisecond}}}
				b.startTimedWorker(t, r.work, timedWorker{})
				var notes []string
				notes = append(notes, b.addTimed(t, r.add, j, 1))
				notes = append(notes, b.addTimed(t, r.add, j, 2))
				sleepMS(300)
				notes = append(notes, b.addTimed(t, r.add, j, 3))
				b.waitFinished(t, 2)
				sleepMS(300)
				return notes
			},
		},
		{
			// A retry waiting an hour of backoff, promoted by the admin
			// side; promoteJobs on another.
			name: "PromoteBackoff",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				j := timedJob{"pb", map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 3600000}},
					&drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: "fixed", Delay: time.Hour}}}
				id1 := b.addTimed(t, r.add, j, 1)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.FailTimes(1, "again", "ok")}})
				testkit.WaitFor(t, waitLong, "job delayed", func() bool {
					n, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":delayed").Result()
					require.NoError(t, err)
					return n == 1
				})
				if r.admin == nodeImpl {
					require.NoError(t, b.oracle.Promote(ctx, b.prefix, queueName, id1))
				} else {
					require.NoError(t, b.dq.Job(id1).Promote(ctx))
				}
				b.waitFinished(t, 1)
				b.addTimed(t, r.add, j, 2)
				testkit.WaitFor(t, waitLong, "job delayed", func() bool {
					n, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":delayed").Result()
					require.NoError(t, err)
					return n == 1
				})
				if r.admin == nodeImpl {
					require.NoError(t, b.oracle.PromoteJobs(ctx, b.prefix, queueName, 0))
				} else {
					_, err := b.dq.PromoteJobs(ctx, 0)
					require.NoError(t, err)
				}
				b.waitFinished(t, 2)
				return nil
			},
		},
		{
			// A global concurrency of 1 over a worker of concurrency 3
			// while delayed jobs come due together.
			name: "GlobalConcurrencyDelayed",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.setGlobalConcurrency(t, r.admin, 1)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{concurrency: 3, behavior: bullmqoracle.Sleep(50*time.Millisecond, "ok")}})
				for i := range 4 {
					b.addTimed(t, r.add, timedJob{"gc", map[string]any{"delay": 150 + 100*i}, &drover.JobOptions{Delay: time.Duration(150+100*i) * time.Millisecond}}, i)
				}
				b.waitFinished(t, 4)
				return nil
			},
		},
		{
			// An every-300ms job scheduler whose runs are taken by the
			// worker side, then by the admin side.
			name: "SchedulerEveryHandover",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				if r.add == nodeImpl {
					_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 300, "limit": 5},
						map[string]any{"name": "tick", "data": map[string]any{"a": 1}})
					require.NoError(t, err)
				} else {
					_, err := b.dq.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: 300 * time.Millisecond, Limit: 5},
						&drover.JobTemplate{Name: "tick", Data: map[string]any{"a": 1}})
					require.NoError(t, err)
				}
				stop := b.startTimedWorker(t, r.work, timedWorker{})
				b.waitFinished(t, 2)
				stop()
				b.startTimedWorker(t, r.admin, timedWorker{})
				b.waitFinished(t, 5)
				sleepMS(400)
				return nil
			},
			rewrite: rankRuns,
		},
		{
			// A worker waiting for a delayed job due in 2.5s must take a
			// job added later but due sooner when it is due.
			name: "EarlierDelayedWhileWaiting",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.startTimedWorker(t, r.work, timedWorker{})
				b.addTimed(t, r.add, timedJob{"late", map[string]any{"delay": 2500}, &drover.JobOptions{Delay: 2500 * time.Millisecond}}, 1)
				sleepMS(300)
				added := time.Now()
				b.addTimed(t, r.add, timedJob{"soon", map[string]any{"delay": 100}, &drover.JobOptions{Delay: 100 * time.Millisecond}}, 2)
				b.waitFinished(t, 1)
				notes := []string{fmt.Sprint("the soon job ran within a second: ", time.Since(added) < time.Second)}
				b.waitFinished(t, 2)
				return notes
			},
		},
		{
			// The lock of a running job disappears: the other side's worker
			// recovers it as stalled and runs it; the first worker's late
			// finish then changes nothing.
			name: "LockLostMidJob",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				id := b.addTimed(t, r.add, timedJob{"lost", map[string]any{"attempts": 2}, &drover.JobOptions{Attempts: 2}}, 1)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{
					name: "holder", lockDuration: time.Second, skipStalledCheck: true,
					behavior: bullmqoracle.Sleep(1500*time.Millisecond, "holder"),
				}})
				testkit.WaitFor(t, waitLong, "job active", func() bool {
					n, err := b.rdb.Exists(ctx, b.prefix+":"+queueName+":"+id+":lock").Result()
					require.NoError(t, err)
					return n == 1
				})
				require.NoError(t, b.rdb.Del(ctx, b.prefix+":"+queueName+":"+id+":lock").Err())
				b.startTimedWorker(t, r.admin, timedWorker{workerSpec: workerSpec{
					lockDuration: time.Second, stalledInterval: 150 * time.Millisecond,
					behavior: bullmqoracle.Return("checker"),
				}})
				b.waitFinished(t, 1)
				sleepMS(1700) // the holder's processor returns
				return []string{fmt.Sprint(assertAgree(t, b, id).states)}
			},
		},
		{
			// The lock of a running job disappears and the other side's
			// worker recovers and still runs the job when the first one
			// finishes: that finish must not touch the job.
			name: "LockTakenMidJob",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				id := b.addTimed(t, r.add, timedJob{"taken", map[string]any{"attempts": 2}, &drover.JobOptions{Attempts: 2}}, 1)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{
					name: "holder", lockDuration: time.Second, skipStalledCheck: true,
					behavior: bullmqoracle.Sleep(2000*time.Millisecond, "holder"),
				}})
				lockKey := b.prefix + ":" + queueName + ":" + id + ":lock"
				testkit.WaitFor(t, waitLong, "job active", func() bool {
					n, err := b.rdb.Exists(ctx, lockKey).Result()
					require.NoError(t, err)
					return n == 1
				})
				require.NoError(t, b.rdb.Del(ctx, lockKey).Err())
				b.startTimedWorker(t, r.admin, timedWorker{workerSpec: workerSpec{
					lockDuration: time.Second, stalledInterval: 150 * time.Millisecond,
					behavior: bullmqoracle.Sleep(3000*time.Millisecond, "checker"),
				}})
				testkit.WaitFor(t, waitLong, "the checker runs the job", func() bool {
					stc, err := b.rdb.HGet(ctx, b.prefix+":"+queueName+":"+id, "stc").Int()
					if err != nil || stc != 1 {
						return false
					}
					n, err := b.rdb.Exists(ctx, lockKey).Result()
					require.NoError(t, err)
					return n == 1
				})
				sleepMS(2000) // the holder finishes while the checker runs the job
				notes := []string{fmt.Sprint(assertAgree(t, b, id).states)}
				b.waitFinished(t, 1)
				return append(notes, fmt.Sprint(assertAgree(t, b, id).states))
			},
		},
		{
			// Debounce whose job already started: the next add cannot
			// replace it and is deduplicated.
			name: "DedupDebounceStarted",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"dd", map[string]any{"delay": 100, "deduplication": map[string]any{"id": "x", "ttl": 1000, "extend": true, "replace": true}},
					&drover.JobOptions{Delay: 100 * time.Millisecond, Deduplication: &drover.Deduplication{ID: "x", TTL: time.Second, Extend: true, Replace: true}}}
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.Sleep(500*time.Millisecond, "ok")}})
				var notes []string
				notes = append(notes, b.addTimed(t, r.add, j, 1))
				sleepMS(300)
				notes = append(notes, b.addTimed(t, r.add, j, 2))
				b.waitFinished(t, 1)
				sleepMS(1200)
				notes = append(notes, b.addTimed(t, r.add, j, 3))
				b.waitFinished(t, 2)
				sleepMS(1200)
				return notes
			},
		},
		{
			// An every-1s scheduler changed to every 250ms while its next
			// run waits, then limited by an end date.
			name: "SchedulerReupsert",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				upsert := func(by impl, every time.Duration, end time.Time) {
					if by == nodeImpl {
						rep := map[string]any{"every": every.Milliseconds()}
						if !end.IsZero() {
							rep["endDate"] = end.UnixMilli()
						}
						_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", rep, map[string]any{"name": "tick"})
						require.NoError(t, err)
						return
					}
					_, err := b.dq.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: every, EndDate: end}, &drover.JobTemplate{Name: "tick"})
					require.NoError(t, err)
				}
				b.startTimedWorker(t, r.work, timedWorker{})
				upsert(r.add, time.Second, time.Time{})
				b.waitFinished(t, 1)
				sleepMS(100)
				upsert(r.admin, 250*time.Millisecond, time.Now().Add(900*time.Millisecond))
				sleepMS(1500)
				n, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":completed").Result()
				require.NoError(t, err)
				sc, err := b.dq.GetJobScheduler(ctx, "s1")
				require.NoError(t, err)
				return []string{fmt.Sprint("runs completed: ", n >= 3 && n <= 6), fmt.Sprint("scheduler left: ", sc != nil)}
			},
			rewrite:   rankRuns,
			unordered: true,
		},
		{
			// A Node and a drover worker (two Node workers in the reference
			// run) compete for jobs coming due: each runs exactly once.
			name: "CompetingWorkers",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				spec := timedWorker{workerSpec: workerSpec{concurrency: 2, behavior: bullmqoracle.Sleep(20*time.Millisecond, "ok")}}
				b.startTimedWorker(t, r.work, spec)
				b.startTimedWorker(t, r.admin, spec)
				for i := range 30 {
					d := 50 + 10*i
					b.addTimed(t, r.add, timedJob{"c", map[string]any{"delay": d, "attempts": 2}, &drover.JobOptions{Delay: time.Duration(d) * time.Millisecond, Attempts: 2}}, i)
				}
				b.waitFinished(t, 30)
				return nil
			},
			unordered: true,
		},
		{
			// A job whose lock disappears twice, with maxStalledCount 1 on
			// both workers: recovered once, then failed as stalled.
			name: "StalledTwiceFails",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				one := 1
				id := b.addTimed(t, r.add, timedJob{"st", map[string]any{"attempts": 3}, &drover.JobOptions{Attempts: 3}}, 1)
				lockKey := b.prefix + ":" + queueName + ":" + id + ":lock"
				dropLock := func() {
					testkit.WaitFor(t, waitLong, "job locked", func() bool {
						n, err := b.rdb.Exists(ctx, lockKey).Result()
						require.NoError(t, err)
						return n == 1
					})
					require.NoError(t, b.rdb.Del(ctx, lockKey).Err())
				}
				spec := workerSpec{
					lockDuration: time.Second, stalledInterval: 150 * time.Millisecond, maxStalledCount: &one,
					behavior: bullmqoracle.Sleep(1200*time.Millisecond, "ran"),
				}
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: spec})
				dropLock()
				spec.name = "second"
				b.startTimedWorker(t, r.admin, timedWorker{workerSpec: spec})
				testkit.WaitFor(t, waitLong, "job recovered", func() bool {
					n, err := b.rdb.HGet(ctx, b.prefix+":"+queueName+":"+id, "stc").Int()
					return err == nil && n == 1
				})
				dropLock()
				b.waitFinished(t, 1)
				sleepMS(1500) // both processors return
				return []string{fmt.Sprint(assertAgree(t, b, id).states)}
			},
			rewrite: func(raw *statedump.Snapshot) {
				// Which worker ran the second attempt is timing.
				if k := raw.Keys[queueName+":1"]; k != nil {
					delete(k.Hash, "pb")
				}
			},
		},
		{
			// Delayed jobs come due while the worker side's only worker is
			// busy: the other side's idle worker takes them on time.
			name: "DueWhileOtherBusy",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{name: "busy", behavior: bullmqoracle.FromData("b")}})
				b.addTimed(t, r.add, timedJob{"long", nil, &drover.JobOptions{}}, map[string]any{"b": bullmqoracle.Sleep(1500*time.Millisecond, "long")})
				testkit.WaitFor(t, waitLong, "long job active", func() bool {
					n, err := b.rdb.LLen(ctx, b.prefix+":"+queueName+":active").Result()
					require.NoError(t, err)
					return n == 1
				})
				b.startTimedWorker(t, r.admin, timedWorker{workerSpec: workerSpec{name: "idle", behavior: bullmqoracle.FromData("b")}})
				sleepMS(200)
				start := time.Now()
				for i, d := range []int{150, 400} {
					b.addTimed(t, r.add, timedJob{"due", map[string]any{"delay": d}, &drover.JobOptions{Delay: time.Duration(d) * time.Millisecond}}, map[string]any{"i": i})
				}
				b.waitFinished(t, 2)
				notes := []string{fmt.Sprint("both due jobs ran before the long one ended: ", time.Since(start) < 1100*time.Millisecond)}
				b.waitFinished(t, 3)
				return notes
			},
		},
		{
			// A retry's backoff ends while the queue is paused; the job
			// runs after resume.
			name: "BackoffWhilePaused",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				j := timedJob{"bp", map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 200}},
					&drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: "fixed", Delay: 200 * time.Millisecond}}}
				id := b.addTimed(t, r.add, j, 1)
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.Sequence(
					bullmqoracle.SleepThen(400*time.Millisecond, bullmqoracle.Fail("again")), bullmqoracle.Return("ok"))}})
				testkit.WaitFor(t, waitLong, "job active", func() bool {
					n, err := b.rdb.LLen(ctx, b.prefix+":"+queueName+":active").Result()
					require.NoError(t, err)
					return n == 1
				})
				// Paused while the job runs: its retry is delayed after the
				// pause and comes due while the queue is paused.
				b.pause(t, r.admin)
				sleepMS(1000)
				notes := []string{fmt.Sprint(assertAgree(t, b, id).states)}
				b.resume(t, r.admin)
				b.waitFinished(t, 1)
				return notes
			},
		},
		{
			// clean with a grace shorter than the run: only what is older
			// than the grace goes, in each state.
			name: "CleanGrace",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				add := func(i int, failing bool, delayed bool) {
					j := timedJob{"c", map[string]any{}, &drover.JobOptions{}}
					if delayed {
						j.node["delay"], j.drv.Delay = 3600000, time.Hour
					}
					bh := bullmqoracle.Return("ok")
					if failing {
						bh = bullmqoracle.Fail("no")
					}
					b.addTimed(t, r.add, j, map[string]any{"i": i, "b": bh})
				}
				stop := b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.FromData("b")}})
				add(1, false, false)
				add(2, true, false)
				add(3, false, true)
				b.waitFinished(t, 2)
				stop()
				add(4, false, false)
				sleepMS(600)
				stop = b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.FromData("b")}})
				add(5, false, false)
				add(6, true, false)
				add(7, false, true)
				b.waitFinished(t, 5)
				stop()
				add(8, false, false)
				var notes []string
				for _, st := range []string{"completed", "failed", "delayed", "wait"} {
					var ids []string
					if r.admin == nodeImpl {
						var err error
						ids, err = b.oracle.Clean(ctx, b.prefix, queueName, 300, 0, st)
						require.NoError(t, err)
					} else {
						var err error
						ds := drover.JobState(st)
						if st == "wait" {
							ds = drover.StateWaiting
						}
						ids, err = b.dq.Clean(ctx, 300*time.Millisecond, 0, ds)
						require.NoError(t, err)
					}
					slices.Sort(ids)
					notes = append(notes, fmt.Sprint(st, ids))
				}
				return notes
			},
		},
		{
			// A fractional age bound (0.4s) on the jobs: a later finish
			// removes what is older.
			name: "RetentionAgeFraction",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				j := timedJob{"ra", map[string]any{"removeOnComplete": map[string]any{"age": 0.4}},
					&drover.JobOptions{RemoveOnComplete: &drover.Retention{Age: 400 * time.Millisecond}}}
				b.startTimedWorker(t, r.work, timedWorker{})
				b.addTimed(t, r.add, j, 1)
				b.addTimed(t, r.add, j, 2)
				b.waitFinished(t, 2)
				sleepMS(700)
				b.addTimed(t, r.add, j, 3)
				testkit.WaitFor(t, waitLong, "job 3 completed", func() bool {
					n, err := b.rdb.ZScore(context.Background(), b.prefix+":"+queueName+":completed", "3").Result()
					return err == nil && n > 0
				})
				return nil
			},
		},
		{
			// An every-200ms scheduler starting in 400ms, limited to 3
			// runs.
			name: "SchedulerStartDateLimit",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				start := time.Now().Add(1500 * time.Millisecond)
				if r.add == nodeImpl {
					_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1",
						map[string]any{"every": 200, "limit": 3, "startDate": start.UnixMilli()}, map[string]any{"name": "tick"})
					require.NoError(t, err)
				} else {
					_, err := b.dq.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: 200 * time.Millisecond, Limit: 3, StartDate: start},
						&drover.JobTemplate{Name: "tick"})
					require.NoError(t, err)
				}
				b.startTimedWorker(t, r.work, timedWorker{})
				b.waitFinished(t, 3)
				notes := []string{fmt.Sprint("first run not before the start date: ", !time.Now().Before(start.Add(400*time.Millisecond)))}
				sleepMS(600)
				sc, err := b.dq.GetJobScheduler(ctx, "s1")
				require.NoError(t, err)
				return append(notes, fmt.Sprint("scheduler left: ", sc != nil))
			},
			rewrite: rankRuns,
		},
		{
			// The scheduler is removed, then upserted again, while a run is
			// active.
			name: "SchedulerChangedWhileRunActive",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				upsert := func(by impl, every time.Duration) {
					if by == nodeImpl {
						_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": every.Milliseconds()}, map[string]any{"name": "tick"})
						require.NoError(t, err)
						return
					}
					_, err := b.dq.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: every}, &drover.JobTemplate{Name: "tick"})
					require.NoError(t, err)
				}
				// A run active and the next one made: a worker makes it
				// after it took the run, in a call of its own.
				waitActive := func() {
					testkit.WaitFor(t, waitLong, "a run active, the next delayed", func() bool {
						n, err := b.rdb.LLen(ctx, b.prefix+":"+queueName+":active").Result()
						require.NoError(t, err)
						d, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":delayed").Result()
						require.NoError(t, err)
						return n == 1 && d == 1
					})
				}
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.Sleep(400*time.Millisecond, "ok")}})
				upsert(r.add, 300*time.Millisecond)
				waitActive()
				b.removeJobScheduler(t, r.admin, "s1")
				b.waitFinished(t, 1)
				sleepMS(500)
				upsert(r.admin, 250*time.Millisecond)
				b.waitFinished(t, 2)
				waitActive()
				upsert(r.add, 600*time.Millisecond)
				b.waitFinished(t, 4)
				sleepMS(100)
				b.removeJobScheduler(t, r.admin, "s1")
				sleepMS(600)
				return nil
			},
			rewrite:   rankRuns,
			unordered: true,
		},
		{
			// A flow whose children are delayed (one retries with a
			// backoff) and whose parent has a delay of its own once its
			// children are done.
			name: "FlowDelayed",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				ok := bullmqoracle.Return("ok")
				flaky := bullmqoracle.FailTimes(1, "again", "ok")
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.FromData("b")}})
				if r.add == nodeImpl {
					_, err := b.oracle.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{
						Name: "p", QueueName: queueName, Data: map[string]any{"b": ok}, Opts: map[string]any{"jobId": "p", "delay": 300},
						Children: []bullmqoracle.FlowJob{
							{Name: "c1", QueueName: queueName, Data: map[string]any{"b": ok}, Opts: map[string]any{"jobId": "c1", "delay": 200}},
							{Name: "c2", QueueName: queueName, Data: map[string]any{"b": flaky},
								Opts: map[string]any{"jobId": "c2", "delay": 400, "attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 150}}},
						},
					})
					require.NoError(t, err)
				} else {
					fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
					require.NoError(t, err)
					_, err = fp.Add(ctx, drover.FlowJob{
						Name: "p", QueueName: queueName, Data: map[string]any{"b": ok}, Opts: &drover.JobOptions{JobID: "p", Delay: 300 * time.Millisecond},
						Children: []drover.FlowJob{
							{Name: "c1", QueueName: queueName, Data: map[string]any{"b": ok}, Opts: &drover.JobOptions{JobID: "c1", Delay: 200 * time.Millisecond}},
							{Name: "c2", QueueName: queueName, Data: map[string]any{"b": flaky},
								Opts: &drover.JobOptions{JobID: "c2", Delay: 400 * time.Millisecond, Attempts: 2, Backoff: &drover.Backoff{Type: "fixed", Delay: 150 * time.Millisecond}}},
						},
					})
					require.NoError(t, err)
				}
				b.waitFinished(t, 3)
				return nil
			},
		},
		{
			// A global concurrency of 1 shared by a worker of each side
			// (two Node workers in the reference run).
			name: "GlobalConcurrencyTwoWorkers",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				b.setGlobalConcurrency(t, r.admin, 1)
				spec := timedWorker{workerSpec: workerSpec{concurrency: 2, behavior: bullmqoracle.Sleep(100*time.Millisecond, "ok")}}
				b.startTimedWorker(t, r.work, spec)
				b.startTimedWorker(t, r.admin, spec)
				start := time.Now()
				for i := range 6 {
					b.addTimed(t, r.add, timedJob{"gc", nil, &drover.JobOptions{}}, i)
				}
				var maxActive int64
				testkit.WaitFor(t, waitLong, "6 jobs finished", func() bool {
					n, err := b.rdb.LLen(ctx, b.prefix+":"+queueName+":active").Result()
					require.NoError(t, err)
					maxActive = max(maxActive, n)
					c, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":completed").Result()
					require.NoError(t, err)
					return c == 6
				})
				return []string{fmt.Sprint("one at a time: ", maxActive <= 1), fmt.Sprint("serial: ", time.Since(start) >= 600*time.Millisecond)}
			},
			unordered: true,
		},
		{
			// A limiter of 2 per 300ms on a worker of each side.
			name: "WorkerLimiterTwoWorkers",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				spec := timedWorker{limiter: &drover.RateLimit{Max: 2, Duration: 300 * time.Millisecond}}
				for i := range 6 {
					b.addTimed(t, r.add, timedJob{"rl", nil, &drover.JobOptions{}}, i)
				}
				start := time.Now()
				b.startTimedWorker(t, r.work, spec)
				b.startTimedWorker(t, r.admin, spec)
				b.waitFinished(t, 6)
				took := time.Since(start)
				return []string{fmt.Sprint("at least two windows: ", took >= 600*time.Millisecond), fmt.Sprint("within four: ", took < 1200*time.Millisecond)}
			},
			rewrite:   dropLimiterKey,
			unordered: true,
		},
		{
			// An every-200ms scheduler whose runs take 450ms: the worker
			// falls behind the schedule.
			name: "SchedulerSlowWorker",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				ctx := context.Background()
				if r.add == nodeImpl {
					_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 200, "limit": 5},
						map[string]any{"name": "tick"})
					require.NoError(t, err)
				} else {
					_, err := b.dq.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: 200 * time.Millisecond, Limit: 5},
						&drover.JobTemplate{Name: "tick"})
					require.NoError(t, err)
				}
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{behavior: bullmqoracle.Sleep(450*time.Millisecond, "ok")}})
				b.waitFinished(t, 5)
				sleepMS(300)
				return nil
			},
			rewrite: rankRuns,
		},
		{
			// A worker of concurrency 3; the first of three delayed jobs
			// falls due while the queue is paused. After the resume the
			// worker takes it with two slots left and must still wake for
			// the next ones (drover waited its DrainDelay:
			// TestWorkerWakesForDelayedAfterPartialFetch).
			name: "DelayedAfterResumeConcurrency",
			run: func(t *testing.T, b *bundle, r timedRoles) []string {
				b.startTimedWorker(t, r.work, timedWorker{workerSpec: workerSpec{concurrency: 3}})
				sleepMS(200)
				t0 := time.Now()
				for i, d := range []int{300, 600, 900} {
					b.addTimed(t, r.add, timedJob{"d", map[string]any{"delay": d, "timestamp": t0.UnixMilli()},
						&drover.JobOptions{Delay: time.Duration(d) * time.Millisecond, Timestamp: t0}}, i)
				}
				time.Sleep(time.Until(t0.Add(150 * time.Millisecond)))
				b.pause(t, r.admin)
				time.Sleep(time.Until(t0.Add(450 * time.Millisecond)))
				b.resume(t, r.admin)
				b.waitFinished(t, 3)
				return []string{fmt.Sprint("on time: ", time.Since(t0) < 2*time.Second)}
			},
		},
	}
}

// dropLimiterKey drops the rate limiter key, whose presence after the run
// depends on whether the last window expired before the dump.
func dropLimiterKey(raw *statedump.Snapshot) {
	delete(raw.Keys, queueName+":limiter")
}
