package drover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestWorkerHoldsFetchWhileLocksCannotBeRenewed: a real redis-server runs
// out of memory (maxmemory, noeviction) while a worker runs a long job.
// The lock renewals are refused, so the worker must take no new job (the
// fetch script would still move due jobs to active: its first write is
// allowed) until a renewal succeeds again; then it takes them all.
func TestWorkerHoldsFetchWhileLocksCannotBeRenewed(t *testing.T) {
	t.Parallel()
	rdb, q := ownServer(t, nil, "--maxmemory-policy", "noeviction")
	ctx := context.Background()

	const short = 20
	release := make(chan struct{})
	var releaseOnce sync.Once
	started := make(chan string, short+1)
	held := make(chan bool, 10)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		started <- job.Name
		if job.Name == "long" {
			<-release
		}
		return nil, nil
	}), &drover.WorkerOptions{
		Concurrency:      short + 1,
		LockDuration:     10 * time.Second, // renewed every 2.5 s; outlasts the outage
		SkipStalledCheck: true,
		Hooks:            &drover.WorkerHooks{FetchHeld: func(h bool, _ error) { held <- h }},
	})
	require.NoError(t, err)

	_, err = q.Add(ctx, "long", nil, nil)
	require.NoError(t, err)
	// Due only once Redis is out of memory.
	due := 4 * time.Second
	dueAt := time.Now().Add(due)
	for range short {
		_, err = q.Add(ctx, "short", nil, &drover.JobOptions{Delay: due})
		require.NoError(t, err)
	}
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	})
	require.Equal(t, "long", <-started)

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "1").Err())
	select {
	case h := <-held:
		require.True(t, h, "renewals fail: fetching is held")
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not notice that it cannot renew its locks")
	}
	// Past the delayed jobs' due time: none taken. (The outage must end
	// before the fourth failed renewal, when the long job's lock expires.)
	time.Sleep(time.Until(dueAt) + 700*time.Millisecond)
	require.Empty(t, started, "no job is taken while locks cannot be renewed")
	require.Equal(t, int64(1), rdb.LLen(ctx, "bull:q:active").Val(), "only the long job is active")

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	select {
	case h := <-held:
		require.False(t, h, "renewals succeed: fetching resumes")
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not resume after renewals succeeded")
	}
	releaseOnce.Do(func() { close(release) })
	testkit.WaitFor(t, 10*time.Second, "every job to complete", func() bool {
		return rdb.ZCard(ctx, "bull:q:completed").Val() == short+1
	})
}
