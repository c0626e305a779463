//go:build cluster

package clustertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

// TestClusterFlowProducer: on the cluster, a flow whose queues share a hash
// tag (in the prefix, or in every queue name) is stored in one call and
// processed to the root, which sees every child's value; a flow, an
// AddBulk or a Parent that spans hash slots is refused before anything is
// written, with an error that names the queues, their slots and the fix.
func TestClusterFlowProducer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rdb := clusterClient(t)

	// tree is a report over two sections of two pages each, over three
	// queues: 7 jobs, 3 levels.
	tree := func(report, section, page string) drover.FlowJob {
		root := drover.FlowJob{Name: "report", QueueName: report}
		for s := range 2 {
			sec := drover.FlowJob{Name: "section", QueueName: section, Data: map[string]int{"s": s}}
			for p := range 2 {
				sec.Children = append(sec.Children, drover.FlowJob{Name: "page", QueueName: page, Data: map[string]int{"s": s, "p": p}})
			}
			root.Children = append(root.Children, sec)
		}
		return root
	}
	// work runs one drover worker per queue: a page returns "s.p", a
	// section the sorted values of its pages, the report its sections'.
	work := func(t *testing.T, prefix string, names ...string) {
		proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			if job.Name == "page" {
				var d struct{ S, P int }
				if err := job.DecodeData(&d); err != nil {
					return nil, err
				}
				return fmt.Sprintf("%d.%d", d.S, d.P), nil
			}
			values, err := job.GetChildrenValues(ctx)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, raw := range values {
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					return nil, err
				}
				out = append(out, fmt.Sprint(v))
			}
			sort.Strings(out)
			return out, nil
		})
		for _, n := range names {
			startWorker(t, rdb, prefix, n, proc, &drover.WorkerOptions{Concurrency: 4, DrainDelay: 100 * time.Millisecond})
		}
	}
	runTree := func(t *testing.T, prefix, report, section, page string) {
		t.Helper()
		fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})
		require.NoError(t, err)
		node, err := fp.Add(ctx, tree(report, section, page))
		require.NoError(t, err)
		q := newQueue(t, rdb, prefix, report)
		state, err := q.GetJobState(ctx, node.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaitingChildren, state, "the root waits for its children")

		work(t, prefix, report, section, page)
		testkit.WaitFor(t, 30*time.Second, "report completed", func() bool {
			s, err := q.GetJobState(ctx, node.Job.ID)
			require.NoError(t, err)
			return s == drover.StateCompleted
		})
		job, err := q.GetJob(ctx, node.Job.ID)
		require.NoError(t, err)
		require.JSONEq(t, `["[0.0 0.1]","[1.0 1.1]"]`, string(job.ReturnValue))
		flow, err := q.GetFlow(ctx, node.Job.ID, nil)
		require.NoError(t, err)
		require.Len(t, flow.Children, 2)
		for _, sec := range flow.Children {
			require.Len(t, sec.Children, 2)
		}
	}

	t.Run("TagInPrefix", func(t *testing.T) {
		t.Parallel()
		runTree(t, testPrefix(t, rdb, true), "reports", "sections", "pages")
	})
	t.Run("TagInEveryQueueName", func(t *testing.T) {
		t.Parallel()
		prefix := testPrefix(t, rdb, false)
		tag := "{" + prefix + "}"
		runTree(t, prefix, "reports"+tag, "sections"+tag, "pages"+tag)
	})

	t.Run("SpanningSlotsIsRefusedBeforeAnyWrite", func(t *testing.T) {
		t.Parallel()
		prefix := testPrefix(t, rdb, false)
		a, b := "reports{"+prefix+"a}", "pages{"+prefix+"b}"
		require.NotEqual(t, keys.Slot(prefix+":"+a), keys.Slot(prefix+":"+b))
		fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})
		require.NoError(t, err)

		// A parent's queue in one slot, a child's in another.
		_, err = fp.Add(ctx, drover.FlowJob{Name: "report", QueueName: a, Children: []drover.FlowJob{{Name: "page", QueueName: b}}})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		for _, want := range []string{`queue "` + b + `"`, `queue "` + a + `"`, "hash slot", "same {hash tag}"} {
			require.Contains(t, err.Error(), want)
		}

		// Two trees that each fit one slot, in one AddBulk call.
		_, err = fp.AddBulk(ctx, []drover.FlowJob{
			{Name: "report", QueueName: a, Children: []drover.FlowJob{{Name: "page", QueueName: a}}},
			{Name: "report", QueueName: b, Children: []drover.FlowJob{{Name: "page", QueueName: b}}},
		})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.Contains(t, err.Error(), "one AddBulk call")

		// A tree whose Parent is in another slot.
		parent := drover.JobRef{Prefix: prefix, Queue: a, ID: "p1"}
		_, err = newQueue(t, rdb, prefix, a).Add(ctx, "parent", nil, &drover.JobOptions{JobID: "p1"})
		require.NoError(t, err)
		before, err := clustertest.CountKeys(ctx, rdb, prefix)
		require.NoError(t, err)
		_, err = fp.Add(ctx, drover.FlowJob{Name: "page", QueueName: b, Parent: &parent})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.Contains(t, err.Error(), "its Parent "+parent.Key())

		after, err := clustertest.CountKeys(ctx, rdb, prefix)
		require.NoError(t, err)
		require.Equal(t, before, after, "refused flows write nothing")
		pages, err := newQueue(t, rdb, prefix, b).GetJobCounts(ctx)
		require.NoError(t, err)
		for s, n := range pages {
			require.Zero(t, n, "queue %s has %d %s jobs", b, n, s)
		}
	})
}

