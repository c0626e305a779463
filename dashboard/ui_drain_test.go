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

// TestUIDrainDeletesWhatWaits: an admin's "Drain…" on the queue page asks
// with the count of jobs waiting to run, then deletes them; the delayed
// ones go only with the box ticked; a running job stays. The API is
// admin-only and audited as drain.
func TestUIDrainDeletesWhatWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	running, _ := b.holdJob(t, "dq", &drover.WorkerOptions{Concurrency: 1})
	b.add(t, "dq", "w1", nil, nil)
	b.add(t, "dq", "w2", nil, nil)
	b.add(t, "dq", "p1", nil, &drover.JobOptions{Priority: 5})
	later := b.add(t, "dq", "later", nil, &drover.JobOptions{Delay: time.Hour})

	require.Equal(t, http.StatusForbidden, b.as(t, operatorToken).post("api/queues/dq/drain", map[string]bool{"delayed": false}, nil))

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/dq"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), adminToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.Click(chromedp.Search(`//button[text()="Drain…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Equal(t, "Delete dq's 3 jobs waiting to run (waiting, paused and prioritized)? Running and finished jobs, parents waiting for their children and a job scheduler's next run stay. This cannot be undone.",
		text(t, tab, `.modal p`))
	require.Contains(t, text(t, tab, `.modal label`), "also delete its 1 delayed job")
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast`)))
	require.Equal(t, "Deleted 3 jobs from dq.", text(t, tab, `.toast`))
	e := b.audit.last(t)
	require.Equal(t, "drain", e.Action)
	require.Equal(t, "ok", e.Outcome)
	require.Equal(t, 3, e.Jobs)
	require.Equal(t, "delayed=false expected=3", e.Detail)
	counts, err := b.queue(t, "dq").GetJobCounts(ctx, drover.StateWaiting, drover.StatePrioritized, drover.StateDelayed, drover.StateActive)
	require.NoError(t, err)
	require.Equal(t, map[drover.JobState]int64{drover.StateWaiting: 0, drover.StatePrioritized: 0, drover.StateDelayed: 1, drover.StateActive: 1}, counts)

	// With the box ticked, the delayed job goes too.
	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#jobs`)),
		chromedp.Click(chromedp.Search(`//button[text()="Drain…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal #drain-delayed`)),
		chromedp.Click(chromedp.CSS(`.modal #drain-delayed`)),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast`)))
	require.Equal(t, "Deleted 1 job from dq.", text(t, tab, `.toast`))
	require.Equal(t, "delayed=true expected=1", b.audit.last(t).Detail)
	st, err := b.queue(t, "dq").GetJobState(ctx, later)
	require.NoError(t, err)
	require.Equal(t, drover.StateUnknown, st)
	st, err = b.queue(t, "dq").GetJobState(ctx, running)
	require.NoError(t, err)
	require.Equal(t, drover.StateActive, st, "the running job stays")
}
