package dashboard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIJobRefreshKeepsItsButtons: the job page's refresh (every 10 s,
// and after the job's live events) keeps its action buttons when they did
// not change. It replaced the whole page, and a button replaced between
// press and release takes no click: a Retry or Remove clicked at that
// moment did nothing.
func TestUIJobRefreshKeepsItsButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "jk", func(_ context.Context, _ *drover.Job) (any, error) { return nil, errors.New("no") }, nil)
	id := b.add(t, "jk", "once", nil, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "jk", id, drover.StateFailed)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/jk/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-actions button.primary`)))
	evalJS[bool](t, tab, `(window.kept = { buttons: [...document.querySelectorAll('#job-actions button')] }, true)`)
	require.Equal(t, 3, evalJS[int](t, tab, `window.kept.buttons.length`), "Retry with fresh attempts, Retry, Remove")
	watchJobLoads(t, tab)
	testkit.WaitFor(t, 30*time.Second, "the job page to refresh", func() bool {
		return evalJS[int](t, tab, `window.jobLoads`) >= 1
	})
	time.Sleep(300 * time.Millisecond) // the redraw follows the load
	require.True(t, evalJS[bool](t, tab, `window.kept.buttons.every((b) => b.isConnected)`), "the action buttons were replaced")
	// A kept button acts on the job as the page last drew it.
	do(t, tab, chromedp.Click(chromedp.CSS(`#job-actions button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal`), "Run job "+id+" now with its whole budget of 1 attempt back?")
}
