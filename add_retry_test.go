package drover_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestAddExactlyOnceUnderClientRetry: a proxy between the producer and a
// real redis-server lets the add script run, then loses its reply and resets
// the connection. go-redis retries the command on a new connection, so the
// script runs a second time; each call must still store its jobs once and
// report what the first run did.
func TestAddExactlyOnceUnderClientRetry(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		proxy  *faultproxy.Proxy
		direct *redis.Client // straight to Redis, for checks
		queue  *drover.Queue
		prefix string
	}

	setupRetries := func(t *testing.T, maxRetries int) *testBundle {
		t.Helper()
		srv := redistest.Shared(t)
		proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{MaxRetries: maxRetries})
		direct, prefix := redistest.Client(t)
		q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix, AddBulkChunk: 10})
		require.NoError(t, err)
		// Cache the scripts first, so the dropped reply is the add's own.
		_, err = q.Add(context.Background(), "warm-up", nil, nil)
		require.NoError(t, err)
		require.NoError(t, direct.Del(context.Background(), prefix+":q:1", prefix+":q:wait", prefix+":q:events").Err())
		return &testBundle{proxy: proxy, direct: direct, queue: q, prefix: prefix}
	}
	setup := func(t *testing.T) *testBundle { t.Helper(); return setupRetries(t, 3) }

	jobKeys := func(t *testing.T, b *testBundle) []string {
		t.Helper()
		keys, err := b.direct.Keys(context.Background(), b.prefix+":q:*").Result()
		require.NoError(t, err)
		var jobs []string
		for _, k := range keys {
			if ty, _ := b.direct.Type(context.Background(), k).Result(); ty == "hash" && !strings.HasSuffix(k, ":meta") {
				jobs = append(jobs, k)
			}
		}
		return jobs
	}

	t.Run("AutoID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proxy.DropReplyTo("evalsha")
		res, err := b.queue.Add(context.Background(), "once", map[string]int{"n": 1}, nil)
		require.NoError(t, err)
		require.Equal(t, int64(1), b.proxy.Dropped(), "the reply was lost once")
		require.Equal(t, drover.AddCreated, res.Outcome)
		require.Len(t, jobKeys(t, b), 1, "one add, one job")
		require.Equal(t, int64(1), b.direct.LLen(context.Background(), b.prefix+":q:wait").Val())
		require.Equal(t, "2", res.Job.ID, "the warm-up took id 1")
		require.Equal(t, "once", b.direct.HGet(context.Background(), b.prefix+":q:2", "name").Val())
	})

	// A batch whose jobs were all created is answered with the id
	// counter's value before it (the replayed answer too): each id derived
	// from it must be the job stored under it, custom ids in between
	// (they draw a counter value as well).
	t.Run("MixedIDsFromTheReplayedAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proxy.DropReplyTo("evalsha")
		res, err := b.queue.AddBulk(context.Background(), []drover.BulkJob{
			{Name: "a"}, {Name: "b", Opts: &drover.JobOptions{JobID: "order-9"}}, {Name: "c"},
		})
		require.NoError(t, err)
		require.Equal(t, int64(1), b.proxy.Dropped())
		require.Len(t, res, 3)
		for i, want := range []struct{ id, name string }{{"2", "a"}, {"order-9", "b"}, {"4", "c"}} {
			require.Equal(t, drover.AddCreated, res[i].Outcome)
			require.Equal(t, want.id, res[i].Job.ID)
			require.Equal(t, want.name, b.direct.HGet(context.Background(), b.prefix+":q:"+want.id, "name").Val())
		}
	})

	t.Run("CustomIDAnswersCreated", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proxy.DropReplyTo("evalsha")
		res, err := b.queue.Add(context.Background(), "once", nil, &drover.JobOptions{JobID: "order-7"})
		require.NoError(t, err)
		require.Equal(t, int64(1), b.proxy.Dropped())
		require.Equal(t, drover.AddCreated, res.Outcome, "the job this call stored is not a duplicate")
		require.Equal(t, "order-7", res.Job.ID)
		// A later, separate add of the same id is a duplicate as before.
		res, err = b.queue.Add(context.Background(), "again", nil, &drover.JobOptions{JobID: "order-7"})
		require.NoError(t, err)
		require.Equal(t, drover.AddDuplicate, res.Outcome)
	})

	// A hit's first answer carries the existing job; the stored answer a
	// re-run gets does not, and the job is then read apart: the caller sees
	// the same existing job either way.
	t.Run("HitFromTheReplayedAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.queue.Add(context.Background(), "first", map[string]int{"v": 1}, &drover.JobOptions{JobID: "order-6"})
		require.NoError(t, err)
		b.proxy.DropReplyTo("evalsha")
		res, err := b.queue.Add(context.Background(), "second", map[string]int{"v": 2}, &drover.JobOptions{JobID: "order-6"})
		require.NoError(t, err)
		require.Equal(t, int64(1), b.proxy.Dropped())
		require.Equal(t, drover.AddDuplicate, res.Outcome)
		require.Equal(t, "first", res.Job.Name)
		require.JSONEq(t, `{"v":1}`, string(res.Job.Data))
	})

	// go-redis does not resend (MaxRetries -1), or has given up: drover
	// resends the call itself with the same token, so the caller learns the
	// outcome instead of getting an error for a job that was stored.
	t.Run("ResentWhenTheClientGivesUp", func(t *testing.T) {
		t.Parallel()
		b := setupRetries(t, -1)
		b.proxy.DropReplyTo("evalsha")
		b.proxy.DropReplyTo("evalsha")
		res, err := b.queue.Add(context.Background(), "once", nil, &drover.JobOptions{JobID: "order-8"})
		require.NoError(t, err)
		require.Equal(t, int64(2), b.proxy.Dropped())
		require.Equal(t, drover.AddCreated, res.Outcome)
		bulk, err := b.queue.AddBulk(context.Background(), make([]drover.BulkJob, 5))
		require.NoError(t, err)
		require.Len(t, bulk, 5)
		require.Len(t, jobKeys(t, b), 6)
	})

	// The server runs the add and crashes before it answers: the reply is
	// lost and every reconnect is refused. The job is stored, so the error
	// must say the outcome is unknown. Before, go-redis resent the call
	// itself, got "connection refused" and drover took that for "never
	// sent": a caller told nothing was stored would add the job again (the
	// chaos soak found 15 such jobs in 10 minutes of Redis restarts).
	t.Run("InDoubtWhenTheServerDiesAfterRunningIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t) // go-redis' default retries
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b.proxy.DropReplyAndRefuse("evalsha")
		_, err := b.queue.Add(ctx, "once", nil, nil)
		require.ErrorIs(t, err, drover.ErrAddInDoubt)
		require.NoError(t, b.proxy.Listen())
		require.Len(t, jobKeys(t, b), 1, "stored once")

		// A queue and proxy of its own: a resend of the Add above may still
		// be under way (the caller stops waiting at its deadline, the send
		// goes on, its token keeps it stored once), and on a loaded machine
		// it took this proxy's next dropped reply, so the AddBulk got its
		// own reply and no error.
		b = setup(t)
		b.proxy.DropReplyAndRefuse("evalsha")
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = b.queue.AddBulk(ctx, make([]drover.BulkJob, 3))
		var be *drover.AddBulkError
		require.ErrorAs(t, err, &be)
		require.ErrorIs(t, err, drover.ErrAddInDoubt)
		require.Equal(t, 3, be.Unknown)
		require.NoError(t, b.proxy.Listen())
		require.Len(t, jobKeys(t, b), 3)
	})

	// The same crash, and the server is back before the resends run out:
	// a resend gets the first run's answer.
	t.Run("CreatedWhenTheServerComesBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.proxy.DropReplyAndRefuse("evalsha")
		go func() {
			for b.proxy.Dropped() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(150 * time.Millisecond)
			_ = b.proxy.Listen()
		}()
		res, err := b.queue.Add(context.Background(), "once", nil, &drover.JobOptions{JobID: "order-9"})
		require.NoError(t, err)
		require.Equal(t, drover.AddCreated, res.Outcome)
		require.Len(t, jobKeys(t, b), 1)
	})

	// Every answer lost, resends included: the error says the outcome is
	// unknown (the job was in fact stored, once); a bulk chunk counts as
	// Unknown, not as refused.
	t.Run("InDoubtWhenEveryAnswerIsLost", func(t *testing.T) {
		t.Parallel()
		b := setupRetries(t, -1)
		for range 4 {
			b.proxy.DropReplyTo("evalsha")
		}
		_, err := b.queue.Add(context.Background(), "once", nil, nil)
		require.ErrorIs(t, err, drover.ErrAddInDoubt)
		require.Len(t, jobKeys(t, b), 1, "stored once")
		for range 4 {
			b.proxy.DropReplyTo("evalsha")
		}
		_, err = b.queue.AddBulk(context.Background(), make([]drover.BulkJob, 3))
		var be *drover.AddBulkError
		require.ErrorAs(t, err, &be)
		require.ErrorIs(t, err, drover.ErrAddInDoubt)
		require.Equal(t, 3, be.Unknown)
		require.Len(t, jobKeys(t, b), 4)
	})

	t.Run("Bulk", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		jobs := make([]drover.BulkJob, 25) // 3 chunks of AddBulkChunk 10
		for i := range jobs {
			jobs[i] = drover.BulkJob{Name: fmt.Sprint("j", i)}
		}
		b.proxy.DropReplyTo("evalsha")
		b.proxy.DropReplyTo("evalsha")
		res, err := b.queue.AddBulk(context.Background(), jobs)
		require.NoError(t, err)
		require.Equal(t, int64(2), b.proxy.Dropped())
		require.Len(t, res, 25)
		for _, r := range res {
			require.Equal(t, drover.AddCreated, r.Outcome)
		}
		require.Len(t, jobKeys(t, b), 25)
	})

	// A flow is one addFlow call: its lost reply is resent, and the resend
	// answers what the first run stored (without the call token: every
	// node "duplicate", as the custom ids then exist).
	t.Run("Flow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rdb := redis.NewClient(&redis.Options{Addr: b.proxy.Addr, MaxRetries: 3})
		t.Cleanup(func() { _ = rdb.Close() })
		fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		_, err = fp.Add(context.Background(), drover.FlowJob{Name: "warm-up", QueueName: "warm"}) // caches addFlow
		require.NoError(t, err)
		tree := drover.FlowJob{Name: "root", QueueName: "q", Opts: &drover.JobOptions{JobID: "root"}}
		for i := range 3 {
			tree.Children = append(tree.Children, drover.FlowJob{Name: "leaf", QueueName: "q", Opts: &drover.JobOptions{JobID: fmt.Sprint("leaf-", i)}})
		}
		b.proxy.DropReplyTo("evalsha")
		node, err := fp.Add(context.Background(), tree)
		require.NoError(t, err)
		require.Equal(t, int64(1), b.proxy.Dropped())
		require.Equal(t, drover.AddCreated, node.Outcome)
		for _, c := range node.Children {
			require.Equal(t, drover.AddCreated, c.Outcome, c.Job.ID)
		}
		require.Len(t, jobKeys(t, b), 4)
		deps, err := b.direct.SCard(context.Background(), b.prefix+":q:root:dependencies").Result()
		require.NoError(t, err)
		require.EqualValues(t, 3, deps)
	})
}
