package drover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

func TestFlowProducer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type flowBundle struct {
		*testBundle
		fp *drover.FlowProducer
		// log is what fp logged.
		log *testkit.SyncBuffer
	}
	setup := func(t *testing.T) *flowBundle {
		t.Helper()
		b := setupQueue(t)
		log := &testkit.SyncBuffer{}
		fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix, Logger: slog.New(slog.NewTextHandler(log, nil))})
		require.NoError(t, err)
		return &flowBundle{testBundle: b, fp: fp, log: log}
	}
	// work runs a worker on queue until stop.
	work := func(t *testing.T, b *flowBundle, queue string, proc drover.ProcessorFunc) {
		t.Helper()
		w, err := drover.NewWorker(b.rdb, queue, proc, &drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 50 * time.Millisecond, Concurrency: 4})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	}
	stateOf := func(t *testing.T, b *flowBundle, queue, id string) drover.JobState {
		t.Helper()
		q, err := drover.NewQueue(b.rdb, queue, &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		s, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		return s
	}
	// keysUnder lists every key of the test's prefix.
	keysUnder := func(t *testing.T, b *flowBundle) []string {
		t.Helper()
		ks, err := b.rdb.Keys(ctx, b.prefix+":*").Result()
		require.NoError(t, err)
		sort.Strings(ks)
		return ks
	}
	echo := func(ctx context.Context, job *drover.Job) (any, error) { return job.Data, nil }

	t.Run("ThreeLevelsCompleteWithEveryValueInTheRoot", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var mids []drover.FlowJob
		for m := range 3 {
			var leaves []drover.FlowJob
			for l := range 4 {
				leaves = append(leaves, drover.FlowJob{Name: "leaf", QueueName: "leaves", Data: map[string]int{"m": m, "l": l}})
			}
			mids = append(mids, drover.FlowJob{Name: "mid", QueueName: "q", Data: m, Children: leaves})
		}
		tree, err := b.fp.Add(ctx, drover.FlowJob{Name: "root", QueueName: "q", Children: mids})
		require.NoError(t, err)
		require.Equal(t, drover.AddCreated, tree.Outcome)
		require.Len(t, tree.Children, 3)
		require.Len(t, tree.Children[0].Children, 4)
		require.Equal(t, tree.Job.Ref(), *tree.Children[0].Job.Parent)
		require.Equal(t, drover.StateWaitingChildren, stateOf(t, b, "q", tree.Job.ID))
		require.Equal(t, drover.StateWaitingChildren, stateOf(t, b, "q", tree.Children[1].Job.ID))
		require.Equal(t, drover.StateWaiting, stateOf(t, b, "leaves", tree.Children[1].Children[2].Job.ID))

		counts, err := tree.Job.GetDependenciesCount(ctx)
		require.NoError(t, err)
		require.Equal(t, drover.DependencyCounts{Unprocessed: 3}, counts)

		work(t, b, "leaves", echo)
		work(t, b, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			vals, err := job.GetChildrenValues(ctx)
			if err != nil {
				return nil, err
			}
			return len(vals), nil
		})
		b.waitState(t, tree.Job.ID, drover.StateCompleted)
		vals, err := tree.Job.GetChildrenValues(ctx)
		require.NoError(t, err)
		require.Len(t, vals, 3)
		for key, v := range vals {
			ref, err := drover.ParseJobKey(key)
			require.NoError(t, err)
			require.Equal(t, drover.JobRef{Prefix: b.prefix, Queue: "q", ID: ref.ID}, ref)
			require.JSONEq(t, "4", string(v), "each mid saw its 4 leaves")
		}

		flow, err := b.queue.GetFlow(ctx, tree.Job.ID, nil)
		require.NoError(t, err)
		require.Equal(t, tree.Job.ID, flow.Job.ID)
		require.Len(t, flow.Children, 3)
		for _, mid := range flow.Children {
			require.Len(t, mid.Children, 4)
			require.Equal(t, "leaves", mid.Children[0].Job.Queue().Name())
		}
		shallow, err := b.queue.GetFlow(ctx, tree.Job.ID, &drover.GetFlowOptions{Depth: 2, MaxChildren: 1})
		require.NoError(t, err)
		require.NotEmpty(t, shallow.Children)
		require.Empty(t, shallow.Children[0].Children, "depth 2: the root and its children")
	})

	t.Run("StoredAsBullMQStoresIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tree, err := b.fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "q", Opts: &drover.JobOptions{JobID: "parent"},
			Children: []drover.FlowJob{{Name: "c", QueueName: "q", Opts: &drover.JobOptions{JobID: "child", ParentPolicy: drover.FailParent}}}})
		require.NoError(t, err)
		h, err := b.rdb.HGetAll(ctx, b.prefix+":q:child").Result()
		require.NoError(t, err)
		require.Equal(t, b.prefix+":q:parent", h["parentKey"])
		require.JSONEq(t, `{"id":"parent","queueKey":"`+b.prefix+`:q","fpof":true}`, h["parent"])
		require.JSONEq(t, `{"jobId":"child","parent":{"id":"parent","queue":"`+b.prefix+`:q"},"fpof":true,"attempts":0}`, h["opts"])
		require.Equal(t, drover.FailParent, tree.Children[0].Job.Opts.ParentPolicy)
		deps, err := b.rdb.SMembers(ctx, b.prefix+":q:parent:dependencies").Result()
		require.NoError(t, err)
		require.Equal(t, []string{b.prefix + ":q:child"}, deps)
		job, err := b.queue.GetJob(ctx, "child")
		require.NoError(t, err)
		require.Equal(t, &drover.JobRef{Prefix: b.prefix, Queue: "q", ID: "parent"}, job.Parent)
		require.Equal(t, drover.FailParent, job.Opts.ParentPolicy)
		// Generated ids are UUIDs, as BullMQ's.
		auto, err := b.fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{{Name: "c", QueueName: "q"}}})
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, auto.Job.ID)
	})

	t.Run("BadTreesAreRefusedWithRedisUntouched", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		leaf := func(name string, o *drover.JobOptions) drover.FlowJob {
			return drover.FlowJob{Name: name, QueueName: "q", Opts: o}
		}
		for _, tc := range []struct {
			name string
			flow drover.FlowJob
			is   error
			msg  string
		}{
			{"BadQueueName", drover.FlowJob{Name: "p", QueueName: "a:b"}, drover.ErrInvalidOption, `queue name "a:b" must not contain ':'`},
			{"IntegerID", drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{leaf("c", &drover.JobOptions{JobID: "12"})}}, drover.ErrInvalidJobID, "must not be an integer"},
			{"SameIDTwice", drover.FlowJob{Name: "p", QueueName: "q", Opts: &drover.JobOptions{JobID: "x"}, Children: []drover.FlowJob{leaf("c", &drover.JobOptions{JobID: "x"})}}, drover.ErrInvalidJobID, `id "x" is also the id of root`},
			{"BadOption", drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{leaf("c", &drover.JobOptions{Priority: -1})}}, drover.ErrInvalidOption, "JobOptions.Priority must be between"},
			{"BadPolicy", drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{leaf("c", &drover.JobOptions{ParentPolicy: 9})}}, drover.ErrInvalidOption, "ParentPolicy"},
			{"DedupOnAParent", drover.FlowJob{Name: "p", QueueName: "q", Opts: &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d"}}, Children: []drover.FlowJob{leaf("c", nil)}}, drover.ErrInvalidOption, "Deduplication cannot be used on a flow job with children or a parent"},
			{"DedupOnAChild", drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{leaf("c", &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d"}})}}, drover.ErrInvalidOption, "Deduplication cannot be used on a flow job with children or a parent"},
			{"ParentOnAChild", drover.FlowJob{Name: "p", QueueName: "q", Children: []drover.FlowJob{{Name: "c", QueueName: "q", Parent: &drover.JobRef{Queue: "q", ID: "x"}}}}, drover.ErrInvalidOption, "FlowJob.Parent is for a tree's root only"},
			{"UnknownBackoff", drover.FlowJob{Name: "p", QueueName: "q", Opts: &drover.JobOptions{Backoff: &drover.Backoff{Type: "nope"}}}, drover.ErrInvalidOption, `unknown JobOptions.Backoff.Type "nope"`},
			{"BadData", drover.FlowJob{Name: "p", QueueName: "q", Data: func() {}}, drover.ErrInvalidData, ""},
			{"MissingParent", drover.FlowJob{Name: "p", QueueName: "q", Parent: &drover.JobRef{Queue: "q", ID: "gone"}, Children: []drover.FlowJob{leaf("c", nil)}}, drover.ErrParentNotFound, `its parent ` + b.prefix + `:q:gone does not exist`},
		} {
			before := keysUnder(t, b)
			_, err := b.fp.Add(ctx, tc.flow)
			require.ErrorIs(t, err, tc.is, tc.name)
			require.Contains(t, err.Error(), tc.msg, tc.name)
			require.Equal(t, before, keysUnder(t, b), "%s: Redis untouched", tc.name)
		}
		// A refusal is Redis' answer: final at once, never sent again as
		// if the answer had been lost.
		require.NotContains(t, b.log.String(), "sending it again")
	})

	t.Run("ParentConflictRefusesTheWholeTree", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.fp.Add(ctx, drover.FlowJob{Name: "p1", QueueName: "q", Opts: &drover.JobOptions{JobID: "p1"},
			Children: []drover.FlowJob{{Name: "c", QueueName: "q", Opts: &drover.JobOptions{JobID: "shared"}}}})
		require.NoError(t, err)
		before := keysUnder(t, b)
		_, err = b.fp.Add(ctx, drover.FlowJob{Name: "p2", QueueName: "q", Opts: &drover.JobOptions{JobID: "p2"},
			Children: []drover.FlowJob{{Name: "other", QueueName: "q"}, {Name: "c", QueueName: "q", Opts: &drover.JobOptions{JobID: "shared"}}}})
		require.ErrorIs(t, err, drover.ErrParentConflict)
		require.NotContains(t, b.log.String(), "sending it again")
		require.Contains(t, err.Error(), `job "c" (id "shared") of queue "q"`)
		require.Equal(t, before, keysUnder(t, b))
	})

	t.Run("ExistingCompletedChildCountsAsProcessed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.queue.Add(ctx, "c", "v", &drover.JobOptions{JobID: "done"})
		require.NoError(t, err)
		work(t, b, "q", func(ctx context.Context, job *drover.Job) (any, error) { return "result of " + job.ID, nil })
		b.waitState(t, "done", drover.StateCompleted)
		tree, err := b.fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "other", Opts: &drover.JobOptions{JobID: "p"},
			Children: []drover.FlowJob{{Name: "c", QueueName: "q", Opts: &drover.JobOptions{JobID: "done"}}}})
		require.NoError(t, err)
		require.Equal(t, drover.AddDuplicate, tree.Children[0].Outcome)
		require.Equal(t, drover.StateWaiting, stateOf(t, b, "other", "p"), "nothing left to wait for: released at once")
		vals, err := tree.Job.GetChildrenValues(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]json.RawMessage{b.prefix + ":q:done": json.RawMessage(`"result of done"`)}, vals)
	})

	t.Run("LoneRootDeduplicates", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		owner, err := b.queue.Add(ctx, "o", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d"}})
		require.NoError(t, err)
		tree, err := b.fp.Add(ctx, drover.FlowJob{Name: "c", QueueName: "q", Opts: &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d"}}})
		require.NoError(t, err)
		require.Equal(t, drover.AddDeduplicated, tree.Outcome)
		require.Equal(t, owner.Job.ID, tree.Job.ID)
	})

	t.Run("AddBulkIsOneStep", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		trees, err := b.fp.AddBulk(ctx, []drover.FlowJob{
			{Name: "a", QueueName: "q", Children: []drover.FlowJob{{Name: "a1", QueueName: "q"}}},
			{Name: "b", QueueName: "q", Children: []drover.FlowJob{{Name: "b1", QueueName: "q"}}},
		})
		require.NoError(t, err)
		require.Len(t, trees, 2)
		require.Equal(t, "b1", trees[1].Children[0].Job.Name)
		before := keysUnder(t, b)
		_, err = b.fp.AddBulk(ctx, []drover.FlowJob{
			{Name: "ok", QueueName: "q"},
			{Name: "bad", QueueName: "q", Parent: &drover.JobRef{Queue: "q", ID: "missing"}},
		})
		require.ErrorIs(t, err, drover.ErrParentNotFound)
		require.Equal(t, before, keysUnder(t, b), "one refused tree stores none")
	})

	t.Run("ClusterNeedsOneHashTag", func(t *testing.T) {
		t.Parallel()
		// Validation happens before any I/O: no cluster is needed to see it.
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
		t.Cleanup(func() { _ = rdb.Close() })
		fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: "bull"})
		require.NoError(t, err)
		_, err = fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "{a}q", Children: []drover.FlowJob{{Name: "c", QueueName: "{b}q"}}})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.Contains(t, err.Error(), "must carry the same {hash tag}")
		_, err = fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "untagged"})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.Contains(t, err.Error(), "CROSSSLOT")
	})

	t.Run("ProcessorAddsChildrenAndWaitsForThem", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res, err := b.queue.Add(ctx, "fan-out", nil, &drover.JobOptions{JobID: "step"})
		require.NoError(t, err)
		// The leaves wait for the parent's move: a processor slowed down
		// (load 20) found its child finished already, moved nothing and
		// returned "0".
		parked := make(chan struct{})
		var park sync.Once
		work(t, b, "leaves", func(ctx context.Context, job *drover.Job) (any, error) {
			select {
			case <-parked:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return echo(ctx, job)
		})
		work(t, b, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			vals, err := job.GetChildrenValues(ctx)
			if err != nil {
				return nil, err
			}
			if len(vals) == 0 { // first run: add the children, then wait
				var kids []drover.FlowJob
				for i := range 5 {
					kids = append(kids, drover.FlowJob{Name: "part", QueueName: "leaves", Data: i})
				}
				ref := job.Ref()
				if _, err := b.fp.AddBulk(ctx, []drover.FlowJob{{Name: "parts", QueueName: "leaves", Parent: &ref, Children: kids}}); err != nil {
					return nil, err
				}
				moved, err := job.MoveToWaitingChildren(ctx, nil)
				park.Do(func() { close(parked) })
				if err != nil {
					return nil, err
				}
				if moved {
					return nil, drover.ErrWaitingChildren
				}
			}
			return fmt.Sprint(len(vals)), nil
		})
		b.waitState(t, res.Job.ID, drover.StateCompleted)
		job, err := b.queue.GetJob(ctx, "step")
		require.NoError(t, err)
		require.JSONEq(t, `"1"`, string(job.ReturnValue), "the second run saw its one child (which saw 5)")
		require.Equal(t, 2, job.AttemptsStarted)
		require.Zero(t, job.FailedReason)
		// The first run is recorded as parked by this worker, not left as
		// an attempt nobody recorded.
		require.Len(t, job.Timeline, 2)
		first := job.Timeline[0]
		require.Equal(t, drover.OutcomeWaitingChildren, first.Outcome)
		require.Equal(t, 1, first.N)
		require.NotEmpty(t, first.Worker)
		require.False(t, first.End.Before(first.Start))
		require.Equal(t, drover.OutcomeCompleted, job.Timeline[1].Outcome)
		names := eventNames(b.events(t))
		require.Contains(t, names, "waiting-children:step:active")
		require.Contains(t, names, "waiting:step:waiting-children")
	})

	t.Run("MoveToWaitingChildrenOutsideAnAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res, err := b.queue.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		_, err = res.Job.MoveToWaitingChildren(ctx, nil)
		require.ErrorContains(t, err, "not a running attempt")
	})

	// A manual job whose lock expired or another token holds answers the
	// public lock errors, as Complete does (the differential tester met
	// "job lock missing", an error no drover sentinel matched).
	t.Run("MoveToWaitingChildrenLockRefusals", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.queue.Add(ctx, "p", nil, &drover.JobOptions{JobID: "p"})
		require.NoError(t, err)
		w, err := drover.NewWorker(b.rdb, b.name, nil, &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
		job, err := w.NextJob(ctx, "mine", 0)
		require.NoError(t, err)
		ref := job.Ref()
		_, err = b.fp.Add(ctx, drover.FlowJob{Name: "kid", QueueName: "leaves", Parent: &ref})
		require.NoError(t, err)
		lock := b.prefix + ":" + b.name + ":p:lock"

		for _, tc := range []struct {
			name   string
			theirs bool // another token holds the lock; else it is gone
			want   error
			text   string
		}{
			{"lock taken", true, drover.ErrJobLocked, "another token"},
			{"lock gone", false, drover.ErrLockLost, "the job is active"},
		} {
			if tc.theirs {
				require.NoError(t, b.rdb.Set(ctx, lock, "theirs", 0).Err())
			} else {
				require.NoError(t, b.rdb.Del(ctx, lock).Err())
			}
			before, err := statedump.Dump(ctx, b.rdb, b.prefix)
			require.NoError(t, err)
			_, err = job.MoveToWaitingChildren(ctx, nil)
			require.ErrorIs(t, err, tc.want, tc.name)
			require.ErrorContains(t, err, tc.text, tc.name)
			after, err := statedump.Dump(ctx, b.rdb, b.prefix)
			require.NoError(t, err)
			require.Empty(t, statedump.Diff(before, after), "%s: Redis untouched", tc.name)
		}
	})

	t.Run("WaitingChildrenWithoutMovingFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res, err := b.queue.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		work(t, b, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			moved, err := job.MoveToWaitingChildren(ctx, nil)
			if err != nil || moved {
				return nil, errors.New("unexpected")
			}
			return nil, drover.ErrWaitingChildren
		})
		b.waitState(t, res.Job.ID, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, drover.ErrWaitingChildren.Error(), job.FailedReason)
	})

	t.Run("GetDependenciesPages", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var kids []drover.FlowJob
		for range 300 { // past the listpack sizes, so scans page
			kids = append(kids, drover.FlowJob{Name: "c", QueueName: "q"})
		}
		tree, err := b.fp.Add(ctx, drover.FlowJob{Name: "p", QueueName: "q", Children: kids})
		require.NoError(t, err)
		all, err := tree.Job.GetDependencies(ctx, nil)
		require.NoError(t, err)
		require.Len(t, all.Unprocessed, 300)
		seen := map[string]bool{}
		page := &drover.DependencyPage{Count: 50}
		for {
			d, err := tree.Job.GetDependencies(ctx, &drover.DependenciesOptions{Unprocessed: page})
			require.NoError(t, err)
			for _, k := range d.Unprocessed {
				seen[k] = true
			}
			if d.NextUnprocessedCursor == 0 {
				break
			}
			page = &drover.DependencyPage{Cursor: d.NextUnprocessedCursor, Count: 50}
		}
		require.Len(t, seen, 300)
	})

}
