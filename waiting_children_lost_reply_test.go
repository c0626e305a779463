package drover_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestMoveToWaitingChildrenReplyLost: a processor adds a child to its job
// and parks the job with Job.MoveToWaitingChildren; the move runs, its
// reply is lost (the connection resets) and go-redis sends it again, as it
// does after a lost reply. The move must report that the job was parked:
// before, the resend found the lock the move had released gone and
// MoveToWaitingChildren failed with ErrLockLost ("the job is
// waiting-children"), so the processor returned that error and the worker
// tried to write it as the attempt's failure ("job lock lost: result not
// written").
func TestMoveToWaitingChildrenReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	direct, prefix := redistest.Client(t)
	src := scripts.Source("moveToWaitingChildren")
	require.NoError(t, direct.ScriptLoad(ctx, src).Err()) // an EVALSHA, not a NOSCRIPT and an EVAL
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{})

	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(direct, &drover.FlowProducerOptions{Prefix: prefix})
	require.NoError(t, err)
	type moved struct {
		ok  bool
		err error
	}
	result := make(chan moved, 1)
	logs := &testkit.SyncBuffer{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.AttemptsStarted > 1 {
			return "after children", nil
		}
		ref := job.Ref()
		if _, err := fp.Add(ctx, drover.FlowJob{Name: "kid", QueueName: "kids", Parent: &ref}); err != nil {
			return nil, err
		}
		proxy.DropReplyTo(fmt.Sprintf("%x", sha1.Sum([]byte(src))))
		ok, err := job.MoveToWaitingChildren(ctx, nil)
		result <- moved{ok, err}
		if ok {
			return nil, drover.ErrWaitingChildren
		}
		return nil, err
	}), &drover.WorkerOptions{Prefix: prefix, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })

	added, err := q.Add(ctx, "parent", nil, nil)
	require.NoError(t, err)
	var got moved
	select {
	case got = <-result:
	case <-time.After(10 * time.Second):
		t.Fatalf("the processor did not move its job; logs:\n%s", logs.String())
	}
	require.EqualValues(t, 1, proxy.Dropped(), "the move's reply was lost")
	require.NoError(t, got.err)
	require.True(t, got.ok, "the job was parked")
	testkit.WaitFor(t, 10*time.Second, "the job in waiting-children", func() bool {
		st, err := q.GetJobState(ctx, added.Job.ID)
		return err == nil && st == drover.StateWaitingChildren
	})
	require.NoError(t, w.Close(ctx))
	require.NotContains(t, logs.String(), "result not written")
}
