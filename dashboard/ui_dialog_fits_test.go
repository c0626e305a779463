package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIDialogFitsTheScreen: a confirmation taller than the window (the
// bulk retry's sample of jobs with long ids, on a phone) keeps its
// question and its buttons on the screen and scrolls its middle. The
// dialog grew past both edges of the window and the page under it does
// not scroll: at 375x667 its title and its Cancel and Retry buttons were
// out of reach, so the retry could be neither read nor confirmed.
func TestUIDialogFitsTheScreen(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "tall", func(context.Context, *drover.Job) (any, error) {
		return nil, errors.New("gateway answered 502 for " + strings.Repeat("/segment", 20))
	}, nil)
	var last string
	for n := range 10 {
		last = b.add(t, "tall", "deliver", nil, &drover.JobOptions{Attempts: 1, JobID: fmt.Sprintf("order-%d-%s", n, strings.Repeat("x", 200))})
	}
	b.waitState(t, "tall", last, drover.StateFailed)
	testkit.WaitFor(t, 20*time.Second, "10 failed jobs", func() bool {
		c, err := b.queue(t, "tall").GetJobCounts(context.Background(), drover.StateFailed)
		require.NoError(t, err)
		return c[drover.StateFailed] == 10
	})

	tab := browser(t)
	do(t, tab, chromedp.EmulateViewport(375, 667),
		chromedp.Navigate(b.url+"#/q/tall?state=failed"),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.Click(chromedp.CSS(`#bulk-retry`)),
		chromedp.WaitVisible(chromedp.CSS(`#retry-preview`)))
	onScreen := func(sel string) bool {
		return evalJS[bool](t, tab, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
			return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth; })()`, sel))
	}
	require.True(t, onScreen(`.modal`), "the dialog is taller or wider than the window")
	require.True(t, onScreen(`.modal h2`), "the dialog's question is off the screen")
	require.True(t, onScreen(`.modal [data-confirm="yes"]`), "the Retry button is off the screen")
	require.True(t, onScreen(`.modal [data-confirm="no"]`), "the Cancel button is off the screen")
	// The sample scrolls inside the dialog, from the keyboard too: Tab from
	// the last button comes round to it, and Page Down scrolls it.
	require.True(t, evalJS[bool](t, tab, `(() => { const s = document.querySelector('#retry-preview').closest('.modal-body');
		return !!s && s.scrollHeight > s.clientHeight && s.scrollTop === 0; })()`), "the dialog's middle does not scroll")
	do(t, tab, chromedp.Focus(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.KeyEvent(kb.Tab))
	require.True(t, evalJS[bool](t, tab, `document.activeElement === document.querySelector('.modal-body')`), "Tab does not reach the scrolling part")
	do(t, tab, chromedp.KeyEvent(kb.PageDown))
	testkit.WaitFor(t, 5*time.Second, "Page Down to scroll the sample", func() bool {
		return evalJS[bool](t, tab, `document.querySelector('.modal-body').scrollTop > 0`)
	})
	// Confirmed from the keyboard, as on a desktop.
	do(t, tab, chromedp.Focus(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#operations [data-status="done"]`)))
}
