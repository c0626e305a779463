package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIOutageBanner: Redis goes away while the overview or a queue page
// is open. A banner above the page says Redis does not answer and that
// the numbers shown are from before; it goes by itself once Redis is
// back. Both pages kept their last counts and jobs as if current: the
// overview with no word of the outage once its table had loaded (only the
// line above it changed, in grey), the queue page with a grey "Could not
// load" line among its filters.
func TestUIOutageBanner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, proxy, base := proxiedDashboard(t, outageClient, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	_, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	shown := func(tab context.Context) bool {
		t.Helper()
		v, err := chromedp.Run(step(t, tab), chromedp.Evaluate[bool](`(() => { const b = document.getElementById('outage'); return !!b && !b.hidden && b.offsetHeight > 0; })()`))
		require.NoError(t, err)
		return v
	}
	for _, page := range []struct{ hash, ready string }{
		{"#/", `tr[data-queue="q"]`},
		{"#/q/q?state=delayed", `#jobs tr[data-job]`},
	} {
		tab := browser(t)
		do(t, tab, chromedp.Navigate(base+page.hash), chromedp.WaitVisible(chromedp.CSS(page.ready)))
		require.False(t, shown(tab), "%s: no banner while Redis answers", page.hash)
		proxy.Refuse()
		proxy.ResetAll()
		testkit.WaitFor(t, 30*time.Second, page.hash+": the outage banner", func() bool { return shown(tab) })
		banner := text(t, tab, `#outage`)
		require.Contains(t, banner, "Redis does not answer", page.hash)
		require.Contains(t, banner, "may be out of date", page.hash)
		require.True(t, strings.Contains(banner, "comes back by itself"), page.hash)
		require.NoError(t, proxy.Listen())
		testkit.WaitFor(t, 30*time.Second, page.hash+": the banner to go once Redis is back", func() bool { return !shown(tab) })
	}
}
