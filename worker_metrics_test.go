package drover_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// cutAfterFinish lets every command through until the first finishJobs
// call has been answered, then fails every command without sending it: a
// worker whose connection to Redis is lost right after a finish.
type cutAfterFinish struct {
	sha string
	cut atomic.Bool
}

// isFinish: cmd runs finishJobs (EVALSHA, or EVAL before it is cached).
func (c *cutAfterFinish) isFinish(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	body, _ := args[1].(string)
	switch cmd.Name() {
	case "evalsha":
		return body == c.sha
	case "eval":
		sum := sha1.Sum([]byte(body))
		return hex.EncodeToString(sum[:]) == c.sha
	}
	return false
}

var errCut = errors.New("test: connection cut after the finish")

func (c *cutAfterFinish) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cutAfterFinish) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c.cut.Load() {
			return errCut
		}
		return next(ctx, cmds)
	}
}

func (c *cutAfterFinish) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c.cut.Load() {
			cmd.SetErr(errCut)
			return errCut
		}
		err := next(ctx, cmd)
		if err == nil && c.isFinish(cmd) {
			c.cut.Store(true)
		}
		return err
	}
}

// TestWorkerMetricsAtomicWithFinish: a job a worker with Metrics finishes
// is counted in BullMQ's metrics in the same atomic step that finishes it,
// as BullMQ's moveToFinished does. Before, the count was a second script
// call after the finish: a worker that lost Redis between the two (here:
// every command after the first finish fails) finished the job but never
// counted it.
func TestWorkerMetricsAtomicWithFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	job, err := q.Add(ctx, "j", nil, nil)
	require.NoError(t, err)

	sum := sha1.Sum([]byte(scripts.Source("finishJobs")))
	hook := &cutAfterFinish{sha: hex.EncodeToString(sum[:])}
	wrdb := redis.NewClient(&redis.Options{Addr: direct.Options().Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = wrdb.Close() })
	wrdb.AddHook(hook)
	w, err := drover.NewWorker(wrdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return "done", nil
	}), &drover.WorkerOptions{Prefix: prefix, Metrics: &drover.MetricsOptions{MaxDataPoints: drover.MetricsOneHour}})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	// The job is completed in Redis a moment before the worker has read
	// the finish's answer and the hook cut the connection: wait for both.
	testkit.WaitFor(t, 10*time.Second, "the job completed through the hook", func() bool {
		s, err := q.GetJobState(ctx, job.Job.ID)
		require.NoError(t, err)
		return s == drover.StateCompleted && hook.cut.Load()
	})
	closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = w.Close(closeCtx)
	count, err := direct.HGet(ctx, prefix+":q:metrics:completed", "count").Int()
	require.NoError(t, err, "the completed metrics hash exists")
	require.Equal(t, 1, count)
}
