package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// layoutJob is one add written once for each side, explicitly, so the test
// shows which drover option stores which BullMQ option.
type layoutJob struct {
	name   string
	data   any
	node   map[string]any
	drover *drover.JobOptions
}

func (j layoutJob) add(t *testing.T, b *bundle, by impl) string {
	t.Helper()
	ctx := context.Background()
	if by == nodeImpl {
		id, err := b.oracle.Add(ctx, b.prefix, queueName, j.name, j.data, j.node)
		require.NoError(t, err)
		return id
	}
	res, err := b.dq.Add(ctx, j.name, j.data, j.drover)
	require.NoError(t, err)
	return res.Job.ID
}

func addAll(t *testing.T, b *bundle, by impl, jobs []layoutJob) []string {
	t.Helper()
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.add(t, b, by)
	}
	return ids
}

// TestDifferentialLayout does the same operations once with Node BullMQ and
// once with drover, each under its own prefix, and requires the two Redis
// states to be equal once normalised (see comparableDump for what that
// removes and why).
func TestDifferentialLayout(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	// Both sides add with one fixed timestamp where the test needs two jobs
	// due in the same millisecond.
	ts := time.Now().Truncate(time.Millisecond)

	t.Run("AddOptions", func(t *testing.T) {
		t.Parallel()

		jobs := []layoutJob{
			{"plain", map[string]any{"path": "a/b", "html": "<b>&</b>", "text": "żółw ✓"}, nil, nil},
			{"delayed", map[string]any{"n": 1}, map[string]any{"delay": 60000}, &drover.JobOptions{Delay: time.Minute}},
			{"sameDue1", map[string]any{"n": 2}, map[string]any{"delay": 30000, "timestamp": ts.UnixMilli()},
				&drover.JobOptions{Delay: 30 * time.Second, Timestamp: ts}},
			{"sameDue2", map[string]any{"n": 3}, map[string]any{"delay": 30000, "timestamp": ts.UnixMilli()},
				&drover.JobOptions{Delay: 30 * time.Second, Timestamp: ts}},
			{"prio2", map[string]any{"n": 4}, map[string]any{"priority": 2}, &drover.JobOptions{Priority: 2}},
			{"prio1", map[string]any{"n": 5}, map[string]any{"priority": 1}, &drover.JobOptions{Priority: 1}},
			{"prio2b", map[string]any{"n": 6}, map[string]any{"priority": 2}, &drover.JobOptions{Priority: 2}},
			{"lifo", map[string]any{"n": 7}, map[string]any{"lifo": true}, &drover.JobOptions{LIFO: true}},
			{"custom", map[string]any{"n": 8}, map[string]any{"jobId": "cust-1"}, &drover.JobOptions{JobID: "cust-1"}},
			{"customDup", map[string]any{"n": 9}, map[string]any{"jobId": "cust-1"}, &drover.JobOptions{JobID: "cust-1"}},
			{"retryFixed", map[string]any{"n": 10}, map[string]any{"attempts": 3, "backoff": 500},
				&drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 500 * time.Millisecond}}},
			{"retryExp", map[string]any{"n": 11},
				map[string]any{"attempts": 5, "backoff": map[string]any{"type": "exponential", "delay": 1000, "jitter": 0.5}},
				&drover.JobOptions{Attempts: 5, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: time.Second, Jitter: 0.5}}},
			{"retention", map[string]any{"n": 12},
				map[string]any{"removeOnComplete": true, "removeOnFail": 5},
				&drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}, RemoveOnFail: &drover.Retention{Count: 5}}},
			{"retentionObj", map[string]any{"n": 13},
				map[string]any{"removeOnComplete": map[string]any{"age": 3600, "count": 10}, "removeOnFail": false},
				&drover.JobOptions{RemoveOnComplete: &drover.Retention{Age: time.Hour, Count: 10}, RemoveOnFail: &drover.Retention{}}},
			{"limits", map[string]any{"n": 14},
				map[string]any{"stackTraceLimit": 3, "keepLogs": 5, "sizeLimit": 1000, "timestamp": ts.UnixMilli()},
				&drover.JobOptions{StackTraceLimit: 3, KeepLogs: 5, SizeLimit: 1000, Timestamp: ts}},
		}
		bulk := []jobSpec{
			{name: "bulk1", data: map[string]any{"b": 1}},
			{name: "bulk2", data: map[string]any{"b": 2}, priority: 3},
			{name: "bulk3", data: map[string]any{"b": 3}, delay: time.Minute},
		}
		run := func(t *testing.T, b *bundle, by impl) {
			ids := addAll(t, b, by, jobs)
			ids = append(ids, b.addBulk(t, by, bulk)...)
			a := assertAgree(t, b, ids...)
			require.Equal(t, allCounts("waiting", 9, "delayed", 4, "prioritized", 4), a.counts)
		}
		nb := setup(t)
		db := nb.sibling(t)
		run(t, nb, nodeImpl)
		run(t, db, droverImpl)
		requireSameState(t, comparableDump(t, nb.rdb, nb.prefix, dumpOptions{}), comparableDump(t, db.rdb, db.prefix, dumpOptions{}))

		// Normalisation compares JSON values canonically; the data field is
		// also compared byte for byte (both sides encode maps with sorted
		// keys here), so escaping differences show.
		ctx := context.Background()
		for _, id := range []string{"1", "cust-1"} {
			nd, err := nb.rdb.HGet(ctx, nb.prefix+":"+queueName+":"+id, "data").Result()
			require.NoError(t, err)
			dd, err := db.rdb.HGet(ctx, db.prefix+":"+queueName+":"+id, "data").Result()
			require.NoError(t, err)
			require.Equal(t, nd, dd, "stored data of job %s", id)
		}
	})

	t.Run("PauseAddResume", func(t *testing.T) {
		t.Parallel()

		jobs := []layoutJob{
			{"plain", map[string]any{"n": 1}, nil, nil},
			{"prio", map[string]any{"n": 2}, map[string]any{"priority": 4}, &drover.JobOptions{Priority: 4}},
			{"delayed", map[string]any{"n": 3}, map[string]any{"delay": 60000}, &drover.JobOptions{Delay: time.Minute}},
		}
		nb := setup(t)
		db := nb.sibling(t)
		for _, s := range []struct {
			b  *bundle
			by impl
		}{{nb, nodeImpl}, {db, droverImpl}} {
			s.b.pause(t, s.by)
			ids := addAll(t, s.b, s.by, jobs)
			a := assertAgree(t, s.b, ids...)
			require.Equal(t, allCounts("waiting", 1, "prioritized", 1, "delayed", 1), a.counts)
		}
		requireSameState(t, comparableDump(t, nb.rdb, nb.prefix, dumpOptions{}), comparableDump(t, db.rdb, db.prefix, dumpOptions{}))

		nb.resume(t, nodeImpl)
		db.resume(t, droverImpl)
		requireSameState(t, comparableDump(t, nb.rdb, nb.prefix, dumpOptions{}), comparableDump(t, db.rdb, db.prefix, dumpOptions{}))
	})

	t.Run("AfterProcessing", func(t *testing.T) {
		t.Parallel()

		progress := bullmqoracle.Progress(map[string]any{"pct": 50},
			&bullmqoracle.Behavior{Kind: "log", Line: "half way", Then: &bullmqoracle.Behavior{Kind: "return", Value: "logged"}})
		run := func(t *testing.T, b *bundle, by impl) {
			ts := time.Now()
			jobs := []layoutJob{
				{"plain", map[string]any{"n": 1, "path": "a/b"}, nil, nil},
				{"prio", map[string]any{"n": 2}, map[string]any{"priority": 2}, &drover.JobOptions{Priority: 2}},
				{"lifo", map[string]any{"n": 3}, map[string]any{"lifo": true}, &drover.JobOptions{LIFO: true}},
				{"dropped", map[string]any{"n": 4}, map[string]any{"removeOnComplete": true},
					&drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}}},
				// It sleeps so that it finishes in a later millisecond than the
				// job before it: with equal finishedOn scores, which job a count
				// trim keeps depends on member order, not on age.
				{"kept1a", map[string]any{"behavior": bullmqoracle.Sleep(5*time.Millisecond, nil)}, map[string]any{"removeOnComplete": 1, "priority": 9},
					&drover.JobOptions{RemoveOnComplete: &drover.Retention{Count: 1}, Priority: 9}},
				{"progress", map[string]any{"behavior": progress}, map[string]any{"keepLogs": 3}, &drover.JobOptions{KeepLogs: 3}},
				{"undefined", map[string]any{"behavior": bullmqoracle.Return(nil)}, nil, nil},
				{"string", map[string]any{"behavior": bullmqoracle.Return("a/b")}, nil, nil},
				// Due in the same millisecond, once the ready jobs are done
				// (with room for a slow machine): one fetch promotes both,
				// the prioritized one into prioritized.
				{"delayed", map[string]any{"n": 6}, map[string]any{"delay": 1500, "timestamp": ts.UnixMilli()},
					&drover.JobOptions{Delay: 1500 * time.Millisecond, Timestamp: ts}},
				{"delayedPrio", map[string]any{"n": 7}, map[string]any{"delay": 1500, "priority": 3, "timestamp": ts.UnixMilli()},
					&drover.JobOptions{Delay: 1500 * time.Millisecond, Priority: 3, Timestamp: ts}},
			}
			ids := addAll(t, b, by, jobs)
			stop := b.startWorker(t, by, workerSpec{behavior: bullmqoracle.FromData("behavior")})
			b.waitEvents(t, len(ids), isCompleted)
			stop()
			a := assertAgree(t, b, ids...)
			// dropped is removed when it finishes; kept1a (taken last of the
			// ready jobs) keeps only itself when it finishes; the delayed
			// jobs finish after it.
			require.Equal(t, allCounts("completed", 3), a.counts)
		}
		nb := setup(t)
		db := nb.sibling(t)
		run(t, nb, nodeImpl)
		run(t, db, droverImpl)
		requireSameState(t,
			comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true}),
			comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true}))
	})
}
