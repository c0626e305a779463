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

// TestUIPagesSayTheyAreLoading: while a page's first answer is on its way
// (a slow Redis, a big queue), its tables say "Loading…" and the job page
// "Loading the job…"; the line goes with the answer. Headers over empty
// tables read as a page with nothing to show, or a broken one.
func TestUIPagesSayTheyAreLoading(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	for _, p := range []struct{ page, held, loading, ready string }{
		{"#/", "overview", `#queues [data-loading]`, `#queues tr[data-queue="mail"]`},
		{"#/q/mail?state=delayed", "queues/mail/jobs", `#jobs [data-loading]`, `#jobs tr[data-job]`},
		{"#/q/mail/job/" + id, "queues/mail/jobs/", `main [data-loading]`, `#job-data`},
		{"#/q/mail/schedulers", "queues/mail/schedulers", `[data-loading]`, `main td.muted:not([data-loading] td)`},
		{"#/workers", "workers", `#workers [data-loading]`, `#workers tbody`},
		{"#/audit", "audit", `#audit [data-loading]`, `#audit-empty`},
	} {
		ha := holdAPI(t, b, p.held)
		tab := browser(t)
		do(t, tab, chromedp.Navigate(ha.url+p.page))
		testkit.WaitFor(t, 20*time.Second, p.page+" to ask for its data", func() bool { return ha.seen.Load() > 0 })
		do(t, tab, chromedp.WaitVisible(chromedp.CSS(p.loading)))
		require.Contains(t, text(t, tab, p.loading), "Loading", p.page)
		ha.release()
		do(t, tab, chromedp.WaitVisible(chromedp.CSS(p.ready)), chromedp.WaitNotPresent(chromedp.CSS(`[data-loading]`)))
	}
}
