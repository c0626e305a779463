package inspect_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestBulkRetrySkipsAJobThatRanAgainMeanwhile: a bulk retry selects its
// jobs, then moves them in paced chunks. A job Node BullMQ retried in
// between, which failed again, is no longer the failure the operator
// confirmed: the bulk retry skips it ("changed meanwhile") instead of
// running it a second time for one request. It ran it again (3 attempts,
// retried 6, skipped 0 before the fix), on both the confirmed path
// (OlderThan from the dry run) and a retry without a bound (a repeated
// POST, the CLI).
func TestBulkRetrySkipsAJobThatRanAgainMeanwhile(t *testing.T) {
	t.Parallel()
	for name, confirmed := range map[string]bool{"Confirmed": true, "Unbounded": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, nil)
			o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
			var ids []string
			for range 6 {
				id, err := o.Add(ctx, b.prefix, "q", "pay", map[string]any{}, map[string]any{"attempts": 1})
				require.NoError(t, err)
				ids = append(ids, id)
			}
			require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("card declined"),
				DrainDelay: 100 * time.Millisecond}))
			for _, id := range ids {
				_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
				require.NoError(t, err)
			}
			filter := inspect.Filter{Reason: "declined"}
			dry, err := b.ins.RetryJobs(ctx, "q", &inspect.RetryOptions{Filter: filter, DryRun: true})
			require.NoError(t, err)
			require.Equal(t, 6, dry.Matched)
			last := dry.IDs[len(dry.IDs)-1] // the oldest: moved in the last chunk
			opts := &inspect.RetryOptions{Filter: filter, ChunkSize: 1, Pause: -1}
			if confirmed {
				opts.OlderThan = dry.NewestFinished.Time
			}
			var once sync.Once
			opts.Progress = func(done, total int) {
				once.Do(func() {
					// After the first chunk: Node retries the last job, and
					// its worker fails it again.
					require.NoError(t, o.RetryJob(ctx, b.prefix, "q", last, "failed", false, false))
					testkit.WaitFor(t, 20*time.Second, "job "+last+" to fail again", func() bool {
						j, err := o.GetJob(ctx, b.prefix, "q", last)
						require.NoError(t, err)
						return j.AttemptsMade == 2 && j.FinishedOn != nil
					})
				})
			}
			res, err := b.ins.RetryJobs(ctx, "q", opts)
			require.NoError(t, err)
			require.Equal(t, 6, res.Matched)
			require.Equal(t, 5, res.Retried)
			require.Equal(t, 1, res.Skipped, "the job that ran again meanwhile")
			q := b.queue(t, "q")
			testkit.WaitFor(t, 20*time.Second, "every job to fail again", func() bool {
				c, err := q.GetJobCounts(ctx, drover.StateFailed)
				require.NoError(t, err)
				return c[drover.StateFailed] == 6
			})
			for _, id := range ids {
				j, err := o.GetJob(ctx, b.prefix, "q", id)
				require.NoError(t, err)
				require.EqualValues(t, 2, j.AttemptsMade, "job %s ran twice: first, then once retried", id)
			}
		})
	}
}
