package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// admin performs one admin operation with Node BullMQ's Queue/Job or
// drover's Queue/Job, whichever by says.
type admin struct {
	t  *testing.T
	b  *bundle
	by impl
}

func (a admin) node() bool { return a.by == nodeImpl }

func (a admin) promote(id string) {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		require.NoError(a.t, a.b.oracle.Promote(ctx, a.b.prefix, queueName, id))
		return
	}
	require.NoError(a.t, a.b.dq.Job(id).Promote(ctx))
}

func (a admin) changeDelay(id string, d time.Duration) {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		require.NoError(a.t, a.b.oracle.ChangeDelay(ctx, a.b.prefix, queueName, id, d.Milliseconds()))
		return
	}
	require.NoError(a.t, a.b.dq.Job(id).ChangeDelay(ctx, d))
}

func (a admin) changePriority(id string, p int, lifo bool) {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		require.NoError(a.t, a.b.oracle.ChangePriority(ctx, a.b.prefix, queueName, id, p, lifo))
		return
	}
	require.NoError(a.t, a.b.dq.Job(id).ChangePriority(ctx, p, lifo))
}

func (a admin) updateProgress(id string, v any) {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		require.NoError(a.t, a.b.oracle.UpdateProgress(ctx, a.b.prefix, queueName, id, v))
		return
	}
	require.NoError(a.t, a.b.dq.Job(id).UpdateProgress(ctx, v))
}

func (a admin) log(id, line string) int {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		n, err := a.b.oracle.Log(ctx, a.b.prefix, queueName, id, line)
		require.NoError(a.t, err)
		return int(n)
	}
	j, err := a.b.dq.GetJob(ctx, id) // Log honours the job's KeepLogs
	require.NoError(a.t, err)
	n, err := j.Log(ctx, line)
	require.NoError(a.t, err)
	return n
}

func (a admin) remove(id string) {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		code, err := a.b.oracle.Remove(ctx, a.b.prefix, queueName, id)
		require.NoError(a.t, err)
		require.Equal(a.t, 1, code)
		return
	}
	require.NoError(a.t, a.b.dq.Job(id).Remove(ctx, nil))
}

func (a admin) promoteJobs() {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		require.NoError(a.t, a.b.oracle.PromoteJobs(ctx, a.b.prefix, queueName, 0))
		return
	}
	_, err := a.b.dq.PromoteJobs(ctx, 0)
	require.NoError(a.t, err)
}

func (a admin) drain(delayed bool) {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		require.NoError(a.t, a.b.oracle.Drain(ctx, a.b.prefix, queueName, delayed))
		return
	}
	_, err := a.b.dq.Drain(ctx, delayed)
	require.NoError(a.t, err)
}

func (a admin) clean(state string) []string {
	a.t.Helper()
	ctx := context.Background()
	if a.node() {
		ids, err := a.b.oracle.Clean(ctx, a.b.prefix, queueName, 0, 0, state)
		require.NoError(a.t, err)
		return ids
	}
	js := drover.JobState(state)
	if state == "wait" {
		js = drover.StateWaiting // drover takes job states; Node also takes the key name
	}
	ids, err := a.b.dq.Clean(ctx, 0, 0, js)
	require.NoError(a.t, err)
	return ids
}

// checkpointed runs fn once with Node BullMQ and once with drover, each on
// its own prefix; fn calls checkpoint after each step to compare, and the
// states at the same checkpoint must be equal.
func checkpointed(t *testing.T, setup func(*testing.T) *bundle, o dumpOptions, fn func(t *testing.T, b *bundle, by impl, checkpoint func(label string))) {
	t.Helper()
	nb := setup(t)
	db := nb.sibling(t)
	type snap struct {
		label string
		state *statedump.Snapshot
	}
	run := func(b *bundle, by impl) []snap {
		var snaps []snap
		fn(t, b, by, func(label string) {
			snaps = append(snaps, snap{label, comparableDump(t, b.rdb, b.prefix, o)})
		})
		return snaps
	}
	nodeSnaps := run(nb, nodeImpl)
	droverSnaps := run(db, droverImpl)
	require.Len(t, droverSnaps, len(nodeSnaps))
	for i := range nodeSnaps {
		t.Logf("checkpoint %q", nodeSnaps[i].label)
		requireSameState(t, nodeSnaps[i].state, droverSnaps[i].state)
	}
}

