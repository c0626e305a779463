package interoptest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestInteropJobHandleIDsNamingQueueKeys: a queue Node BullMQ filled (paused,
// a global concurrency cap, a job scheduler, a flow, logs, a deduplication
// id, metrics) is handed to every drover call that takes a job id, with
// ids that name the queue's own keys instead of a job: "meta", "wait", a
// scheduler's "repeat:<id>", "metrics:completed", a job's "<id>:logs", ...
// Each call is refused with ErrInvalidJobID naming the id, and Redis is
// left byte for byte as it was. Before, Queue.Job("meta").Remove deleted
// the queue's meta hash (the pause and the cap with it) and returned nil,
// UpdateData/UpdateProgress/ChangePriority wrote job fields into it and
// into the scheduler's hash, Log pushed a "<key>:logs" list next to any
// queue key, and GetJob("meta") returned the meta hash as a job (Node's
// remove, updateData and addJobLog do the same damage; drover refuses
// those ids at add time already, and now on every handle too). Ids Node
// accepts and drover would not take for a new job ("a:b:c", ".") still
// reach their jobs.
func TestInteropJobHandleIDsNamingQueueKeys(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()

	first := b.add(t, nodeImpl, jobSpec{name: "a"})
	_, err := b.oracle.Log(ctx, b.prefix, queueName, first, "line")
	require.NoError(t, err)
	b.add(t, nodeImpl, jobSpec{name: "colons", jobID: "a:b:c"})
	b.add(t, nodeImpl, jobSpec{name: "dot", jobID: "."})
	_, err = b.oracle.Add(ctx, b.prefix, queueName, "dd", nil, map[string]any{"deduplication": map[string]any{"id": "d1"}, "delay": 3600000})
	require.NoError(t, err)
	_, err = b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 3600000}, nil)
	require.NoError(t, err)
	_, err = b.oracle.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{Name: "p", QueueName: queueName, Opts: map[string]any{"jobId": "p"},
		Children: []bullmqoracle.FlowJob{{Name: "c", QueueName: queueName, Opts: map[string]any{"jobId": "c"}}}})
	require.NoError(t, err)
	require.NoError(t, b.oracle.SetGlobalConcurrency(ctx, b.prefix, queueName, 3))
	b.pause(t, nodeImpl)
	// The metrics hash a worker with the metrics option keeps.
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":"+queueName+":metrics:completed", "count", 1, "prevTS", time.Now().UnixMilli(), "prevCount", 0).Err())

	before, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	for _, key := range []string{"meta", "wait", "events", "id", "delayed", "repeat", "waiting-children", "repeat:s1", "metrics:completed", "de:d1", first + ":logs", "p:dependencies"} {
		require.Contains(t, before.Keys, queueName+":"+key, "the test names an existing key")
	}

	q := b.dq
	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fp.Close() })
	for _, id := range []string{
		"meta", "wait", "events", "id", "delayed", "marker", "repeat", "waiting-children", "stalled", "pc",
		"repeat:s1", "metrics:completed", "de:d1", first + ":logs", "p:dependencies", "p:processed",
	} {
		j := q.Job(id)
		calls := []struct {
			name string
			call func() error
		}{
			{"Remove", func() error { return j.Remove(ctx, nil) }},
			{"UpdateData", func() error { return j.UpdateData(ctx, map[string]int{"x": 1}) }},
			{"FlowProducer.Add with it as Parent", func() error {
				_, err := fp.Add(ctx, drover.FlowJob{Name: "kid", QueueName: queueName, Parent: &drover.JobRef{Queue: queueName, ID: id}})
				return err
			}},
			{"GetJob", func() error { _, err := q.GetJob(ctx, id); return err }},
			{"GetJobLogs", func() error { _, _, err := q.GetJobLogs(ctx, id, 0, -1); return err }},
			{"GetFlow", func() error { _, err := q.GetFlow(ctx, id, nil); return err }},
			{"CancelJob", func() error { return q.CancelJob(ctx, id, "x", nil) }},
			{"WaitUntilFinished", func() error { _, err := q.WaitUntilFinished(ctx, id); return err }},
			{"UpdateProgress", func() error { return j.UpdateProgress(ctx, 50) }},
			{"Log", func() error { _, err := j.Log(ctx, "x"); return err }},
			{"ClearLogs", func() error { return j.ClearLogs(ctx, 0) }},
			{"ChangeDelay", func() error { return j.ChangeDelay(ctx, time.Hour) }},
			{"ChangePriority", func() error { return j.ChangePriority(ctx, 2, false) }},
			{"Promote", func() error { return j.Promote(ctx) }},
			{"Retry", func() error { return j.Retry(ctx, drover.StateFailed, nil) }},
			{"RetryNow", func() error { return j.RetryNow(ctx, nil) }},
			{"RemoveChildDependency", func() error { _, err := j.RemoveChildDependency(ctx); return err }},
			{"RemoveUnprocessedChildren", func() error { _, err := j.RemoveUnprocessedChildren(ctx); return err }},
			{"RemoveDeduplicationKey", func() error { _, err := j.RemoveDeduplicationKey(ctx); return err }},
			{"GetDependencies", func() error { _, err := j.GetDependencies(ctx, nil); return err }},
			{"GetDependenciesCount", func() error { _, err := j.GetDependenciesCount(ctx); return err }},
			{"GetChildrenValues", func() error { _, err := j.GetChildrenValues(ctx); return err }},
			{"GetIgnoredChildrenFailures", func() error { _, err := j.GetIgnoredChildrenFailures(ctx); return err }},
			{"ExtendLock", func() error { return j.ExtendLock(ctx, "tok", time.Second) }},
			{"Complete", func() error { return j.Complete(ctx, "tok", 1) }},
			{"Fail", func() error { return j.Fail(ctx, "tok", errors.New("x")) }},
			{"MoveToWait", func() error { return j.MoveToWait(ctx, "tok") }},
		}
		for _, c := range calls {
			err := c.call()
			require.ErrorIs(t, err, drover.ErrInvalidJobID, "%s(%q)", c.name, id)
			require.ErrorContains(t, err, fmt.Sprintf("job id %q names", id), "%s(%q)", c.name, id)
		}
		// A state read answers as for a job that is nowhere, as Node's
		// getState does (TestStateLookupDoesNotSearchWait).
		for name, read := range map[string]func(context.Context) (drover.JobState, error){
			"GetJobState": func(ctx context.Context) (drover.JobState, error) { return q.GetJobState(ctx, id) },
			"GetState":    j.GetState,
		} {
			state, err := read(ctx)
			require.NoError(t, err, "%s(%q)", name, id)
			require.Equal(t, drover.StateUnknown, state, "%s(%q)", name, id)
		}
		jobs, err := q.GetJobsByID(ctx, []string{id, first})
		require.NoError(t, err, "GetJobsByID(%q, %q)", id, first)
		require.Len(t, jobs, 1, "GetJobsByID(%q, %q) reads the job only", id, first)
		require.Equal(t, first, jobs[0].ID)
	}
	after, err := statedump.Dump(ctx, b.rdb, b.prefix)
	require.NoError(t, err)
	require.Empty(t, statedump.Diff(before, after), "Redis changed under calls on ids that name no job")

	// Ids Node accepts for jobs, which drover does not take for new ones,
	// still reach the jobs Node stored.
	for _, id := range []string{"a:b:c", ".", first} {
		job, err := q.GetJob(ctx, id)
		require.NoError(t, err, "GetJob(%q)", id)
		require.Equal(t, id, job.ID)
		require.NoError(t, job.UpdateProgress(ctx, 7), "UpdateProgress(%q)", id)
		state, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, state, "GetJobState(%q)", id)
		require.NoError(t, job.Remove(ctx, nil), "Remove(%q)", id)
	}
}
