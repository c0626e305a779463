package drover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestWorkerWakesForDelayedAfterPartialFetch: a worker with free slots that
// takes fewer jobs than it asked for must still wake when the next delayed
// job is due. Here the first delayed job falls due while the queue is paused:
// the worker's fetch promotes it without a marker (a paused queue gets
// none), the resume's marker wakes the worker, which takes that one job and
// then, with two slots free and no marker left, used to wait its whole
// DrainDelay (5s) while the next jobs fell due (seen with Node BullMQ's
// worker taking them on time: TestDifferentialTimed's random scenarios).
func TestWorkerWakesForDelayedAfterPartialFetch(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()

	b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		return "ok", nil
	}, &drover.WorkerOptions{Concurrency: 3, DrainDelay: 5 * time.Second})
	time.Sleep(100 * time.Millisecond) // the worker waits on the marker

	t0 := time.Now()
	var ids []string
	for _, d := range []time.Duration{300, 600, 900} {
		res, err := b.queue.Add(ctx, "d", nil, &drover.JobOptions{Delay: d * time.Millisecond, Timestamp: t0})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	time.Sleep(time.Until(t0.Add(150 * time.Millisecond)))
	require.NoError(t, b.queue.Pause(ctx))
	time.Sleep(time.Until(t0.Add(450 * time.Millisecond))) // the first falls due while paused
	require.NoError(t, b.queue.Resume(ctx))

	testkit.WaitFor(t, 10*time.Second, "3 jobs completed", func() bool {
		n, err := b.rdb.ZCard(ctx, b.prefix+":q:completed").Result()
		require.NoError(t, err)
		return n == 3
	})
	for _, id := range ids[1:] {
		job, err := b.queue.GetJob(ctx, id)
		require.NoError(t, err)
		due := job.Timestamp.Add(job.Opts.Delay)
		late := job.ProcessedOn.Sub(due)
		require.Less(t, late, 2*time.Second, fmt.Sprintf("job %s (due %s after the adds) started %s late", id, job.Opts.Delay, late))
	}
}
