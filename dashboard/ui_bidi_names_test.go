package dashboard_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIBidiNamesShowEscaped: a job whose id and name hold a right-to-left
// override (U+202E), and a job scheduler whose id holds one, show it as
// the escape \u202e, as `drover job` prints it, in the job page's heading,
// its breadcrumb, the queue's list row and the schedulers' row, and those
// read left to right. The override was laid out: "\u202ename" was drawn
// "eman" in each. Only the display is escaped: the row's key, its link,
// the find box and the scheduler's remove button use the real id.
func TestUIBidiNamesShowEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	const id, name, sched = "\u202ejobid", "\u202ename", "\u202etick"
	q := b.queue(t, "bidi")
	ctx := context.Background()
	_, err := q.Add(ctx, name, nil, &drover.JobOptions{JobID: id, Delay: time.Hour})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, sched, drover.RepeatOptions{Every: time.Hour}, &drover.JobTemplate{Name: name})
	require.NoError(t, err)
	enc := url.PathEscape(id)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/bidi/job/"+enc), chromedp.WaitVisible(chromedp.CSS(`[data-part="facts"] button`)))
	h1 := text(t, tab, `h1`)
	require.Contains(t, h1, `Job \u202ejobid`, "the heading shows the id's escape")
	require.Contains(t, h1, `\u202ename`, "the heading shows the name's escape")
	require.NotContains(t, h1, "\u202e", "the heading holds no override")
	require.Positive(t, wordDirection(t, tab, `h1`, "name"), "the heading's name reads left to right")
	require.Positive(t, wordDirection(t, tab, `h1`, "jobid"), "the heading's id reads left to right")
	crumbs := text(t, tab, `.crumbs`)
	require.Contains(t, crumbs, `job \u202ejobid`, "the breadcrumb shows the id's escape")
	require.Positive(t, wordDirection(t, tab, `.crumbs`, "jobid"), "the breadcrumb reads left to right")
	require.NotContains(t, evalJS[string](t, tab, `document.title`), "\u202e", "the title holds no override")

	do(t, tab, chromedp.Navigate(b.url+"#/q/bidi?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`tr[data-job]`)))
	row := evalJS[map[string]string](t, tab, `(() => { const r = document.querySelector('tr[data-job]'); return {key: r.dataset.job, href: r.querySelector('a').getAttribute('href'), text: r.textContent}; })()`)
	require.Equal(t, id, row["key"], "the row's key is the real id")
	require.Equal(t, "#/q/bidi/job/"+enc, row["href"], "the row links the real id")
	require.Contains(t, row["text"], `\u202ejobid`)
	require.Contains(t, row["text"], `\u202ename`)
	require.NotContains(t, row["text"], "\u202e", "the row holds no override")
	require.Positive(t, wordDirection(t, tab, `tr[data-job]`, "name"), "the row's name reads left to right")

	do(t, tab, chromedp.Navigate(b.url+"#/q/bidi/schedulers"), chromedp.WaitVisible(chromedp.CSS(`tr[data-scheduler]`)))
	require.Equal(t, sched, evalJS[string](t, tab, `document.querySelector('tr[data-scheduler]').dataset.scheduler`), "the scheduler row's key is the real id")
	require.Contains(t, text(t, tab, `tr[data-scheduler]`), `\u202etick`)
	require.Positive(t, wordDirection(t, tab, `tr[data-scheduler]`, "tick"), "the scheduler id reads left to right")

	// The find box searches the real id and lands on its page.
	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`#job-search input`)))
	evalJS[bool](t, tab, `(() => { document.querySelector('#job-search input').value = `+jsString(id)+`; document.querySelector('#job-search').requestSubmit(); return true; })()`)
	testkit.WaitFor(t, 30*time.Second, "the find box's landing on the job", func() bool {
		return strings.HasPrefix(evalJS[string](t, tab, `decodeURIComponent(location.hash)`), "#/q/bidi/job/"+id)
	})
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`[data-part="facts"] button`)))
	require.Contains(t, text(t, tab, `h1`), `Job \u202ejobid`)
}
