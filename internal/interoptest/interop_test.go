package interoptest_test

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestInterop runs the queue scenarios of issue 2 in both directions: one
// implementation adds the jobs, the other's Worker processes them, and both
// read every step the same way.
func TestInterop(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	scenarios := []struct {
		name string
		run  func(t *testing.T, b *bundle, producer, consumer impl)
	}{
		{"Plain", interopPlain},
		{"Delayed", interopDelayed},
		{"Prioritized", interopPrioritized},
		{"LIFO", interopLIFO},
		{"CustomJobID", interopCustomID},
		{"PausedQueue", interopPaused},
		{"Bulk1000", interopBulk},
		{"IdleWorkerWakesOnAdd", interopWake},
	}
	for _, dir := range []struct {
		name     string
		producer impl
	}{
		{"NodeAddDroverProcess", nodeImpl},
		{"DroverAddNodeProcess", droverImpl},
	} {
		t.Run(dir.name, func(t *testing.T) {
			t.Parallel()

			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()

					sc.run(t, setup(t), dir.producer, dir.producer.other())
				})
			}
		})
	}

	t.Run("MixedWorkers", func(t *testing.T) {
		t.Parallel()

		interopMixedWorkers(t, setup(t))
	})

	t.Run("GlobalConcurrencySetByNode", func(t *testing.T) {
		t.Parallel()

		interopGlobalConcurrency(t, setup(t))
	})

	t.Run("GlobalRateLimitSetByNode", func(t *testing.T) {
		t.Parallel()

		interopGlobalRateLimit(t, setup(t))
	})
}

// payload is a job's data: the echoing workers return it, so the return
// value identifies the job. The "/" exercises cjson's "\/" escaping.
func payload(name string, i int) map[string]any {
	return map[string]any{"job": name, "i": i, "path": "a/b"}
}

// checkCompleted requires job id to be completed, read alike by Node and
// drover, with its data as return value, one attempt, and sane times.
func checkCompleted(t *testing.T, b *bundle, id string) {
	t.Helper()
	nj := assertJobAgree(t, b, id)
	require.JSONEq(t, string(nj.Data), string(nj.ReturnValue), "job %s returns its data", id)
	require.EqualValues(t, 1, nj.AttemptsMade, "job %s", id)
	require.EqualValues(t, 1, nj.AttemptsStarted, "job %s", id)
	require.Equal(t, workerName, nj.ProcessedBy, "job %s", id)
	require.NotNil(t, nj.ProcessedOn, "job %s processedOn", id)
	require.NotNil(t, nj.FinishedOn, "job %s finishedOn", id)
	require.GreaterOrEqual(t, *nj.ProcessedOn, nj.Timestamp, "job %s", id)
	require.GreaterOrEqual(t, *nj.FinishedOn, *nj.ProcessedOn, "job %s", id)
}

func isCompleted(e drover.Event) bool { return e.Name == drover.EventCompleted }

func interopPlain(t *testing.T, b *bundle, producer, consumer impl) {
	var ids []string
	for i := range 3 {
		ids = append(ids, b.add(t, producer, jobSpec{name: "plain", data: payload("plain", i)}))
	}
	require.Equal(t, []string{"1", "2", "3"}, ids)
	a := assertAgree(t, b, ids...)
	require.Equal(t, allCounts("waiting", 3), a.counts)
	require.Equal(t, statesOf("waiting", ids...), a.states)

	stop := b.startWorker(t, consumer, workerSpec{})
	evs := b.waitEvents(t, 3, isCompleted)
	stop()

	require.Equal(t, ids, activeOrder(evs), "FIFO")
	a = assertAgree(t, b, ids...)
	require.Equal(t, allCounts("completed", 3), a.counts)
	require.Equal(t, statesOf("completed", ids...), a.states)
	for _, id := range ids {
		checkCompleted(t, b, id)
	}
}

