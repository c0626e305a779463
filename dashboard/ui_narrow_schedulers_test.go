package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUINarrowSchedulersKeepToOneLine: on a phone's width (375px) the job
// schedulers' ids, repeats, time zones and next runs keep to one line each
// (the table scrolls inside its panel), and Remove says it asks first
// ("Remove…", as every button that opens a dialog). The columns shrank to
// a few letters: "every-10s" read "ev / er / y- / 10 / s", "Europe/Berlin"
// "Euro / pe/B / erlin" and the next run "2026 / -12- / 08 / 02:0 / 0:00".
func TestUINarrowSchedulersKeepToOneLine(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "sched")
	ctx := context.Background()
	_, err := q.UpsertJobScheduler(ctx, "every-10s", drover.RepeatOptions{Every: 10 * time.Second}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "cron-nightly", drover.RepeatOptions{Pattern: "0 3 * * *", TZ: "Europe/Berlin"}, &drover.JobTemplate{Name: "nightly"})
	require.NoError(t, err)

	tab := browser(t)
	do(t, tab, chromedp.EmulateViewport(375, 800))
	do(t, tab, chromedp.Navigate(b.url+"#/q/sched/schedulers"), chromedp.WaitVisible(chromedp.CSS(`[data-remove="cron-nightly"]`)))
	// The line boxes of the first text in each cell of a row (a cell's
	// second line, a div, is another matter).
	lines := evalJS[map[string]float64](t, tab, `(() => {
		const row = document.querySelector('tr[data-scheduler="cron-nightly"]'), out = {};
		['id', 'repeats', 'zone', 'next'].forEach((k, i) => {
			const r = document.createRange(); r.selectNodeContents(row.cells[i].firstChild);
			out[k] = new Set([...r.getClientRects()].map((c) => Math.round(c.top))).size;
		});
		return out;
	})()`)
	require.Equal(t, map[string]float64{"id": 1, "repeats": 1, "zone": 1, "next": 1}, lines)
	require.Equal(t, "Remove…", text(t, tab, `[data-remove="cron-nightly"]`))
	widths := evalJS[[]int](t, tab, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`)
	require.LessOrEqual(t, widths[0], widths[1], "the page is wider than the window")
}
