package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIPagesSayWhereTheyAre: the window's title names the page shown, so
// tabs, bookmarks, the Back button's history list and a screen reader's
// page announcement tell a job from its queue and the overview. Every
// page was titled "drover control room".
func TestUIPagesSayWhereTheyAre(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	for _, page := range []struct{ hash, ready, title string }{
		{"#/", `tr[data-queue="mail"]`, "Queues · drover control room"},
		{"#/q/mail", `#jobs tr[data-job]`, "delayed jobs · mail · drover control room"},
		{"#/q/mail?state=failed", `#jobs`, "failed jobs · mail · drover control room"},
		{"#/q/mail/job/" + id, `#job-actions`, "job " + id + " · mail · drover control room"},
		{"#/q/mail/schedulers", `#schedulers`, "job schedulers · mail · drover control room"},
		{"#/q/mail/stalled", `#active-locks`, "stalled view · mail · drover control room"},
		{"#/workers", `#workers`, "Workers · drover control room"},
		{"#/audit", `#audit`, "Audit log · drover control room"},
		{"#/q/nope", `#not-found`, "No queue nope · drover control room"},
		{"#/nowhere", `#not-found`, "No such page · drover control room"},
	} {
		do(t, tab, chromedp.Navigate(b.url+page.hash), chromedp.WaitVisible(chromedp.CSS(page.ready)))
		testkit.WaitFor(t, 10*time.Second, page.hash+" titled "+page.title, func() bool {
			return evalJS[string](t, tab, `document.title`) == page.title
		})
	}
	// Back names the page it returns to.
	do(t, tab, chromedp.NavigateBack())
	testkit.WaitFor(t, 10*time.Second, "Back to be titled as the page it shows", func() bool {
		return evalJS[string](t, tab, `document.title`) == "No queue nope · drover control room" &&
			text(t, tab, `#not-found h1`) == "No queue named nope"
	})
}

// TestUIPagesHaveAHeading: the sign-in page and the page of a job that is
// gone have a top heading, as every other page: a screen reader's list of
// headings (how its users find where they are) was empty on them (the
// sign-in form was headed by an h2, the gone job by a bare paragraph).
func TestUIPagesHaveAHeading(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail/job/999"), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	require.Equal(t, []string{"Sign in to the drover dashboard"}, evalJS[[]string](t, tab, `[...document.querySelectorAll('h1')].map((h) => h.textContent)`))
	b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	do(t, tab, chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), viewerToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS(`#job-gone`)))
	require.Equal(t, []string{"Job 999 is gone (removed, or never existed)."}, evalJS[[]string](t, tab, `[...document.querySelectorAll('h1')].map((h) => h.textContent)`))
}