func interopDelayed(t *testing.T, b *bundle, producer, consumer impl) {
	// The worker is already blocked when the delayed jobs arrive: the
	// producer's delay marker must wake it when the first one is due.
	stop := b.startWorker(t, consumer, workerSpec{})
	late := b.add(t, producer, jobSpec{name: "late", data: payload("late", 0), delay: 1500 * time.Millisecond})
	early := b.add(t, producer, jobSpec{name: "early", data: payload("early", 1), delay: 1200 * time.Millisecond})
	a := assertAgree(t, b, late, early)
	require.Equal(t, allCounts("delayed", 2), a.counts)
	require.Equal(t, statesOf("delayed", late, early), a.states)

	evs := b.waitEvents(t, 2, isCompleted)
	stop()

	require.Equal(t, []string{early, late}, activeOrder(evs), "due order")
	a = assertAgree(t, b, late, early)
	require.Equal(t, allCounts("completed", 2), a.counts)
	for _, id := range []string{late, early} {
		checkCompleted(t, b, id)
		nj := assertJobAgree(t, b, id)
		require.Zero(t, nj.Delay, "promotion resets the delay field of job %s", id)
		due := nj.Timestamp + int64(nj.Opts["delay"].(float64))
		require.GreaterOrEqual(t, *nj.ProcessedOn, due, "job %s ran before it was due", id)
	}
	var promoted []string
	for _, e := range evs {
		if e.Name == drover.EventWaiting && e.Prev == "delayed" {
			promoted = append(promoted, e.JobID)
		}
	}
	require.Equal(t, []string{early, late}, promoted, "waiting prev=delayed on promotion")
}

func interopPrioritized(t *testing.T, b *bundle, producer, consumer impl) {
	add := func(name string, prio int) string {
		return b.add(t, producer, jobSpec{name: name, data: payload(name, prio), priority: prio})
	}
	p3a := add("p3a", 3)
	p1a := add("p1a", 1)
	p2a := add("p2a", 2)
	p1b := add("p1b", 1)
	p3b := add("p3b", 3)
	plain := add("plain", 0)
	all := []string{p3a, p1a, p2a, p1b, p3b, plain}
	a := assertAgree(t, b, all...)
	require.Equal(t, allCounts("prioritized", 5, "waiting", 1), a.counts)
	require.Equal(t, "waiting", a.states[plain])
	require.Equal(t, "prioritized", a.states[p2a])

	stop := b.startWorker(t, consumer, workerSpec{})
	evs := b.waitEvents(t, len(all), isCompleted)
	stop()

	// wait before prioritized; lower priority number first; FIFO within a
	// priority.
	require.Equal(t, []string{plain, p1a, p1b, p2a, p3a, p3b}, activeOrder(evs))
	a = assertAgree(t, b, all...)
	require.Equal(t, allCounts("completed", len(all)), a.counts)
	for _, id := range all {
		checkCompleted(t, b, id)
	}
}

func interopLIFO(t *testing.T, b *bundle, producer, consumer impl) {
	add := func(name string, lifo bool) string {
		return b.add(t, producer, jobSpec{name: name, data: payload(name, 0), lifo: lifo})
	}
	a1 := add("a", false)
	b2 := add("b", false)
	c3 := add("c", true)
	d4 := add("d", false)
	e5 := add("e", true)
	all := []string{a1, b2, c3, d4, e5}
	a := assertAgree(t, b, all...)
	require.Equal(t, allCounts("waiting", 5), a.counts)

	stop := b.startWorker(t, consumer, workerSpec{})
	evs := b.waitEvents(t, len(all), isCompleted)
	stop()

	// LIFO jobs jump the queue, the last one first; the rest stay FIFO.
	require.Equal(t, []string{e5, c3, a1, b2, d4}, activeOrder(evs))
	a = assertAgree(t, b, all...)
	require.Equal(t, allCounts("completed", len(all)), a.counts)
	for _, id := range all {
		checkCompleted(t, b, id)
	}
}

