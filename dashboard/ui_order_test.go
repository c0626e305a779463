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

// TestUIListsOldestFirstAndLastPage: a long list has a last page and an
// order to turn: the oldest failed jobs are one click away, the order
// survives paging and a reload. With 10,000 failed jobs the oldest were
// 400 "Next page" clicks away: there was no last page and no order.
func TestUIListsOldestFirstAndLastPage(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "lo", func(context.Context, *drover.Job) (any, error) { return nil, errors.New("no") }, &drover.WorkerOptions{Concurrency: 1})
	var ids []string // in the order they failed: oldest first
	for n := range 60 {
		ids = append(ids, b.add(t, "lo", fmt.Sprintf("j%02d", n), nil, &drover.JobOptions{Attempts: 1}))
		b.waitState(t, "lo", ids[n], drover.StateFailed)
		// Each fails in a millisecond of its own: two in one millisecond
		// tie in the failed set, which orders them by id as text ("9"
		// after "10" newest first), and the last page began with job 9,
		// not 10 (2 of 3 runs on a quiet machine).
		time.Sleep(2 * time.Millisecond)
	}
	tab := browser(t)
	rows := func() []string {
		return evalJS[[]string](t, tab, `[...document.querySelectorAll('#jobs tr[data-job]')].map((r) => r.dataset.job)`)
	}
	// click presses a pager button until the page's address changes: the
	// page's refresh (every 10 s, and after live events) draws the pager
	// anew, and a button replaced between press and release takes no
	// click (seen once in a run of every TestUI on 2 cores).
	click := func(sel string) {
		t.Helper()
		from := evalJS[string](t, tab, `location.hash`)
		testkit.WaitFor(t, 30*time.Second, "a click on "+sel, func() bool {
			if evalJS[string](t, tab, `location.hash`) != from {
				return true
			}
			do(t, tab, chromedp.Click(chromedp.CSS(sel)))
			return evalJS[string](t, tab, `location.hash`) != from
		})
	}
	waitFirst := func(what, id string) {
		t.Helper()
		testkit.WaitFor(t, 30*time.Second, what, func() bool { r := rows(); return len(r) > 0 && r[0] == id })
	}
	do(t, tab, chromedp.Navigate(b.url+"#/q/lo?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	require.Equal(t, ids[59], rows()[0], "newest first")

	click(`#last-page`)
	waitFirst("the last page", ids[9])
	require.Len(t, rows(), 10)
	require.Equal(t, "51–60 of 60", text(t, tab, `#page-range`))

	click(`#order-toggle`)
	waitFirst("oldest first", ids[0])
	require.Equal(t, "Newest first", text(t, tab, `#order-toggle`))
	click(`#next-page`)
	waitFirst("the second page, oldest first", ids[25])
	do(t, tab, chromedp.Reload())
	waitFirst("the same page after a reload", ids[25])
	require.Equal(t, ids[25:50], rows())
}
