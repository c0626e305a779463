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

// TestUINarrowChartsReadable: on a phone's width (375px) the queue page's
// charts (throughput, the delayed set's due times and its size) draw their
// labels at the size they have on a desktop. The charts were drawn 900 and
// 640 units wide and shrunk to the panel, their 10px labels with them: 3-5
// pixels high on a phone, unreadable ("06:33:00", "now", "+5m").
func TestUINarrowChartsReadable(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "charts", func(context.Context, *drover.Job) (any, error) { return nil, nil }, nil)
	id := b.add(t, "charts", "done", nil, nil)
	b.waitState(t, "charts", id, drover.StateCompleted)
	b.add(t, "charts", "later", nil, &drover.JobOptions{Delay: time.Minute})

	tab := browser(t)
	do(t, tab, chromedp.EmulateViewport(375, 800))
	do(t, tab, chromedp.Navigate(b.url+"#/q/charts?state=completed"),
		chromedp.WaitVisible(chromedp.CSS(`#throughput-chart rect`)), chromedp.WaitVisible(chromedp.CSS(`#histogram`)))
	// The growth chart draws its line once the page has two sizes.
	testkit.WaitFor(t, 20*time.Second, "the growth chart drawn", func() bool {
		return evalJS[bool](t, tab, `!!document.querySelector('#growth-chart polyline')`)
	})
	// Each chart's smallest label as shown, in CSS pixels.
	smallest := evalJS[map[string]float64](t, tab, `Object.fromEntries(['throughput-chart', 'histogram', 'growth-chart'].map((id) => {
		const g = document.getElementById(id), k = g.getScreenCTM().a;
		return [id, Math.min(...[...g.querySelectorAll('text')].map((x) => k * Number(x.getAttribute('font-size'))))];
	}))`)
	require.Len(t, smallest, 3)
	for chart, px := range smallest {
		require.GreaterOrEqual(t, px, 9.5, "%s: labels %.1fpx high on a phone", chart, px)
	}
	widths := evalJS[[]int](t, tab, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`)
	require.LessOrEqual(t, widths[0], widths[1], "the page is wider than the window")
}