func interopCustomID(t *testing.T, b *bundle, producer, consumer impl) {
	ctx := context.Background()
	const id = "order-42"
	got := b.add(t, producer, jobSpec{name: "custom", data: map[string]any{"v": 1}, jobID: id})
	require.Equal(t, id, got)

	// The duplicate, added by both implementations: drover says so
	// explicitly and returns the existing job; Node returns the existing id.
	duplicates := func(wantState drover.JobState) {
		t.Helper()
		res, err := b.dq.Add(ctx, "custom", map[string]any{"v": 2}, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
		require.Equal(t, drover.AddDuplicate, res.Outcome)
		require.Equal(t, wantState, res.ExistingState)
		require.Equal(t, id, res.Job.ID)
		require.JSONEq(t, `{"v":1}`, string(res.Job.Data), "the existing job is not updated")
		nodeID, err := b.oracle.Add(ctx, b.prefix, queueName, "custom", map[string]any{"v": 3}, map[string]any{"jobId": id})
		require.NoError(t, err)
		require.Equal(t, id, nodeID)
	}
	duplicates(drover.StateWaiting)

	var dup []string
	for _, e := range b.events(t) {
		if e.Name == drover.EventDuplicated {
			dup = append(dup, e.JobID)
		}
	}
	require.Equal(t, []string{id, id}, dup, "one duplicated event per duplicate add")
	n, err := b.rdb.Get(ctx, b.prefix+":"+queueName+":id").Result()
	require.NoError(t, err)
	require.Equal(t, "3", n, "every add attempt takes a counter value")
	a := assertAgree(t, b, id)
	require.Equal(t, allCounts("waiting", 1), a.counts)

	stop := b.startWorker(t, consumer, workerSpec{})
	b.waitEvents(t, 1, isCompleted)
	stop()

	a = assertAgree(t, b, id)
	require.Equal(t, allCounts("completed", 1), a.counts)
	checkCompleted(t, b, id)
	nj := assertJobAgree(t, b, id)
	require.JSONEq(t, `{"v":1}`, string(nj.ReturnValue))
	require.Equal(t, id, nj.Opts["jobId"])

	// A finished job still owns its id.
	duplicates(drover.StateCompleted)
	a = assertAgree(t, b, id)
	require.Equal(t, allCounts("completed", 1), a.counts)
}

func interopPaused(t *testing.T, b *bundle, producer, consumer impl) {
	ctx := context.Background()
	b.pause(t, producer)
	nodePaused, err := b.oracle.IsPaused(ctx, b.prefix, queueName)
	require.NoError(t, err)
	droverPaused, err := b.dq.IsPaused(ctx)
	require.NoError(t, err)
	require.True(t, nodePaused)
	require.True(t, droverPaused)

	stop := b.startWorker(t, consumer, workerSpec{})
	j1 := b.add(t, producer, jobSpec{name: "p1", data: payload("p1", 1)})
	j2 := b.add(t, producer, jobSpec{name: "p2", data: payload("p2", 2), priority: 1})
	j3 := b.add(t, producer, jobSpec{name: "p3", data: payload("p3", 3)})
	all := []string{j1, j2, j3}
	// Adds to a paused queue write no wake-up marker.
	n, err := b.rdb.Exists(ctx, b.prefix+":"+queueName+":marker").Result()
	require.NoError(t, err)
	require.Zero(t, n, "no marker while paused")

	// Give the running worker the chance to (wrongly) take a job.
	time.Sleep(300 * time.Millisecond)
	a := assertAgree(t, b, all...)
	require.Equal(t, allCounts("waiting", 2, "prioritized", 1), a.counts)
	require.Equal(t, map[string]string{j1: "waiting", j2: "prioritized", j3: "waiting"}, a.states)
	require.Empty(t, activeOrder(b.events(t)), "no job starts while the queue is paused")

	// The other implementation resumes; its marker wakes the worker.
	b.resume(t, consumer)
	evs := b.waitEvents(t, len(all), isCompleted)
	stop()

	require.Equal(t, []string{j1, j3, j2}, activeOrder(evs))
	a = assertAgree(t, b, all...)
	require.Equal(t, allCounts("completed", 3), a.counts)
	for _, id := range all {
		checkCompleted(t, b, id)
	}
	var names []string
	for _, e := range evs {
		if e.Name == drover.EventPaused || e.Name == drover.EventResumed {
			names = append(names, string(e.Name))
		}
	}
	require.Equal(t, []string{"paused", "resumed"}, names)
}

func interopBulk(t *testing.T, b *bundle, producer, consumer impl) {
	const n = 1000
	specs := make([]jobSpec, n)
	for i := range specs {
		specs[i] = jobSpec{name: "bulk", data: map[string]any{"i": i}}
	}
	ids := b.addBulk(t, producer, specs)
	require.Len(t, ids, n)
	for i, id := range ids {
		require.Equal(t, strconv.Itoa(i+1), id)
	}
	sample := []string{ids[0], ids[1], ids[499], ids[n-1]}
	a := assertAgree(t, b, sample...)
	require.Equal(t, allCounts("waiting", n), a.counts)
	nj := assertJobAgree(t, b, ids[n-1])
	require.JSONEq(t, `{"i":999}`, string(nj.Data))

	stop := b.startWorker(t, consumer, workerSpec{concurrency: 10})
	evs := b.waitEvents(t, n, isCompleted)
	stop()

	a = assertAgree(t, b, sample...)
	require.Equal(t, allCounts("completed", n), a.counts)
	require.Equal(t, statesOf("completed", sample...), a.states)
	for _, id := range sample {
		checkCompleted(t, b, id)
	}
	seen := map[string]int{}
	for _, e := range evs {
		if e.Name == drover.EventCompleted {
			seen[e.JobID]++
			var rv map[string]int
			require.NoError(t, json.Unmarshal(e.ReturnValue, &rv))
			require.Equal(t, e.JobID, strconv.Itoa(rv["i"]+1))
		}
	}
	require.Len(t, seen, n, "every job completed")
	for id, c := range seen {
		require.Equal(t, 1, c, "job %s completed once", id)
	}
}

func interopWake(t *testing.T, b *bundle, producer, consumer impl) {
	// Both sides' idle workers block on the marker for up to 5 s (drainDelay);
	// a job picked up well before that was woken by the producer's marker.
	const wakeBound = 3 * time.Second
	stop := b.startWorker(t, consumer, workerSpec{})
	time.Sleep(300 * time.Millisecond) // let the worker find nothing and block
	for i, s := range []jobSpec{
		{name: "plain"}, {name: "prioritized", priority: 2}, {name: "lifo", lifo: true},
	} {
		s.data = payload(s.name, i)
		id := b.add(t, producer, s)
		b.waitEventsWithin(t, wakeBound, 1, func(e drover.Event) bool { return isCompleted(e) && e.JobID == id })
		a := assertAgree(t, b, id)
		require.Equal(t, "completed", a.states[id])
		checkCompleted(t, b, id)
		time.Sleep(200 * time.Millisecond) // idle again before the next add
	}
	stop()
}

// interopMixedWorkers runs a Node worker and a drover worker on one queue
// with jobs from both producers: every job runs exactly once.
func interopMixedWorkers(t *testing.T, b *bundle) {
	const perSide = 150
	stopNode := b.startWorker(t, nodeImpl, workerSpec{name: "w-node", concurrency: 4})
	stopDrover := b.startWorker(t, droverImpl, workerSpec{name: "w-drover", concurrency: 4})
	var ids []string
	for _, by := range []impl{nodeImpl, droverImpl} {
		specs := make([]jobSpec, perSide)
		for i := range specs {
			specs[i] = jobSpec{name: string(by), data: map[string]any{"by": string(by), "i": i}}
			switch {
			case i%50 == 0:
				specs[i].delay = 200 * time.Millisecond
			case i%5 == 0:
				specs[i].priority = 1 + i%3
			case i%7 == 0:
				specs[i].lifo = true
			}
		}
		ids = append(ids, b.addBulk(t, by, specs)...)
	}
	evs := b.waitEvents(t, len(ids), isCompleted)
	stopNode()
	stopDrover()

	a := assertAgree(t, b)
	require.Equal(t, allCounts("completed", len(ids)), a.counts)
	completions := map[string]int{}
	for _, e := range evs {
		if e.Name == drover.EventCompleted {
			completions[e.JobID]++
		}
	}
	require.Len(t, completions, len(ids))
	jobs, err := b.dq.GetJobs(context.Background(), []drover.JobState{drover.StateCompleted}, 0, -1, true)
	require.NoError(t, err)
	require.Len(t, jobs, len(ids))
	by := map[string]int{}
	for _, j := range jobs {
		require.Equal(t, 1, completions[j.ID], "job %s completed once", j.ID)
		require.Equal(t, 1, j.AttemptsStarted, "job %s started once", j.ID)
		require.Equal(t, 1, j.AttemptsMade, "job %s", j.ID)
		require.JSONEq(t, string(j.Data), string(j.ReturnValue), "job %s", j.ID)
		by[j.ProcessedBy]++
	}
	t.Logf("jobs per worker: %v", by)
	require.Positive(t, by["w-node"], "the Node worker took jobs")
	require.Positive(t, by["w-drover"], "the drover worker took jobs")
	for _, id := range []string{ids[0], ids[perSide], ids[len(ids)-1]} {
		assertJobAgree(t, b, id)
	}
}

// interopGlobalConcurrency: Node's Queue.setGlobalConcurrency (meta
// "concurrency") bounds a drover worker whose own Concurrency is higher.
func interopGlobalConcurrency(t *testing.T, b *bundle) {
	ctx := context.Background()
	require.NoError(t, b.oracle.SetGlobalConcurrency(ctx, b.prefix, queueName, 2))
	specs := make([]jobSpec, 8)
	for i := range specs {
		specs[i] = jobSpec{name: "gc", data: map[string]any{"i": i}}
	}
	ids := b.addBulk(t, nodeImpl, specs)
	var running, most atomic.Int64
	stop := b.startWorker(t, droverImpl, workerSpec{concurrency: 6, drover: func(ctx context.Context, job *drover.Job) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		return job.Data, nil
	}})
	b.waitEvents(t, len(ids), isCompleted)
	stop()
	require.Equal(t, int64(2), most.Load(), "at most the global concurrency runs at once, and it is used")
	a := assertAgree(t, b, ids...)
	require.Equal(t, allCounts("completed", len(ids)), a.counts)
}

