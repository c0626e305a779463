package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUISchedulerRunSaysWhoMadeIt: the page of a job scheduler's pending
// run names its scheduler, links to the schedulers page, and offers no
// Cancel or Remove, which the engine refuses for such a run (as BullMQ
// does: removing it would stop the scheduler); the API answers those
// refusals with 409, not 500. The page offered both buttons, and each
// click ended in "Internal Server Error"-class 500s, audited as errors.
func TestUISchedulerRunSaysWhoMadeIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	run, err := b.queue(t, "ticks").UpsertJobScheduler(ctx, "yearly", drover.RepeatOptions{Pattern: "0 0 1 1 *"}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)
	c := b.as(t, "")
	for _, action := range []string{"cancel", "remove"} {
		require.Equal(t, http.StatusConflict, c.post("api/queues/ticks/jobs/"+run.ID+"/"+action, map[string]any{}, nil), "%s: %s", action, c.lastBody)
		require.Contains(t, string(c.lastBody), "job scheduler", action)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/ticks/job/"+run.ID), chromedp.WaitVisible(chromedp.CSS(`#made-by-scheduler`)))
	require.Contains(t, text(t, tab, `#made-by-scheduler`), "yearly")
	require.Equal(t, "#/q/ticks/schedulers", evalJS[string](t, tab, `document.querySelector('#made-by-scheduler a').getAttribute('href')`))
	buttons := evalJS[[]string](t, tab, `[...document.querySelectorAll('#job-actions button')].map((b) => b.textContent)`)
	require.NotContains(t, buttons, "Cancel…")
	require.NotContains(t, buttons, "Remove…")
	require.NotContains(t, buttons, "Change delay…")
	require.NotContains(t, buttons, "Change priority…")
	require.Contains(t, buttons, "Run now (keep attempts)")
	// An interval scheduler's first run waits at once: no button at all.
	now, err := b.queue(t, "ticks").UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, &drover.JobTemplate{Name: "tock"})
	require.NoError(t, err)
	do(t, tab, chromedp.Navigate(b.url+"#/q/ticks/job/"+now.ID), chromedp.WaitVisible(chromedp.CSS(`#made-by-scheduler`)))
	require.Equal(t, "waiting", text(t, tab, `dl.kv dd`))
	require.Empty(t, evalJS[[]string](t, tab, `[...document.querySelectorAll('#job-actions button')].map((b) => b.textContent)`))
}
