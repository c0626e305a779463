package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIDialogIsDescribed: a confirmation names its question as the
// dialog's description (aria-describedby), so a screen reader reads what
// is about to happen along with the title. The dialog was labelled by its
// title alone and opened on its Cancel button: "Remove job, dialog,
// Cancel, button", without "Delete job 1 and its logs? This cannot be
// undone."
func TestUIDialogIsDescribed(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "dq", "x", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/dq/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-actions`)),
		chromedp.Click(chromedp.Search(`//button[text()="Remove…"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="no"]`)))
	described := evalJS[string](t, tab, `(() => { const m = document.querySelector('.modal[role="dialog"]');
		const ids = (m.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
		return ids.map((i) => (document.getElementById(i) || {}).textContent || '').join(' '); })()`)
	require.Contains(t, described, "This cannot be undone.")
}
