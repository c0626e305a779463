package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
