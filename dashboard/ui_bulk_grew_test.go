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

// TestUIDrainAndObliterateRefuseWhenTheQueueGrew: an admin opens "Drain…"
// on a queue with 2 jobs waiting ("Delete gq's 2 jobs waiting to run?"), a
// producer adds 3 more while the dialog is open, and the admin confirms.
// The drain is refused (nothing deleted; the toast says 5 now, 2 when
// confirmed); asked again, the dialog names 5 and the drain deletes them.
// Obliterate likewise. Both deleted every job there was at the confirm,
// the ones added after the count included.
func TestUIDrainAndObliterateRefuseWhenTheQueueGrew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	for range 2 {
		b.add(t, "gq", "w", nil, nil)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/gq"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.Click(chromedp.Search(`//button[text()="Drain…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal p`), "Delete gq's 2 jobs waiting to run")
	for range 3 {
		b.add(t, "gq", "w", nil, nil)
	}
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast.error`)))
	require.Contains(t, text(t, tab, `.toast.error`), "gq has 5 jobs waiting to run now, 2 when you confirmed: nothing was deleted")
	n, err := b.queue(t, "gq").GetJobCounts(ctx, drover.StateWaiting)
	require.NoError(t, err)
	require.Equal(t, int64(5), n[drover.StateWaiting])
	e := b.audit.last(t)
	require.Equal(t, "drain", e.Action)
	require.Equal(t, "error", e.Outcome)
	require.Equal(t, "delayed=false expected=2", e.Detail)

	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.Click(chromedp.Search(`//button[text()="Drain…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal p`), "Delete gq's 5 jobs waiting to run")
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast:not(.error)`)))
	require.Equal(t, "Deleted 5 jobs from gq.", text(t, tab, `.toast`))

	// Obliterate: confirmed for 1 job, 1 more added meanwhile.
	b.add(t, "gq", "later", nil, &drover.JobOptions{Delay: time.Hour})
	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#jobs`)),
		chromedp.Click(chromedp.Search(`//button[text()="Obliterate…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal p`), "with its 1 job (1 delayed)")
	b.add(t, "gq", "w", nil, nil)
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast.error`)))
	require.Contains(t, text(t, tab, `.toast.error`), "gq has 2 jobs now, 1 when you confirmed: nothing was deleted")
	exists, err := b.rdb.Exists(ctx, b.prefix+":gq:meta").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), exists, "the queue is still there")

	// The API: a count no smaller than the queue's goes through.
	c := b.as(t, "")
	require.Equal(t, http.StatusBadRequest, c.post("api/queues/gq/drain", map[string]any{"expected": -1}, nil))
	require.Equal(t, http.StatusOK, c.post("api/queues/gq/obliterate", map[string]any{"expected": 2}, nil))
}
