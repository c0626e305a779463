package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestUITimelineAfterFreshBulkRetry: a Node worker failed a job twice; the
// dashboard's bulk retry ran it again keeping its attempts (failed), then
// with fresh attempts (failed twice). The job page draws the five
// attempts as they went, with the two retries by hand between them, and
// the fresh-attempts boundary (no attempt number) before the new run,
// numbered from #1 again: fresh attempts reset attemptsStarted too, as
// BullMQ's resetAttemptsStarted. Before, the reset hid attempts 2 to 4 as
// "no drover record" moves of unknown outcome; later the new run went on
// from #4 with nothing marking the reset.
func TestUITimelineAfterFreshBulkRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	id, err := o.Add(ctx, b.prefix, "q", "pay", map[string]any{}, map[string]any{"attempts": 2})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("declined"), DrainDelay: 100 * time.Millisecond}))
	c := b.as(t, "")
	fin := func() bool {
		j, err := o.GetJob(ctx, b.prefix, "q", id)
		require.NoError(t, err)
		st, err := o.GetState(ctx, b.prefix, "q", id)
		require.NoError(t, err)
		return st == "failed" && j.FinishedOn != nil
	}
	testkit.WaitFor(t, 10*time.Second, "f", fin)
	for _, reset := range []bool{false, true} {
		c.bulkRetry("q", dashboard.RetryJobsRequest{ResetAttempts: reset})
		testkit.WaitFor(t, 10*time.Second, "f", fin)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	require.Equal(t, []string{"1:retried", "2:retries-exhausted", "3:retries-exhausted", "fresh:restart", "1:retried", "2:retries-exhausted"},
		evalJS[[]string](t, tab, `[...document.querySelectorAll('#timeline [data-attempt], #timeline [data-fresh]')].map(g => g.dataset.fresh ? 'fresh:' + g.dataset.fresh : g.dataset.attempt + ':' + g.dataset.outcome)`))
	tl := text(t, tab, `#timeline`)
	require.Equal(t, 2, strings.Count(tl, "retried by hand"))
	require.Contains(t, tl, "retried with fresh attempts")
	require.Contains(t, tl, "after 3 started")
	require.Contains(t, tl, "from #1 again")
	require.NotContains(t, tl, "#0")
	require.Equal(t, "yes", evalJS[string](t, tab, `document.querySelector('#timeline-legend [data-legend="fresh-attempts"]') ? 'yes' : 'no'`))
}
