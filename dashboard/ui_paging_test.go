package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIPagesBackAndForth: a filtered list of failed jobs has Next and
// Previous pages, and jobs that fail or are retried while the operator
// reads move no job out of view and show none twice on a page turn; the
// page says the list moved. The list had "Next page" and "First page" only,
// and its offsets skipped or repeated jobs as the set changed.
func TestUIPagesBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	k := b.prefix + ":pg:"
	fail := func(n int) {
		t.Helper()
		id := fmt.Sprintf("f%02d", n)
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", []string{"a", "b"}[n%2], "data", "{}", "opts", `{"attempts":1}`,
			"timestamp", 1000+n, "atm", 1, "ats", 1, "failedReason", "boom", "finishedOn", 2000+n).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redis.Z{Score: float64(2000 + n), Member: id}).Err())
	}
	for n := range 60 {
		fail(n)
	}
	evens := func(from, to int, skip ...int) []string {
		var out []string
		for n := from; n >= to; n -= 2 {
			if n != append(skip, -1)[0] {
				out = append(out, fmt.Sprintf("f%02d", n))
			}
		}
		return out
	}
	tab := browser(t)
	con := watchConsole(t, tab)
	rows := func() []string {
		t.Helper()
		ids, err := chromedp.Run(step(t, tab), chromedp.Evaluate[[]string](`[...document.querySelectorAll('#jobs tr[data-job]')].map((r) => r.dataset.job)`))
		require.NoError(t, err)
		return ids
	}
	// Page 1 of the 30 jobs named a: f58 down to f10.
	do(t, tab, chromedp.Navigate(b.url+"#/q/pg?state=failed&name=a"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f10"]`)))
	require.Equal(t, evens(58, 10), rows())
	require.Equal(t, "", text(t, tab, `#prev-page`), "no page before the first")
	do(t, tab, chromedp.Click(chromedp.CSS(`#next-page`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f00"]`)))
	require.Equal(t, evens(8, 0), rows())
	require.Equal(t, "", text(t, tab, `#next-page`), "no page after the last")
	// While page 2 is shown, f56 (on page 1) is retried away and f60 and
	// f62 fail. Previous shows the 25 jobs right before f08's page: f60
	// down to f10, without f56; First page then starts at f62.
	require.NoError(t, b.rdb.ZRem(ctx, k+"failed", "f56").Err())
	fail(60)
	fail(62)
	do(t, tab, chromedp.Click(chromedp.CSS(`#prev-page`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f60"]`)))
	require.Equal(t, evens(60, 10, 56), rows())
	require.Contains(t, text(t, tab, `#page-moved`), "The failed list changed since the last page: job f09 is now at position 52 (it was at 51).")
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#prev-page`)), chromedp.Click(chromedp.CSS(`#next-page`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f00"]`)))
	require.Equal(t, evens(8, 0), rows(), "Next from there: page 2 again, nothing twice")
	do(t, tab, chromedp.Click(chromedp.CSS(`#prev-page`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f60"]`)),
		chromedp.Click(chromedp.CSS(`#first-page`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f62"]`)))
	require.Equal(t, evens(62, 12, 56), rows())
	require.Equal(t, "", text(t, tab, `#page-moved`))
	// The browser's back button goes back through the page turns.
	do(t, tab, chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f60"]`)))
	// Every job after page 1 leaves before Next is pressed: the empty page
	// offers the first page, not a Previous page it cannot find.
	do(t, tab, chromedp.Click(chromedp.CSS(`#first-page`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="f62"]`)))
	var after []string
	for n := range 12 {
		after = append(after, fmt.Sprintf("f%02d", n))
	}
	require.NoError(t, b.rdb.ZRem(ctx, k+"failed", after).Err())
	do(t, tab, chromedp.Click(chromedp.CSS(`#next-page`)), chromedp.WaitVisible(chromedp.CSS(`#first-page`)))
	require.Equal(t, "No jobs here.", text(t, tab, `#jobs tbody`))
	require.Equal(t, "", text(t, tab, `#prev-page`))
	require.Empty(t, con.all())
}

// TestUIPagesAListWhoseEdgeJobLeft: the last job of a page of waiting
// jobs is taken, and new jobs arrive on top, before Next is pressed. The
// next page shows the jobs that came after it, none twice, and says so;
// the page said jobs "may be skipped or shown twice" and showed three
// again.
func TestUIPagesAListWhoseEdgeJobLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	var ids []string // oldest first
	for n := range 30 {
		ids = append(ids, b.add(t, "w", fmt.Sprintf("n%02d", n), nil, nil))
	}
	tab := browser(t)
	con := watchConsole(t, tab)
	rows := func() []string {
		t.Helper()
		got, err := chromedp.Run(step(t, tab), chromedp.Evaluate[[]string](`[...document.querySelectorAll('#jobs tr[data-job]')].map((r) => r.dataset.job)`))
		require.NoError(t, err)
		return got
	}
	// Page 1: the newest 25, ids[29] down to ids[5].
	do(t, tab, chromedp.Navigate(b.url+"#/q/w?state=waiting"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+ids[5]+`"]`)))
	require.Len(t, rows(), 25)
	require.NoError(t, b.rdb.LRem(ctx, b.prefix+":w:wait", 1, ids[5]).Err())
	for n := 30; n < 33; n++ {
		b.add(t, "w", fmt.Sprintf("n%02d", n), nil, nil)
	}
	do(t, tab, chromedp.Click(chromedp.CSS(`#next-page`)), chromedp.WaitVisible(chromedp.CSS(`#page-moved`)))
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, rows())
	require.Equal(t, fmt.Sprintf("Job %s, at the edge of the last page, has left the waiting list. This page goes on right after the jobs that were next to it, so no job is skipped or shown twice.", ids[5]),
		text(t, tab, `#page-moved`))
	require.Empty(t, con.errors())
}

// TestUIPagePastTheEndSaysSo: a list page that starts past the last job
// (a bookmarked "Last page" after a clean, an edited link) says so and
// links to the first page. It said "No jobs here." under "3 completed
// jobs.", as if the 3 were gone.
func TestUIPagePastTheEndSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "mail", func(context.Context, *drover.Job) (any, error) { return nil, nil }, nil)
	var last string
	for range 3 {
		last = b.add(t, "mail", "send", nil, nil)
	}
	b.waitState(t, "mail", last, drover.StateCompleted)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail?state=completed&offset=25"), chromedp.WaitVisible(chromedp.CSS(`#no-jobs`)))
	require.Equal(t, "This page starts at job 26, past the last of the 3 completed jobs. First page", text(t, tab, `#no-jobs`))
	do(t, tab, chromedp.Click(chromedp.Search(`//td[@id="no-jobs"]/a[text()="First page"]`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+last+`"]`)))
}

// TestUIBadListLinkKeepsThePage: a queue link whose list the API refuses
// (an unknown state, a negative offset: an edited or cut link) says why
// and still draws the queue's tabs, actions and panels, so a click leads
// on. It showed "Could not load" over empty panels, and no tab.
func TestUIBadListLinkKeepsThePage(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "send", nil, nil)
	tab := browser(t)
	for _, l := range []struct{ link, why string }{{"#/q/mail?state=bogus", `unknown job state "bogus"`}, {"#/q/mail?state=waiting&offset=-5", "offset"}} {
		// The link before drew the same tabs: wait for this link's words.
		do(t, tab, chromedp.Navigate(b.url+l.link))
		testkit.WaitFor(t, 20*time.Second, l.link+" to say it makes no list", func() bool {
			main := text(t, tab, `main`)
			return strings.Contains(main, "This link does not make a list: ") && strings.Contains(main, l.why)
		})
		do(t, tab, chromedp.WaitVisible(chromedp.CSS(`.tabs a[href$="state=waiting"]`)))
		require.Contains(t, text(t, tab, `#limits-button`), "Limits", l.link)
	}
	do(t, tab, chromedp.Click(chromedp.CSS(`.tabs a[href$="state=waiting"]`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+id+`"]`)))
}

// TestUIOneJobIsOneJob: with one job, the page past the end and the clean
// toast say "job", not "jobs" ("the last of the 1 completed jobs",
// "Removed 1 jobs.").
func TestUIOneJobIsOneJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "mail", func(context.Context, *drover.Job) (any, error) { return nil, nil }, nil)
	id := b.add(t, "mail", "send", nil, nil)
	b.waitState(t, "mail", id, drover.StateCompleted)
	// Finished two hours ago, so "Clean completed…" (older than an hour) takes it.
	old := float64(time.Now().Add(-2 * time.Hour).UnixMilli())
	require.NoError(t, b.rdb.ZAdd(ctx, b.prefix+":mail:completed", redis.Z{Score: old, Member: id}).Err())
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":mail:"+id, "finishedOn", int64(old)).Err())
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail?state=completed&offset=25"), chromedp.WaitVisible(chromedp.CSS(`#no-jobs`)))
	require.Equal(t, "This page starts at job 26, past the last of the 1 completed job. First page", text(t, tab, `#no-jobs`))
	do(t, tab, chromedp.Click(chromedp.Search(`//button[text()="Clean completed…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast`)))
	require.Equal(t, "Removed 1 job.", text(t, tab, `.toast`))
}
