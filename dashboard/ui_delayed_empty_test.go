package dashboard_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUIEmptyDelayedSetSaysSo: a queue with no delayed job says so under
// its due-time chart. It read "0 delayed (0 overdue, ...). Clustering 0%:
// 0 of 0 due within 5.0s from 08:05:57 (alert at 50% and 100 jobs)": a
// cluster of nothing, at a time that means nothing.
func TestUIEmptyDelayedSetSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "plain", "send", nil, nil)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/plain"), chromedp.WaitVisible(chromedp.CSS(`#storm-facts`)))
	facts := text(t, tab, `#storm-facts`)
	require.Contains(t, facts, "No delayed job.")
	require.NotContains(t, facts, "Clustering")
	require.NotContains(t, facts, "0 of 0")
}
