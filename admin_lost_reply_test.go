package drover_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestAdminWritesUnderClientRetry: a proxy between the caller and a real
// redis-server lets an admin script run, then loses its reply and resets
// the connection, so go-redis sends the command again. The call must
// report what the first run did: before, Job.Retry answered "job not in
// the expected state: it is waiting, not failed", Promote and RetryNow
// "it is waiting, not delayed" and Remove "job not found", each for a
// write that was done.
func TestAdminWritesUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Each case runs its call once on a missing job first, so the script is
	// loaded and the lost reply is the call's own (not a NOSCRIPT answer).
	delayed := func(t *testing.T, dq *drover.Queue, _ *redis.Client, _ string) string {
		r, err := dq.Add(ctx, "d", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		return r.Job.ID
	}
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, dq *drover.Queue, direct *redis.Client, prefix string) string
		call  func(q *drover.Queue, id string) error
		state drover.JobState // after the call; "" = gone
	}{
		{"Promote", delayed, func(q *drover.Queue, id string) error { return q.Job(id).Promote(ctx) }, drover.StateWaiting},
		{"RetryNow", delayed, func(q *drover.Queue, id string) error { return q.Job(id).RetryNow(ctx, nil) }, drover.StateWaiting},
		{"Remove", delayed, func(q *drover.Queue, id string) error { return q.Job(id).Remove(ctx, nil) }, ""},
		{"Retry", func(t *testing.T, dq *drover.Queue, direct *redis.Client, prefix string) string {
			r, err := dq.Add(ctx, "f", nil, nil)
			require.NoError(t, err)
			w, err := drover.NewWorker(direct, "q", nil, &drover.WorkerOptions{Prefix: prefix})
			require.NoError(t, err)
			j, err := w.NextJob(ctx, "tok", 0)
			require.NoError(t, err)
			require.NoError(t, j.Fail(ctx, "tok", errors.New("boom")))
			require.NoError(t, w.Close(ctx))
			return r.Job.ID
		}, func(q *drover.Queue, id string) error { return q.Job(id).Retry(ctx, drover.StateFailed, nil) }, drover.StateWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newLostReplyRig(t, nil)
			id := tc.make(t, r.dq, r.direct, r.prefix)
			require.Error(t, tc.call(r.q, "missing"), "warm-up")
			r.proxy.DropReplyTo("evalsha")
			require.NoError(t, tc.call(r.q, id))
			require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
			st, err := r.dq.GetJobState(ctx, id)
			require.NoError(t, err)
			if tc.state == "" {
				require.Equal(t, drover.StateUnknown, st)
			} else {
				require.Equal(t, tc.state, st)
			}
		})
	}
}

// TestBulkAdminWritesUnderClientRetry: as TestAdminWritesUnderClientRetry,
// for the calls that move or delete jobs in chunks. Before, the resend ran
// the chunk again on what the first run left: Drain answered 0 for the 3
// jobs it deleted, a Clean bounded to 3 removed 6, PromoteEarliest(2)
// promoted 4, and RetryJobs counted 2 of the 4 jobs it re-ran.
func TestBulkAdminWritesUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addDelayed := func(t *testing.T, dq *drover.Queue, n int) {
		for range n {
			_, err := dq.Add(ctx, "d", nil, &drover.JobOptions{Delay: time.Hour})
			require.NoError(t, err)
		}
	}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dq *drover.Queue, direct *redis.Client, prefix string)
		call func(q *drover.Queue) (int, error)
		want int // the call's answer
		left map[drover.JobState]int
	}{
		{"Drain", func(t *testing.T, dq *drover.Queue, _ *redis.Client, _ string) {
			for range 3 {
				_, err := dq.Add(ctx, "w", nil, nil)
				require.NoError(t, err)
			}
		}, func(q *drover.Queue) (int, error) { return q.Drain(ctx, false) }, 3, map[drover.JobState]int{drover.StateWaiting: 0}},
		{"Clean", func(t *testing.T, dq *drover.Queue, _ *redis.Client, _ string) { addDelayed(t, dq, 6) },
			func(q *drover.Queue) (int, error) {
				ids, err := q.Clean(ctx, 0, 3, drover.StateDelayed)
				return len(ids), err
			}, 3, map[drover.JobState]int{drover.StateDelayed: 3}},
		{"PromoteEarliest", func(t *testing.T, dq *drover.Queue, _ *redis.Client, _ string) { addDelayed(t, dq, 5) },
			func(q *drover.Queue) (int, error) { return q.PromoteEarliest(ctx, 2) }, 2,
			map[drover.JobState]int{drover.StateDelayed: 3, drover.StateWaiting: 2}},
		{"RetryJobs", func(t *testing.T, dq *drover.Queue, direct *redis.Client, prefix string) {
			w, err := drover.NewWorker(direct, "q", nil, &drover.WorkerOptions{Prefix: prefix})
			require.NoError(t, err)
			for range 4 {
				_, err := dq.Add(ctx, "f", nil, nil)
				require.NoError(t, err)
				j, err := w.NextJob(ctx, "tok", 0)
				require.NoError(t, err)
				require.NoError(t, j.Fail(ctx, "tok", errors.New("boom")))
			}
			require.NoError(t, w.Close(ctx))
		}, func(q *drover.Queue) (int, error) { return q.RetryJobs(ctx, &drover.RetryJobsOptions{Count: 2}) }, 4,
			map[drover.JobState]int{drover.StateFailed: 0, drover.StateWaiting: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newLostReplyRig(t, nil)
			// On the empty queue first, so the script is loaded and the
			// lost reply is the call's own (not a NOSCRIPT answer).
			n, err := tc.call(r.q)
			require.NoError(t, err, "warm-up")
			require.Zero(t, n, "warm-up")
			tc.make(t, r.dq, r.direct, r.prefix)
			r.proxy.DropReplyTo("evalsha")
			n, err = tc.call(r.q)
			require.NoError(t, err)
			require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
			require.Equal(t, tc.want, n)
			for state, want := range tc.left {
				got, err := r.dq.GetJobCounts(ctx, state)
				require.NoError(t, err)
				require.Equal(t, int64(want), got[state], "jobs %s", state)
			}
		})
	}
}

