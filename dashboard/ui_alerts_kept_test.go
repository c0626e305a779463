package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIAlertsStayPut: an alert banner (role=alert) that a refresh draws
// the same stays in the page. Every refresh (the overview's every 5 s, a
// queue page's after each live event) took the banners out and put new
// ones in, and a screen reader announces a role=alert element each time
// one is inserted: the same "retry storm" was read out again every few
// seconds, on a busy queue several times a second.
func TestUIAlertsStayPut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "storm")
	for range 120 {
		_, err := q.Add(ctx, "deliver", nil, &drover.JobOptions{Delay: 3 * time.Minute})
		require.NoError(t, err)
	}
	tab := browser(t)
	// inserted counts the alert banners put into the page from now on.
	watch := `(() => { window.inserted = 0; const a = document.querySelector('#alerts [data-alert="clustering"]'); a.keptMark = true;
		new MutationObserver((ms) => { for (const m of ms) for (const n of m.addedNodes) if (n.getAttribute && n.getAttribute('role') === 'alert') window.inserted++; })
			.observe(document.getElementById('alerts'), { childList: true }); return true; })()`
	kept := `(() => { const a = document.querySelector('#alerts [data-alert="clustering"]'); return !!a && a.keptMark === true && window.inserted === 0; })()`

	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`#alerts [data-alert="clustering"]`)))
	require.True(t, evalJS[bool](t, tab, watch))
	// The overview's next refresh, seen in a count it changes.
	b.add(t, "other", "x", nil, nil)
	testkit.WaitFor(t, 30*time.Second, "the overview to refresh", func() bool {
		return text(t, tab, `tr[data-queue="other"] td[data-state="waiting"]`) == "1"
	})
	require.True(t, evalJS[bool](t, tab, kept), "the overview's refresh put the same alert in again")

	do(t, tab, chromedp.Navigate(b.url+"#/q/storm"), chromedp.WaitVisible(chromedp.CSS(`#alerts [data-alert="clustering"]`)))
	require.True(t, evalJS[bool](t, tab, watch))
	// A job added to the queue: its live event refreshes the page.
	b.add(t, "storm", "now", nil, nil)
	testkit.WaitFor(t, 30*time.Second, "the queue page to refresh", func() bool {
		return text(t, tab, `.tabs a[href$="state=waiting"] .count`) == "1"
	})
	require.True(t, evalJS[bool](t, tab, kept), "the queue page's refresh put the same alert in again")
}
