package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIRefreshKeepsTheListItDrew: the queue page's refresh (every 10 s,
// and after live events) keeps the job links and pager buttons it drew
// when the list did not change. It replaced them all, and a link or
// button replaced between press and release takes no click: a "Next page"
// or a job link clicked at that moment did nothing.
func TestUIRefreshKeepsTheListItDrew(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "rk", func(_ context.Context, job *drover.Job) (any, error) { return nil, errors.New("no") }, nil)
	var last string
	for n := range 30 {
		last = b.add(t, "rk", fmt.Sprintf("j%02d", n), nil, &drover.JobOptions{Attempts: 1})
	}
	b.waitState(t, "rk", last, drover.StateFailed)
	testkit.WaitFor(t, 20*time.Second, "30 failed jobs", func() bool {
		c, err := b.queue(t, "rk").GetJobCounts(context.Background(), drover.StateFailed)
		require.NoError(t, err)
		return c[drover.StateFailed] == 30
	})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/rk?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#next-page`)))
	evalJS[bool](t, tab, `(window.kept = { next: document.querySelector('#next-page'), link: document.querySelector('#jobs tr[data-job] a') }, true)`)
	// A delayed job elsewhere in the queue: its live event refreshes the page.
	b.add(t, "rk", "later", nil, &drover.JobOptions{Delay: time.Hour})
	testkit.WaitFor(t, 30*time.Second, "the refresh to count the delayed job", func() bool {
		return text(t, tab, `.tabs a[href$="state=delayed"] .count`) == "1"
	})
	require.True(t, evalJS[bool](t, tab, `window.kept.next.isConnected`), "the Next page button was replaced")
	require.True(t, evalJS[bool](t, tab, `window.kept.link.isConnected`), "the job link was replaced")
}
