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

// TestUIAuditLinkForAViewerSaysWhy: a viewer who follows a link to the
// audit log (an admin's, a bookmark) is told the log is for admins and who
// they are signed in as. The page said "Something went wrong: viewer may
// not do this: it needs the admin role", as if the dashboard had broken.
func TestUIAuditLinkForAViewerSaysWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/audit"), chromedp.WaitVisible(chromedp.CSS(`#main .panel`)))
	testkit.WaitFor(t, 10*time.Second, "the page to say why", func() bool {
		return evalJS[bool](t, tab, `!!document.querySelector('#forbidden')`)
	})
	msg := text(t, tab, `#forbidden`)
	require.NotContains(t, msg, "Something went wrong")
	require.Contains(t, msg, "Only admins")
	require.Contains(t, msg, "anonymous (viewer)")
	require.Equal(t, "Audit log · drover control room", evalJS[string](t, tab, `document.title`))
}

// TestUIPagesOpenedDuringAnOutageComeBack: the audit log and a job search
// opened while Redis does not answer load by themselves once it does, as
// every other page. They said "Something went wrong: Redis unavailable"
// and stayed so after the outage banner went, until a reload.
func TestUIPagesOpenedDuringAnOutageComeBack(t *testing.T) {
	t.Parallel()
	q, proxy, base := proxiedDashboard(t, outageClient, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	res, err := q.Add(context.Background(), "now", nil, nil)
	require.NoError(t, err)
	proxy.Refuse()
	proxy.ResetAll()
	audit, find := browser(t), browser(t)
	do(t, audit, chromedp.Navigate(base+"#/audit"))
	do(t, find, chromedp.Navigate(base+"#/find/nosuchjob"))
	for _, tab := range []context.Context{audit, find} {
		testkit.WaitFor(t, 30*time.Second, "the page to say it could not load", func() bool {
			return evalJS[bool](t, tab, `!!document.querySelector('#page-error')`)
		})
		require.Contains(t, text(t, tab, `#page-error`), "loads by itself")
	}
	require.NoError(t, proxy.Listen())
	_ = res
	testkit.WaitFor(t, 30*time.Second, "the audit log once Redis is back", func() bool {
		return evalJS[bool](t, audit, `!!document.querySelector('#audit-empty')`)
	})
	testkit.WaitFor(t, 30*time.Second, "the search once Redis is back", func() bool {
		return evalJS[bool](t, find, `!!document.querySelector('#find-results')`)
	})
}
