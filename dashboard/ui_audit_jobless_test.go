package dashboard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIAuditJobsColumnOnlyForJobActions: the audit log's Jobs column
// counts jobs for the actions that change jobs, and is blank for those that
// do not (pause, limits, and every sign-in of the security log). It said 0
// for a pause, a limits change and each sign-in: read as "this pause
// touched no job", or as a bulk action that found nothing.
func TestUIAuditJobsColumnOnlyForJobActions(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	ada := b.as(t, adminToken)
	require.Equal(t, http.StatusOK, ada.post("api/queues/mail/pause", nil, nil))
	require.Equal(t, http.StatusOK, ada.post("api/queues/mail/limits", map[string]any{"concurrency": 2}, nil))
	require.Equal(t, http.StatusOK, ada.post("api/queues/mail/jobs/"+id+"/promote", nil, nil))

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/audit"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), adminToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr:not([data-loading]) td`)))
	// Action -> the Jobs cell.
	jobs := func() map[string]string {
		return evalJS[map[string]string](t, tab, `Object.fromEntries([...document.querySelectorAll('#audit tbody tr')].filter((r) => r.cells.length > 6)
			.map((r) => [r.cells[2].textContent, r.cells[5].textContent]))`)
	}
	testkit.WaitFor(t, 10*time.Second, "the three actions listed", func() bool { return len(jobs()) == 3 })
	require.Equal(t, map[string]string{"promote-job": "1", "pause": "", "set-limits": ""}, jobs())

	do(t, tab, chromedp.Navigate(b.url+"#/audit?log=security"), chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr:not([data-loading]) td`)))
	testkit.WaitFor(t, 10*time.Second, "the sign-ins listed", func() bool { return len(jobs()) > 0 })
	for action, n := range jobs() {
		require.Empty(t, n, "a %s counts no jobs", action)
	}
}
