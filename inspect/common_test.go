package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

type testBundle struct {
	rdb    *redis.Client
	prefix string
	ins    *inspect.Inspector
}

func setup(t *testing.T, opts *inspect.Options) *testBundle {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	o := inspect.Options{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = prefix
	ins, err := inspect.New(rdb, &o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	return &testBundle{rdb: rdb, prefix: prefix, ins: ins}
}

func (b *testBundle) queue(t *testing.T, name string) *drover.Queue {
	t.Helper()
	q, err := drover.NewQueue(b.rdb, name, &drover.QueueOptions{Prefix: b.prefix, BackoffTypes: []string{"test"}})
	require.NoError(t, err)
	return q
}

func (b *testBundle) add(t *testing.T, queue, name string, opts *drover.JobOptions) string {
	t.Helper()
	res, err := b.queue(t, queue).Add(context.Background(), name, map[string]string{"k": "v"}, opts)
	require.NoError(t, err)
	return res.Job.ID
}

// startWorker runs proc on queue until the test ends. The "test" backoff
// waits 10ms after the first failure and an hour after later ones.
func (b *testBundle) startWorker(t *testing.T, queue string, proc drover.ProcessorFunc, opts *drover.WorkerOptions) *drover.Worker {
	t.Helper()
	o := drover.WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = b.prefix
	o.DrainDelay = 50 * time.Millisecond
	if o.BackoffStrategies == nil {
		o.BackoffStrategies = map[string]drover.BackoffFunc{"test": testBackoff}
	}
	w, err := drover.NewWorker(b.rdb, queue, proc, &o)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
	})
	return w
}

func testBackoff(attemptsMade int, _ string, _ error, _ *drover.Job) time.Duration {
	if attemptsMade == 1 {
		return 10 * time.Millisecond
	}
	return time.Hour
}

// testRetry is the options of a job that fails twice quickly, then waits an
// hour for its third and last attempt (with the "test" backoff).
var testRetry = &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "test"}}

func (b *testBundle) waitState(t *testing.T, queue, id string, state drover.JobState) {
	t.Helper()
	q := b.queue(t, queue)
	testkit.WaitFor(t, 10*time.Second, "job "+id+" to be "+string(state), func() bool {
		s, err := q.GetJobState(context.Background(), id)
		require.NoError(t, err)
		return s == state
	})
}

func ptr[T any](v T) *T { return &v }

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
