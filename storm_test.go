package drover_test

import (
	"context"
	"errors"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestRetryStorm fails 10,000 jobs together with exponential backoff and
// jitter (issue 3, acceptance 5). A manual clock holds time still while the
// storm lands, so the delayed set holds every job's first retry and its
// scores show the drawn delays exactly: they must spread over the jitter band
// [delay*(1-j), delay) the way a uniform draw does, not pile up on one
// instant. Then time moves on and every job must end failed after its
// attempts, none lost or stuck.
func TestRetryStorm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	const (
		n      = 10000
		delay  = 400 * time.Millisecond
		jitter = 0.5
	)
	t0 := time.UnixMilli(1_800_000_000_000)
	c := clock.NewManual(t0)
	drover.SetQueueClock(b.queue, c)
	jobs := make([]drover.BulkJob, n)
	opts := &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: delay, Jitter: jitter}}
	for i := range jobs {
		jobs[i] = drover.BulkJob{Name: "storm", Opts: opts}
	}
	_, err := b.queue.AddBulk(ctx, jobs)
	require.NoError(t, err)

	w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("upstream down")
	}), &drover.WorkerOptions{Prefix: b.prefix, Concurrency: 200, DrainDelay: 20 * time.Millisecond})
	require.NoError(t, err)
	drover.SetWorkerClock(w, c)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })

	// delayedOffsets reads the delayed set: each job's due time minus now, in ms.
	delayedOffsets := func(t *testing.T, want int) []float64 {
		t.Helper()
		testkit.WaitFor(t, 60*time.Second, "the storm in the delayed set", func() bool {
			n, err := b.rdb.ZCard(ctx, b.prefix+":q:delayed").Result()
			require.NoError(t, err)
			return n == int64(want)
		})
		scores, err := b.rdb.ZRangeWithScores(ctx, b.prefix+":q:delayed", 0, -1).Result()
		require.NoError(t, err)
		out := make([]float64, len(scores))
		for i, z := range scores {
			out[i] = float64(keys.DueOfScore(z.Score) - c.Now().UnixMilli())
		}
		sort.Float64s(out)
		return out
	}
	checkSpread := func(t *testing.T, offsets []float64, top float64) {
		t.Helper()
		lo := top * (1 - jitter)
		require.GreaterOrEqual(t, offsets[0], lo, "earliest due time")
		require.Less(t, offsets[len(offsets)-1], top, "latest due time")
		// A uniform draw over the band: quartiles near 1/4, 1/2, 3/4 of it,
		// and no 2% slice of the band holds much more than 2% of the jobs.
		q := func(p float64) float64 { return offsets[int(p*float64(len(offsets)-1))] }
		for _, p := range []float64{0.25, 0.5, 0.75} {
			require.InDelta(t, lo+(top-lo)*p, q(p), (top-lo)*0.05, "quantile %v", p)
		}
		width := (top - lo) / 50
		buckets := map[int]int{}
		for _, o := range offsets {
			buckets[int(math.Floor((o-lo)/width))]++
		}
		require.Len(t, buckets, 50, "every slice of the band is used")
		for bucket, n := range buckets {
			require.Less(t, float64(n)/float64(len(offsets)), 0.035, "slice %d", bucket)
		}
	}

	first := delayedOffsets(t, n)
	checkSpread(t, first, float64(delay.Milliseconds()))
	counts, err := b.queue.GetJobCounts(ctx, drover.StateDelayed, drover.StateFailed, drover.StateActive)
	require.NoError(t, err)
	require.Equal(t, int64(n), counts[drover.StateDelayed])

	// The second backoff doubles: [400, 800) ms after the second failure.
	c.Advance(delay)
	// Wait until every job failed its second attempt (atm 2) before sampling.
	testkit.WaitFor(t, 60*time.Second, "second failures", func() bool {
		jobs, err := b.queue.GetJobs(ctx, []drover.JobState{drover.StateDelayed}, 0, -1, true)
		require.NoError(t, err)
		for _, j := range jobs {
			if j.AttemptsMade != 2 {
				return false
			}
		}
		return len(jobs) == n
	})
	second := delayedOffsets(t, n)
	checkSpread(t, second, float64(2*delay.Milliseconds()))

	c.Advance(2 * delay)
	testkit.WaitFor(t, 60*time.Second, "all failed for good", func() bool {
		c, err := b.queue.GetJobCounts(ctx, drover.StateFailed)
		require.NoError(t, err)
		return c[drover.StateFailed] == n
	})
	all, err := b.queue.GetJobCounts(ctx)
	require.NoError(t, err)
	for state, c := range all {
		if state != drover.StateFailed {
			require.Zero(t, c, "state %s", state)
		}
	}
	sample, err := b.queue.GetJobs(ctx, []drover.JobState{drover.StateFailed}, 0, 9, true)
	require.NoError(t, err)
	for _, j := range sample {
		require.Equal(t, 3, j.AttemptsMade)
		require.Len(t, j.Timeline, 3)
		require.Equal(t, []drover.Outcome{drover.OutcomeRetryDelayed, drover.OutcomeRetryDelayed, drover.OutcomeRetriesExhausted}, []drover.Outcome{j.Timeline[0].Outcome, j.Timeline[1].Outcome, j.Timeline[2].Outcome})
	}
}
