package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCloseWhileRedisIsDown: the worker's Redis disappears while a job runs.
// Close must still return, bounded: it retries writing the result for a
// grace period, then gives up and says so (the job stays active in Redis for
// the stalled checker), and it leaves no goroutine behind (goleak in
// TestMain).
func TestCloseWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })

	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	started := make(chan struct{})
	release := make(chan struct{})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		close(started)
		<-release
		return "done", nil
	}), &drover.WorkerOptions{LockDuration: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	<-started

	srv.Stop() // Redis is gone: the result cannot be written
	close(release)
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = w.Close(cctx)
	require.ErrorContains(t, err, "results were not written")
	require.Less(t, time.Since(t0), 30*time.Second, "Close is bounded")
	require.Equal(t, err, w.Close(ctx), "a second Close reports the first one's outcome")
}
