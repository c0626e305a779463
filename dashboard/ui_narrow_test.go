package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUINarrowWidth: on a phone's width (375px) no page is wider than the
// window, and the signed-in user shows on the header bar. The header and
// the tables of the overview, a queue's failed list and its failure groups
// pushed the page to 611-914px: the page scrolled sideways, and the user
// name ran off the dark header, light grey on the light page.
func TestUINarrowWidth(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "narrow", func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("upstream answered 503 Service Unavailable for " + strings.Repeat("/segment", 12))
	}, nil)
	id := b.add(t, "narrow", "deliver-webhook-to-customer-endpoint", map[string]string{"url": "https://example.com/hook"}, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "narrow", id, drover.StateFailed)

	tab := browser(t)
	do(t, tab, chromedp.EmulateViewport(375, 800))
	for _, page := range []struct{ hash, ready string }{
		{"#/", `tr[data-queue="narrow"]`},
		{"#/q/narrow?state=failed", `#failure-groups tr[data-group]`},
		{"#/q/narrow/job/" + id, `#job-data`},
		{"#/workers", `#workers`},
	} {
		do(t, tab, chromedp.Navigate(b.url+page.hash), chromedp.WaitVisible(chromedp.CSS(page.ready)))
		widths, err := chromedp.Run(step(t, tab), chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
		require.NoError(t, err)
		require.LessOrEqual(t, widths[0], widths[1], "%s: the page is wider than the window", page.hash)
		inBar, err := chromedp.Run(step(t, tab), chromedp.Evaluate[bool](`(() => {
			const who = document.getElementById('whoami').getBoundingClientRect(), bar = document.querySelector('header.top').getBoundingClientRect();
			return who.left >= bar.left && who.right <= bar.right && who.top >= bar.top && who.bottom <= bar.bottom && who.right <= window.innerWidth;
		})()`))
		require.NoError(t, err)
		require.True(t, inBar, "%s: the user name is off the header bar", page.hash)
	}
}

// TestUINarrowTimesKeepToOneLine: on a phone's width the audit log's
// times, users, actions and addresses and a job list's times keep to one line (the
// table scrolls inside its panel). The columns shrank to a few letters:
// "05:04:44" read "05:04" over ":44", and "ada (admin)" "ada (ad" over
// "min)".
func TestUINarrowTimesKeepToOneLine(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "narrow", func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("upstream answered 503 Service Unavailable")
	}, nil)
	id := b.add(t, "narrow", "deliver-webhook-to-customer-endpoint", nil, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "narrow", id, drover.StateFailed)
	require.Equal(t, http.StatusOK, b.as(t, "").post("api/queues/narrow/pause", nil, nil))

	tab := browser(t)
	do(t, tab, chromedp.EmulateViewport(375, 800))
	// lines counts the line boxes of a cell's text.
	lines := func(sel string) int {
		t.Helper()
		return int(evalJS[float64](t, tab, `(() => { const r = document.createRange(); r.selectNodeContents(document.querySelector(`+jsString(sel)+`));
			return new Set([...r.getClientRects()].map((c) => Math.round(c.top))).size; })()`))
	}
	do(t, tab, chromedp.Navigate(b.url+"#/audit"), chromedp.WaitVisible(chromedp.CSS(`#audit tbody tr:not([data-loading]) td`)))
	// When, Who, Action, and From (the client's address: "127.0.0." over
	// "1:58712", at 1280px too).
	for _, n := range []int{1, 2, 3, 9} {
		cell := fmt.Sprintf(`#audit tbody tr:first-child td:nth-child(%d)`, n)
		require.Equal(t, 1, lines(cell), "%q on one line", text(t, tab, cell))
	}
	do(t, tab, chromedp.Navigate(b.url+"#/q/narrow?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	cell := `#jobs tr[data-job] td:nth-child(5)`
	require.Equal(t, 1, lines(cell), "%q on one line", text(t, tab, cell))
}