// lostReplyRig is a queue whose connection runs through a fault proxy, to
// lose a reply, and one on a straight connection to the same Redis, to
// look at what the call did.
type lostReplyRig struct {
	proxy  *faultproxy.Proxy
	q, dq  *drover.Queue // through the proxy, straight
	direct *redis.Client
	prefix string
}

// newLostReplyRig starts the proxy and both queues (named "q"); tune, when
// not nil, adjusts the proxied client's options.
func newLostReplyRig(t *testing.T, tune func(*redis.Options)) *lostReplyRig {
	t.Helper()
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	opts := &redis.Options{Addr: proxy.Addr}
	if tune != nil {
		tune(opts)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	dq, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	return &lostReplyRig{proxy: proxy, q: q, dq: dq, direct: direct, prefix: prefix}
}

// TestFlowAdminWritesUnderClientRetry: as TestAdminWritesUnderClientRetry,
// for Job.RemoveChildDependency: the first run detaches the child (and
// deletes its parentKey), its reply is lost, go-redis sends it again.
// Before, the second run found no parent and the call failed with
// ErrParentNotFound for a detach that was done.
func TestFlowAdminWritesUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	fp, err := drover.NewFlowProducer(r.direct, &drover.FlowProducerOptions{Prefix: r.prefix})
	require.NoError(t, err)
	node, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q",
		Children: []drover.FlowJob{{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: "kid"}}}})
	require.NoError(t, err)
	_, err = r.q.Job("missing").RemoveChildDependency(ctx)
	require.ErrorIs(t, err, drover.ErrJobNotFound, "warm-up")

	r.proxy.DropReplyTo("evalsha")
	removed, err := r.q.Job("kid").RemoveChildDependency(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.True(t, removed, "the child was detached")
	st, err := r.dq.GetJobState(ctx, node.Job.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, st, "the parent, left with no pending child, waits")
}

// TestRemoveDeduplicationKeyUnderClientRetry: as
// TestAdminWritesUnderClientRetry, for Job.RemoveDeduplicationKey: the
// first run frees the id, its reply is lost, go-redis sends it again.
// Before, the second run found the id free already and the call reported
// false ("not freed") for an id it had freed.
func TestRemoveDeduplicationKeyUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	added, err := r.dq.Add(ctx, "x", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "welcome-7"}})
	require.NoError(t, err)
	freed, err := r.q.Job("missing").RemoveDeduplicationKey(ctx)
	require.NoError(t, err, "warm-up")
	require.False(t, freed)

	r.proxy.DropReplyTo("evalsha")
	freed, err = r.q.Job(added.Job.ID).RemoveDeduplicationKey(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.True(t, freed, "the id was freed")
	require.Zero(t, r.direct.Exists(ctx, r.prefix+":q:de:welcome-7").Val())
}

// TestRemoveUnprocessedChildrenUnderClientRetry: as
// TestAdminWritesUnderClientRetry, for Job.RemoveUnprocessedChildren: the
// first run deletes the pending children, its reply is lost, go-redis
// sends it again. Before, the second run found none left and the call
// answered 0 for the 2 children it had deleted.
func TestRemoveUnprocessedChildrenUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	fp, err := drover.NewFlowProducer(r.direct, &drover.FlowProducerOptions{Prefix: r.prefix})
	require.NoError(t, err)
	node, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q",
		Children: []drover.FlowJob{{Name: "a", QueueName: "kids"}, {Name: "b", QueueName: "kids"}}})
	require.NoError(t, err)
	_, err = r.q.Job("missing").RemoveUnprocessedChildren(ctx)
	require.ErrorIs(t, err, drover.ErrJobNotFound, "warm-up")

	r.proxy.DropReplyTo("evalsha")
	n, err := r.q.Job(node.Job.ID).RemoveUnprocessedChildren(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	require.Equal(t, 2, n, "the children it deleted")
}

// TestObliterateUnderClientRetry: the reply to Obliterate's last script
// call, which deletes the queue's meta hash (its paused flag with it), is
// lost and go-redis sends the call again. The queue is gone, so Obliterate
// must return nil: before, the resend found the queue not paused and
// Obliterate failed with ErrQueueNotPaused after obliterating it.
func TestObliterateUnderClientRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newLostReplyRig(t, nil)
	src := scripts.Source("obliterate")
	require.NoError(t, r.direct.ScriptLoad(ctx, src).Err()) // an EVALSHA, not a NOSCRIPT and an EVAL
	for range 3 {
		_, err := r.dq.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
	}

	r.proxy.DropReplyTo(fmt.Sprintf("%x", sha1.Sum([]byte(src))))
	require.NoError(t, r.q.Obliterate(ctx, nil))
	require.Equal(t, int64(1), r.proxy.Dropped(), "the reply was lost once")
	keys, err := r.direct.Keys(ctx, r.prefix+":q:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "the queue is gone")
}
