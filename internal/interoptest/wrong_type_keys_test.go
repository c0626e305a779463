package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestInteropAdminWritesOnAWrongTypeQueueKey: a queue Node BullMQ filled
// (failed, completed, delayed, prioritized jobs, a flow, a job scheduler)
// has one of its own keys replaced by another type, as another program
// writing at "<queue>:wait" would leave it. Every drover admin call that
// moves or deletes jobs is refused with an error naming the key, and Redis
// is left as it was. Before, Redis ran each script up to the command that
// met the key and kept what it had written: Retry took the job out of
// failed and failed on wait ("WRONGTYPE Operation against a key holding
// the wrong kind of value"), leaving it in no state; RetryJobs and
// PromoteJobs emptied the failed and delayed sets that way (Node's calls
// do the same). Obliterate, which removes every key of the queue anyway,
// deletes the foreign key with the rest; it failed with WRONGTYPE after
// deleting some jobs, so such a queue could not be cleared at all.
func TestInteropAdminWritesOnAWrongTypeQueueKey(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	for _, bad := range []struct{ key, typ string }{{"wait", "string"}, {"events", "hash"}, {"prioritized", "list"}} {
		t.Run(bad.key+"Is"+bad.typ, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for range 3 {
				b.add(t, nodeImpl, jobSpec{name: "f"})
			}
			for range 3 {
				_, err := b.oracle.StepWork(ctx, b.prefix, queueName, bullmqoracle.Fail("boom"))
				require.NoError(t, err)
			}
			b.add(t, nodeImpl, jobSpec{name: "c"})
			_, err := b.oracle.StepWork(ctx, b.prefix, queueName, bullmqoracle.Return("ok"))
			require.NoError(t, err)
			delayed := b.add(t, nodeImpl, jobSpec{name: "d", delay: time.Hour})
			b.add(t, nodeImpl, jobSpec{name: "d2", delay: 2 * time.Hour})
			prio := b.add(t, nodeImpl, jobSpec{name: "p", priority: 3})
			_, err = b.oracle.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{Name: "parent", QueueName: queueName, Opts: map[string]any{"jobId": "parent"},
				Children: []bullmqoracle.FlowJob{{Name: "kid", QueueName: queueName, Opts: map[string]any{"jobId": "kid", "delay": 3600000}}}})
			require.NoError(t, err)
			_, err = b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 3600000}, nil)
			require.NoError(t, err)

			key := b.prefix + ":" + queueName + ":" + bad.key
			// The jobs the replaced key listed keep their hashes and are in
			// no state from now on (RemoveOrphanedJobs' work, not this test's).
			var orphans []string
			switch bad.key {
			case "wait":
				orphans = b.rdb.LRange(ctx, key, 0, -1).Val()
			case "prioritized":
				orphans = b.rdb.ZRange(ctx, key, 0, -1).Val()
			}
			require.NoError(t, b.rdb.Del(ctx, key).Err())
			switch bad.typ {
			case "string":
				require.NoError(t, b.rdb.Set(ctx, key, "another program's", 0).Err())
			case "hash":
				require.NoError(t, b.rdb.HSet(ctx, key, "another", "program").Err())
			case "list":
				require.NoError(t, b.rdb.RPush(ctx, key, "another program's").Err())
			}
			before, err := statedump.Dump(ctx, b.rdb, b.prefix)
			require.NoError(t, err)

			q := b.dq
			failed, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateFailed}, 0, -1, true)
			require.NoError(t, err)
			require.Len(t, failed, 3)
			completed, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
			require.NoError(t, err)
			require.Len(t, completed, 1)
			calls := []struct {
				name string
				call func() error
			}{
				{"Retry", func() error { return q.Job(failed[0]).Retry(ctx, drover.StateFailed, nil) }},
				{"RetryJobs", func() error { _, err := q.RetryJobs(ctx, nil); return err }},
				{"RetryJobs completed", func() error {
					_, err := q.RetryJobs(ctx, &drover.RetryJobsOptions{State: drover.StateCompleted})
					return err
				}},
				{"Promote", func() error { return q.Job(delayed).Promote(ctx) }},
				{"RetryNow", func() error { return q.Job(delayed).RetryNow(ctx, nil) }},
				{"PromoteJobs", func() error { _, err := q.PromoteJobs(ctx, 0); return err }},
				{"ChangeDelay", func() error { return q.Job(delayed).ChangeDelay(ctx, time.Minute) }},
				{"ChangePriority", func() error { return q.Job(prio).ChangePriority(ctx, 0, false) }},
				{"CancelJob", func() error { return q.CancelJob(ctx, delayed, "x", nil) }},
				{"Remove", func() error { return q.Job(failed[1]).Remove(ctx, nil) }},
				{"Remove parent", func() error { return q.Job("parent").Remove(ctx, nil) }},
				{"RemoveChildDependency", func() error { _, err := q.Job("kid").RemoveChildDependency(ctx); return err }},
				{"RemoveUnprocessedChildren", func() error { _, err := q.Job("parent").RemoveUnprocessedChildren(ctx); return err }},
				{"Clean failed", func() error { _, err := q.Clean(ctx, 0, 0, drover.StateFailed); return err }},
				{"Clean delayed", func() error { _, err := q.Clean(ctx, 0, 0, drover.StateDelayed); return err }},
				{"Drain", func() error { _, err := q.Drain(ctx, true); return err }},
				{"UpsertJobScheduler", func() error {
					_, err := q.UpsertJobScheduler(ctx, "s1", drover.RepeatOptions{Every: time.Minute}, nil)
					return err
				}},
				{"RemoveJobScheduler", func() error { _, err := q.RemoveJobScheduler(ctx, "s1"); return err }},
			}
			for _, c := range calls {
				err := c.call()
				after, derr := statedump.Dump(ctx, b.rdb, b.prefix)
				require.NoError(t, derr)
				require.Empty(t, statedump.Diff(before, after), "%s changed Redis (%v)", c.name, err)
				require.Error(t, err, c.name)
				require.ErrorContains(t, err, "queue key "+key+" holds a "+bad.typ, c.name)
			}
			// Obliterate still clears the queue, a foreign list or set with it
			// (Node's fails with WRONGTYPE half-way, jobs deleted). One in the
			// place of the meta hash or the events stream, which its pause
			// writes, is refused like the other calls.
			err = q.Obliterate(ctx, &drover.ObliterateOptions{Force: true, Count: 2})
			if bad.key == "events" {
				require.ErrorContains(t, err, "queue key "+key+" holds a "+bad.typ)
				after, err := statedump.Dump(ctx, b.rdb, b.prefix)
				require.NoError(t, err)
				require.Empty(t, statedump.Diff(before, after), "Obliterate changed Redis")
				return
			}
			require.NoError(t, err)
			left, err := b.rdb.Keys(ctx, b.prefix+":"+queueName+":*").Result()
			require.NoError(t, err)
			want := []string{}
			for _, id := range orphans {
				want = append(want, b.prefix+":"+queueName+":"+id)
			}
			require.ElementsMatch(t, want, left, "keys left by Obliterate: the orphaned hashes only")
		})
	}
}
