package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
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
	do(t, tab, chromedp.Navigate(b.url+"#/audit"), chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr:not([data-loading])`)))
	require.Zero(t, evalJS[float64](t, tab, `document.querySelectorAll('#audit-newest').length`), "the newest page links to itself")
	do(t, tab, chromedp.Click(chromedp.Search(`//a[starts-with(text(),"Older entries")]`)), chromedp.WaitVisible(chromedp.CSS(`#audit-newest`)))
	require.Contains(t, text(t, tab, `#audit-page-note`), "older than")
	// The link is drawn before the older page's rows arrive: wait for them
	// (read at once, they were 0 in a loaded CI run).
	testkit.WaitFor(t, 30*time.Second, "the older page's 5 rows", func() bool {
		return evalJS[float64](t, tab, `document.querySelectorAll('#audit tbody tr').length`) == 5
	})
	do(t, tab, chromedp.Click(chromedp.CSS(`#audit-newest`)), chromedp.WaitNotPresent(chromedp.CSS(`#audit-newest`)), chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr:not([data-loading])`)))
	require.True(t, strings.HasPrefix(text(t, tab, `#audit tbody tr:first-child td:nth-child(3)`), "pause"), "the newest entry first")
}

// TestUIAuditTabsSayWhichLogIsShown: the audit page's two tabs (Actions,
// Security events) mark the one shown with aria-current, so a screen
// reader says which log is open; only its colour said so.
func TestUIAuditTabsSayWhichLogIsShown(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	tab := browser(t)
	current := `[...document.querySelectorAll('main a[href^="#/audit?log="]')].map((a) => a.textContent + '=' + a.getAttribute('aria-current')).join(' ')`
	do(t, tab, chromedp.Navigate(b.url+"#/audit"), chromedp.WaitVisible(chromedp.CSS(`#audit-empty`)))
	require.Equal(t, "Actions=page Security events=null", evalJS[string](t, tab, current))
	do(t, tab, chromedp.Click(chromedp.Search(`//a[text()="Security events"]`)), chromedp.WaitVisible(chromedp.CSS(`#audit-empty`)))
	testkit.WaitFor(t, 10*time.Second, "the security log's tab to be current", func() bool {
		return evalJS[string](t, tab, current) == "Actions=null Security events=page"
	})
}