// TestDifferentialLayoutAdmin extends TestDifferentialLayout to the admin
// operations, deduplication, a bulk add of 1,000 and promotion while paused.
func TestDifferentialLayoutAdmin(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	t.Run("AdminOperations", func(t *testing.T) {
		t.Parallel()

		checkpointed(t, setup, dumpOptions{}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
			a := admin{t, b, by}
			add := func(name string, s jobSpec) string {
				s.name, s.data = name, payload(name, 0)
				return b.add(t, by, s)
			}
			d1 := add("d1", jobSpec{delay: time.Minute})
			d2 := add("d2", jobSpec{delay: 2 * time.Minute})
			d3 := add("d3", jobSpec{delay: 90 * time.Second, priority: 4})
			p1 := add("p1", jobSpec{priority: 5})
			p2 := add("p2", jobSpec{priority: 5})
			w1 := add("w1", jobSpec{})
			w2 := add("w2", jobSpec{})
			x := add("x", jobSpec{})
			l := layoutJob{"l", map[string]any{"n": 1}, map[string]any{"keepLogs": 2}, &drover.JobOptions{KeepLogs: 2}}.add(t, b, by)
			checkpoint("added")

			a.promote(d1)
			a.changeDelay(d2, 30*time.Second)
			a.changePriority(p2, 1, false)
			a.changePriority(w2, 3, false)
			a.changePriority(p1, 0, true)
			a.updateProgress(w1, map[string]any{"pct": 10, "path": "a/b"})
			for i, line := range []string{"one", "two", "three"} {
				require.Equal(t, min(i+1, 2), a.log(l, line))
			}
			a.remove(x)
			ag := assertAgree(t, b, d1, d2, d3, p1, p2, w1, w2, x, l)
			require.Equal(t, allCounts("waiting", 4, "prioritized", 2, "delayed", 2), ag.counts)
			checkpoint("changed")

			a.promoteJobs()
			ag = assertAgree(t, b, d2, d3)
			require.Equal(t, allCounts("waiting", 6, "prioritized", 2), ag.counts)
			checkpoint("promoteJobs")

			require.ElementsMatch(t, []string{d1, d2, d3, p1, w1, l}, a.clean("wait"))
			checkpoint("clean wait")

			a.drain(true)
			ag = assertAgree(t, b)
			require.Equal(t, allCounts(), ag.counts)
			checkpoint("drain")

			add("y", jobSpec{})
			add("z", jobSpec{delay: time.Hour})
			if by == nodeImpl {
				require.NoError(t, b.oracle.Obliterate(context.Background(), b.prefix, queueName, false))
			} else {
				require.NoError(t, b.dq.Obliterate(context.Background(), nil))
			}
			checkpoint("obliterate")
		})
	})

	t.Run("Deduplication", func(t *testing.T) {
		t.Parallel()

		dedup := func(id string, ttl time.Duration, extend, replace bool) (map[string]any, *drover.Deduplication) {
			n := map[string]any{"id": id}
			if ttl > 0 {
				n["ttl"] = ttl.Milliseconds()
			}
			if extend {
				n["extend"] = true
			}
			if replace {
				n["replace"] = true
			}
			return n, &drover.Deduplication{ID: id, TTL: ttl, Extend: extend, Replace: replace}
		}
		job := func(name string, delay time.Duration, nd map[string]any, dd *drover.Deduplication) layoutJob {
			n := map[string]any{"deduplication": nd}
			if delay > 0 {
				n["delay"] = delay.Milliseconds()
			}
			return layoutJob{name, map[string]any{"job": name}, n, &drover.JobOptions{Delay: delay, Deduplication: dd}}
		}
		simpleN, simpleD := dedup("simple", 0, false, false)
		ttlN, ttlD := dedup("ttl", time.Minute, false, false)
		extN, extD := dedup("ext", time.Minute, true, false)
		repN, repD := dedup("rep", time.Minute, false, true)
		jobs := []layoutJob{
			job("simple1", 0, simpleN, simpleD), job("simple2", 0, simpleN, simpleD),
			job("ttl1", 0, ttlN, ttlD), job("ttl2", 0, ttlN, ttlD),
			job("ext1", 0, extN, extD), job("ext2", 0, extN, extD),
			job("rep1", time.Hour, repN, repD), job("rep2", time.Hour, repN, repD),
		}
		checkpointed(t, setup, dumpOptions{workersRan: true}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
			ids := addAll(t, b, by, jobs)
			// Duplicates return the owner; replace mode swaps the delayed owner.
			require.Equal(t, []string{"1", "1", "3", "3", "5", "5", "7", "8"}, ids)
			checkpoint("added")

			stop := b.startWorker(t, by, workerSpec{})
			b.waitEvents(t, 3, isCompleted)
			stop()
			ag := assertAgree(t, b, ids...)
			require.Equal(t, allCounts("completed", 3, "delayed", 1), ag.counts)
			checkpoint("processed")
		})
	})

	t.Run("Bulk1000", func(t *testing.T) {
		t.Parallel()

		// One timestamp for all: Node stamps each job of a bulk add when it
		// builds it (the jobs span milliseconds), drover stamps the call.
		ts := time.Now()
		specs := make([]jobSpec, 1000)
		for i := range specs {
			specs[i] = jobSpec{name: "bulk", data: map[string]any{"i": i}, priority: i % 3, lifo: i%7 == 0, timestamp: ts}
			if i%100 == 0 {
				specs[i].delay = time.Hour
			}
		}
		checkpointed(t, setup, dumpOptions{}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
			b.addBulk(t, by, specs)
			checkpoint("added")
		})
	})

	t.Run("PausedQueuePromotesDueJobs", func(t *testing.T) {
		t.Parallel()

		checkpointed(t, setup, dumpOptions{workersRan: true}, func(t *testing.T, b *bundle, by impl, checkpoint func(string)) {
			b.pause(t, by)
			stop := b.startWorker(t, by, workerSpec{})
			id := b.add(t, by, jobSpec{name: "soon", data: payload("soon", 0), delay: 300 * time.Millisecond})
			// The worker wakes at the due time and promotes the job, but
			// takes nothing while the queue is paused.
			b.waitEvents(t, 1, func(e drover.Event) bool { return e.Name == drover.EventWaiting && e.Prev == "delayed" })
			ag := assertAgree(t, b, id)
			require.Equal(t, "waiting", ag.states[id])
			checkpoint("promoted while paused")

			b.resume(t, by)
			b.waitEvents(t, 1, isCompleted)
			stop()
			checkpoint("resumed and processed")
		})
	})
}