// interopGlobalRateLimit: Node's setGlobalRateLimit(2 per 500 ms) holds a
// drover worker, which counts its activations in the shared limiter key.
func interopGlobalRateLimit(t *testing.T, b *bundle) {
	ctx := context.Background()
	require.NoError(t, b.oracle.SetGlobalRateLimit(ctx, b.prefix, queueName, 2, 500*time.Millisecond))
	specs := make([]jobSpec, 6)
	for i := range specs {
		specs[i] = jobSpec{name: "rl", data: map[string]any{"i": i}}
	}
	ids := b.addBulk(t, nodeImpl, specs)
	var mu sync.Mutex
	var starts []time.Time
	stop := b.startWorker(t, droverImpl, workerSpec{concurrency: 6, drover: func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return job.Data, nil
	}})
	b.waitEvents(t, len(ids), isCompleted)
	stop()
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	// Six jobs at two per window need three windows: jobs 3 and 5 wait for a
	// new one.
	require.GreaterOrEqual(t, starts[2].Sub(starts[0]), 450*time.Millisecond)
	require.GreaterOrEqual(t, starts[4].Sub(starts[2]), 450*time.Millisecond)
	a := assertAgree(t, b, ids...)
	require.Equal(t, allCounts("completed", len(ids)), a.counts)
}
