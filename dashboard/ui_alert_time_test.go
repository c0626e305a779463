package dashboard_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIAlertTimesInTheBrowsersZone: a retry-storm alert names its time as
// every other time on the page does, in the browser's zone. The banner
// said "due within 5s from 2026-12-06T11:26:44Z" (the server's RFC 3339,
// UTC) over charts and lists in local time.
func TestUIAlertTimesInTheBrowsersZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "storm")
	for range 120 {
		_, err := q.Add(ctx, "deliver", nil, &drover.JobOptions{Delay: 3 * time.Minute})
		require.NoError(t, err)
	}
	tab := browser(t)
	_, err := chromedp.Call(tab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/Los_Angeles"})
	require.NoError(t, err)
	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`#alerts [data-alert="clustering"]`)))
	// The instant the server wrote, read as Los Angeles' clock.
	msg, err := chromedp.Run(step(t, tab), chromedp.Evaluate[string](`fetch('api/overview').then((r) => r.json()).then((o) => o.alerts[0].message)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	iso := regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\S+`).FindString(msg)
	require.NotEmpty(t, iso, msg)
	at, err := time.Parse(time.RFC3339, iso)
	require.NoError(t, err)
	la, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	// The banner was drawn from an earlier answer than the one read here:
	// the instant may have moved by a second or two in between.
	shown := text(t, tab, `#alerts [data-alert="clustering"]`)
	found := false
	for d := -3 * time.Second; d <= 3*time.Second; d += time.Second {
		when := at.Add(d).In(la)
		want := when.Format("15:04:05")
		if when.Format("2006-01-02") != time.Now().In(la).Format("2006-01-02") {
			want = when.Format("2006-01-02 15:04:05")
		}
		found = found || strings.Contains(shown, "from "+want)
	}
	require.True(t, found, "%s: want the Los Angeles time of %s", shown, iso)
	require.NotContains(t, shown, iso)
}
