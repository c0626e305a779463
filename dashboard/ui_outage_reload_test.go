package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIOutageBannerOnAPageOpenedDuringIt: a queue page opened (or
// reloaded) while Redis does not answer keeps the outage banner up until
// Redis answers, and does not claim to show numbers loaded before. The
// answers that need no Redis (the session of an anonymous dashboard, the
// list of bulk operations, kept in memory) took the banner down a moment
// after it came up, so the page showed empty lists with no word of the
// outage for the next 10 s, and the banner said "What this page shows was
// loaded at" the time of the session's answer, when nothing was.
func TestUIOutageBannerOnAPageOpenedDuringIt(t *testing.T) {
	t.Parallel()
	q, proxy, base := proxiedDashboard(t, outageClient, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	_, err := q.Add(context.Background(), "now", nil, nil)
	require.NoError(t, err)
	shown := func(tab context.Context) bool {
		return evalJS[bool](t, tab, `(() => { const b = document.getElementById('outage'); return !!b && !b.hidden && b.offsetHeight > 0; })()`)
	}
	proxy.Refuse()
	proxy.ResetAll()
	tab := browser(t)
	do(t, tab, chromedp.Navigate(base+"#/q/q?state=waiting"))
	testkit.WaitFor(t, 30*time.Second, "the outage banner", func() bool { return shown(tab) })
	// Past the page's first answers (the operations list comes right
	// after the list's), before its 10 s refresh.
	for range 8 {
		time.Sleep(250 * time.Millisecond)
		require.True(t, shown(tab), "the banner went while Redis was still down")
	}
	banner := text(t, tab, `#outage`)
	require.Contains(t, banner, "Redis does not answer")
	require.NotContains(t, banner, "was loaded at", "the page loaded nothing before the outage")
	require.NoError(t, proxy.Listen())
	testkit.WaitFor(t, 30*time.Second, "the banner to go once Redis is back", func() bool { return !shown(tab) })
	testkit.WaitFor(t, 30*time.Second, "the page to list the job", func() bool {
		return evalJS[bool](t, tab, `!!document.querySelector('#jobs tr[data-job]')`)
	})
}
