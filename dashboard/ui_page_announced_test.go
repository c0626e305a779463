package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUINewPageIsAnnounced: a keyboard and screen-reader user follows a
// link. The page it leads to is said in a live region (its title, which
// screen readers do not read on a hash change), and its heading takes the
// focus, so the next Tab goes on in the new page. Nothing was announced,
// and the focus fell to <body> with the link: the next Tab started over at
// the header's brand link.
func TestUINewPageIsAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="mail"] a`)))
	focused := `(() => { const f = document.activeElement; return f ? f.tagName + (document.getElementById('main').contains(f) ? ' in main' : '') : ''; })()`
	announced := func(want string) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, "the live region to say "+want, func() bool {
			return text(t, tab, `#announce[role="status"]`) == want
		})
	}

	do(t, tab, chromedp.Focus(chromedp.CSS(`tr[data-queue="mail"] a`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	announced("delayed jobs · mail")
	require.Equal(t, "H1 in main", evalJS[string](t, tab, focused), "the queue's heading has the focus")
	do(t, tab, chromedp.KeyEvent(kb.Tab))
	require.Contains(t, evalJS[string](t, tab, focused), "in main", "Tab goes on in the page")

	// On to the job, by its link.
	do(t, tab, chromedp.Focus(chromedp.CSS(`#jobs tr[data-job] a`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#job-actions`)))
	announced("job " + id + " · mail")
	require.Equal(t, "H1 in main", evalJS[string](t, tab, focused))

	// The header's search box keeps the focus it has: the page is said.
	do(t, tab, chromedp.SendKeys(chromedp.CSS(`#job-search input`), "nope"), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#find-results`)))
	announced("Job id nope")
	require.Equal(t, "INPUT", evalJS[string](t, tab, focused))
}
