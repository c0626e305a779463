package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUIAuditLogSaysItIsEmpty: an audit log with no entry says so. Both
// tabs showed their column headers over nothing, like a page still loading
// or one whose read failed.
func TestUIAuditLogSaysItIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	tab := browser(t)
	for hash, want := range map[string]string{
		"#/audit":              "No action recorded yet.",
		"#/audit?log=security": "No security event recorded yet.",
	} {
		do(t, tab, chromedp.Navigate(b.url+hash), chromedp.WaitVisible(chromedp.CSS(`#audit`)))
		do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#audit-empty`)))
		require.Equal(t, want, text(t, tab, `#audit-empty`), hash)
	}
}
