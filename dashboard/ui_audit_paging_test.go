package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUIAuditOlderPageSaysSoAndLeadsBack: the audit page's "Older entries"
// page says it shows older entries and links back to the newest ones; it
// looked like the first page (same intro, no way back but the browser's
// Back), so an admin read old entries as the latest.
func TestUIAuditOlderPageSaysSoAndLeadsBack(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "q", "x", nil, nil)
	c := b.as(t, "")
	for n := range 105 {
		path := "api/queues/q/pause"
		if n%2 == 1 {
			path = "api/queues/q/resume"
		}
		require.Equal(t, http.StatusOK, c.post(path, nil, nil))
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/audit"), chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr`)))
	require.Zero(t, evalJS[float64](t, tab, `document.querySelectorAll('#audit-newest').length`), "the newest page links to itself")
	do(t, tab, chromedp.Click(chromedp.Search(`//a[starts-with(text(),"Older entries")]`)), chromedp.WaitVisible(chromedp.CSS(`#audit-newest`)))
	require.Contains(t, text(t, tab, `#audit-page-note`), "older than")
	require.Equal(t, 5.0, evalJS[float64](t, tab, `document.querySelectorAll('#audit tbody tr').length`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#audit-newest`)), chromedp.WaitNotPresent(chromedp.CSS(`#audit-newest`)), chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr`)))
	require.True(t, strings.HasPrefix(text(t, tab, `#audit tbody tr:first-child td:nth-child(3)`), "pause"), "the newest entry first")
}