// TestClusterCancelJob: Queue.CancelJob reaches the drover worker running
// the job on the cluster, for a queue on each master: the processor's
// context ends with ErrJobCancelled and the job fails with the reason.
// The request and the worker's subscription meet on the master of the
// queue's slot (the channel carries the queue's hash tag).
func TestClusterCancelJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	shards, tags, err := c.TagsByMaster(ctx, prefix+"-", 1)
	require.NoError(t, err)
	for i, ts := range tags {
		name := "mail{" + ts[0] + "}"
		t.Run(fmt.Sprintf("Master%d", i), func(t *testing.T) {
			t.Parallel()
			t.Logf("queue %s on master %s", name, shards[i].Master)
			q := newQueue(t, rdb, prefix, name)
			started := make(chan string, 4)
			causes := make(chan error, 4)
			startWorker(t, rdb, prefix, name, func(ctx context.Context, job *drover.Job) (any, error) {
				started <- job.ID
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, ctx.Err()
			}, &drover.WorkerOptions{DrainDelay: 100 * time.Millisecond})
			res, err := q.Add(ctx, "send", nil, &drover.JobOptions{Attempts: 3})
			require.NoError(t, err)
			id := <-started
			require.Equal(t, res.Job.ID, id)

			require.NoError(t, q.CancelJob(ctx, id, "operator on the cluster", nil))
			cause := <-causes
			require.ErrorIs(t, cause, drover.ErrJobCancelled)
			testkit.WaitFor(t, 10*time.Second, "job failed", func() bool {
				s, err := q.GetJobState(ctx, id)
				require.NoError(t, err)
				return s == drover.StateFailed
			})
			job, err := q.GetJob(ctx, id)
			require.NoError(t, err)
			require.Equal(t, "cancelled: operator on the cluster", job.FailedReason)
			require.Equal(t, 1, job.AttemptsMade, "cancelled for good with attempts left")

			// The job is not running any more: refused, nothing published.
			err = q.CancelJob(ctx, id, "again", nil)
			require.ErrorIs(t, err, drover.ErrNotInState)
			require.False(t, errors.Is(err, drover.ErrCancelNotDelivered))
		})
	}
}
