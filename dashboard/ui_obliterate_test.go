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

// TestUIObliterateSaysWhatGoes: the obliterate dialog names how many jobs
// go, and the job schedulers and settings with them; with a job running,
// the page says obliterate is refused and the API refuses before touching
// the queue. Obliterate paused the queue first, then found the active job:
// the operator read "failed" and was left with a paused queue.
func TestUIObliterateSaysWhatGoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	running, release := b.holdJob(t, "busy", nil)
	b.add(t, "busy", "later", nil, &drover.JobOptions{Delay: time.Hour})

	admin := b.as(t, adminToken)
	require.Equal(t, http.StatusConflict, admin.post("api/queues/busy/obliterate", map[string]bool{"force": false}, nil))
	require.Contains(t, string(admin.lastBody), `queue \"busy\" has 1 active jobs: obliterate refused, nothing changed`)
	paused, err := b.queue(t, "busy").IsPaused(ctx)
	require.NoError(t, err)
	require.False(t, paused, "the refused obliterate left the queue as it was")
	e := b.audit.last(t)
	require.Equal(t, "obliterate", e.Action)
	require.Equal(t, "error", e.Outcome)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/busy?state=delayed"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), adminToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.Click(chromedp.Search(`//button[text()="Obliterate…"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast`)))
	require.Equal(t, "Error: Queue busy has 1 active job: obliterate is refused while jobs run (nothing changes). Wait for them, or stop their workers.", text(t, tab, `.toast`))
	require.False(t, evalJS[bool](t, tab, `!!document.querySelector('.modal')`), "no dialog offers what would be refused")

	// Once nothing runs, the dialog says what goes, and the result matches.
	release()
	b.waitState(t, "busy", running, drover.StateCompleted)
	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.Click(chromedp.Search(`//button[text()="Obliterate…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Equal(t, "Delete the queue busy with its 2 jobs (1 delayed, 1 completed), its job schedulers, limits and events? This cannot be undone.",
		text(t, tab, `.modal p`))
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`#queues`)))
	e = b.audit.last(t)
	require.Equal(t, "obliterate", e.Action)
	require.Equal(t, "ok", e.Outcome)
	require.Equal(t, 2, e.Jobs)
	n, err := b.rdb.Exists(ctx, b.prefix+":busy:meta", b.prefix+":busy:delayed", b.prefix+":busy:completed").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}
