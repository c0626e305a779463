package dashboard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIJobRefreshKeepsItsButtons: the job page's refresh (every 10 s,
// and after the job's live events) keeps its action buttons when they did
// not change. It replaced the whole page, and a button replaced between
// press and release takes no click: a Retry or Remove clicked at that
// moment did nothing.
func TestUIJobRefreshKeepsItsButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "jk", func(_ context.Context, _ *drover.Job) (any, error) { return nil, errors.New("no") }, nil)
	id := b.add(t, "jk", "once", nil, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "jk", id, drover.StateFailed)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/jk/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-actions button.primary`)))
	evalJS[bool](t, tab, `(window.kept = { buttons: [...document.querySelectorAll('#job-actions button')] }, true)`)
	require.Equal(t, 3, evalJS[int](t, tab, `window.kept.buttons.length`), "Retry with fresh attempts, Retry, Remove")
	watchJobLoads(t, tab)
	testkit.WaitFor(t, 30*time.Second, "the job page to refresh", func() bool {
		return evalJS[int](t, tab, `window.jobLoads`) >= 1
	})
	time.Sleep(300 * time.Millisecond) // the redraw follows the load
	require.True(t, evalJS[bool](t, tab, `window.kept.buttons.every((b) => b.isConnected)`), "the action buttons were replaced")
	// A kept button acts on the job as the page last drew it.
	do(t, tab, chromedp.Click(chromedp.CSS(`#job-actions button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal`), "Run job "+id+" now with its whole budget of 1 attempt back?")
}

// TestUIJobRefreshKeepsUnchangedParts: the job page's refresh (every 10 s,
// and after the job's live events) keeps the parts it would draw the same:
// the flow panel, the attempt timeline, the failed reason, the stack
// traces. It drew them anew each time, so text a user had selected in the
// failed reason was unselected, a stack trace they had opened closed, and
// the links and the timeline flickered. A part whose content changed is
// still drawn anew (the data panel after UpdateData).
func TestUIJobRefreshKeepsUnchangedParts(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	ctx := context.Background()
	tree := b.addFlow(t, drover.FlowJob{Name: "assemble", QueueName: "orders", Children: []drover.FlowJob{
		{Name: "wheel", QueueName: "parts", Data: map[string]any{"n": 1}, Opts: &drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: "fixed", Delay: 1}}},
	}})
	b.startWorker(t, "parts", func(_ context.Context, _ *drover.Job) (any, error) { return nil, errors.New("no wheel today") }, nil)
	child := tree.Children[0].Job.ID
	b.waitState(t, "parts", child, drover.StateFailed)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/parts/job/"+child), chromedp.WaitVisible(chromedp.CSS(`#flow-parent`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)), chromedp.WaitVisible(chromedp.CSS(`#failed-reason`)))
	// Select the failed reason's text, close the newest stack trace and
	// open the oldest, keep the nodes, and count the job's loads from here.
	watchJobLoads(t, tab)
	evalJS[bool](t, tab, `(() => {
		const reason = document.querySelector('#failed-reason');
		getSelection().selectAllChildren(reason);
		const traces = [...document.querySelectorAll('details')];
		traces[traces.length - 1].open = false;
		traces[0].open = true;
		window.kept = { flow: document.querySelector('#flow'), parent: document.querySelector('#flow-parent a'),
			timeline: document.querySelector('#timeline'), reason, traces, data: document.querySelector('#job-data') };
		return true;
	})()`)
	require.GreaterOrEqual(t, evalJS[int](t, tab, `window.kept.traces.length`), 2, "a stack trace per attempt")
	testkit.WaitFor(t, 30*time.Second, "the job page to refresh", func() bool {
		return evalJS[int](t, tab, `window.jobLoads`) >= 1
	})
	time.Sleep(300 * time.Millisecond) // the redraw follows the load
	for _, part := range []string{"flow", "parent", "timeline", "reason", "data"} {
		require.True(t, evalJS[bool](t, tab, `window.kept.`+part+`.isConnected`), "the refresh replaced the unchanged %s", part)
	}
	require.True(t, evalJS[bool](t, tab, `window.kept.traces.every((d) => d.isConnected)`), "the refresh replaced the stack traces")
	require.Equal(t, "no wheel today", evalJS[string](t, tab, `getSelection().toString().trim()`), "the selection was lost")
	require.Equal(t, []bool{true, false}, evalJS[[]bool](t, tab, `(() => { const t = window.kept.traces; return [t[0].open, t[t.length - 1].open]; })()`),
		"the stack traces' open state was lost")

	// A changed part is drawn anew: the data after UpdateData (no event
	// announces it; the next periodic load brings it).
	job, err := b.queue(t, "parts").GetJob(ctx, child)
	require.NoError(t, err)
	require.NoError(t, job.UpdateData(ctx, map[string]any{"n": 2}))
	testkit.WaitFor(t, 30*time.Second, "the new data on the page", func() bool {
		return evalJS[bool](t, tab, `document.querySelector('#job-data').textContent.includes('2')`)
	})
	require.False(t, evalJS[bool](t, tab, `window.kept.data.isConnected`), "the old data panel stayed")
	require.True(t, evalJS[bool](t, tab, `window.kept.timeline.isConnected`), "the unchanged timeline was replaced with the data")
}

// watchJobLoads counts in window.jobLoads the job page's loads of its job
// (the API's /jobs/ reads) that answered from now on: a test waits for one
// to know a refresh ran.
func watchJobLoads(t *testing.T, tab context.Context) {
	t.Helper()
	evalJS[bool](t, tab, `(() => {
		window.jobLoads = 0;
		const f = window.fetch;
		window.fetch = (...a) => f(...a).then((r) => { if (String(a[0]).includes('/jobs/')) window.jobLoads++; return r; });
		return true;
	})()`)
}

// TestUIJobRefreshUpdatesFlowInPlace: when a flow parent's children change
// (one completes), the job page's refresh updates the flow panel in the
// nodes already drawn: the counts change, the completed child's link goes,
// and the link to the child still pending stays the same node, with the
// keyboard focus a user gave it. The refresh drew the whole panel anew, so
// focus went back to the page's start and the panel flickered.
func TestUIJobRefreshUpdatesFlowInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	tree := b.addFlow(t, drover.FlowJob{Name: "assemble", QueueName: "orders", Children: []drover.FlowJob{
		{Name: "wheel", QueueName: "wheels"},
		{Name: "frame", QueueName: "frames"},
	}})
	parent := tree.Job.ID
	var frame string
	for _, c := range tree.Children {
		if c.Ref.Queue == "frames" {
			frame = c.Job.ID
		}
	}
	tab := browser(t)
	sel := `#flow-waiting a[data-ref="frames/` + frame + `"]`
	do(t, tab, chromedp.Navigate(b.url+"#/q/orders/job/"+parent), chromedp.WaitVisible(chromedp.CSS(sel)))
	require.Contains(t, text(t, tab, `#flow-children`), "2 pending, 0 completed")
	evalJS[bool](t, tab, `(() => {
		const a = document.querySelector('`+sel+`');
		a.focus();
		window.kept = { link: a, flow: document.querySelector('#flow') };
		return document.activeElement === a;
	})()`)
	b.startWorker(t, "wheels", func(_ context.Context, _ *drover.Job) (any, error) { return "ok", nil }, nil)
	testkit.WaitFor(t, 40*time.Second, "the completed child in the flow panel", func() bool {
		return evalJS[bool](t, tab, `(document.querySelector('#flow-children') || {}).textContent.includes('1 pending, 1 completed')`)
	})
	require.True(t, evalJS[bool](t, tab, `window.kept.flow.isConnected`), "the flow panel was drawn anew")
	require.True(t, evalJS[bool](t, tab, `window.kept.link.isConnected`), "the pending child's link was drawn anew")
	require.True(t, evalJS[bool](t, tab, `document.activeElement === window.kept.link`), "the focused link lost the focus")
	require.Equal(t, 1, evalJS[int](t, tab, `document.querySelectorAll('#flow-waiting a').length`), "the completed child's link stayed")
}

// TestUIJobRefreshUpdatesTimelineInPlace: an attempt that ends while the
// job page is open is added to the timeline the page already shows, in the
// same nodes (the scrolled box, the picture), as the flow panel's changes
// are.
func TestUIJobRefreshUpdatesTimelineInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	ctx := context.Background()
	b.startWorker(t, "tl", func(_ context.Context, _ *drover.Job) (any, error) { return nil, errors.New("declined") }, nil)
	// The "test" backoff: 10 ms after the first failure, an hour after the second.
	id := b.add(t, "tl", "pay", nil, &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "test"}})
	b.waitState(t, "tl", id, drover.StateDelayed)
	attempts := `[...document.querySelectorAll('#timeline [data-attempt]')].map((g) => g.dataset.attempt + ':' + g.dataset.outcome)`

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/tl/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	require.Equal(t, []string{"1:retry-delayed", "2:retry-delayed"}, evalJS[[]string](t, tab, attempts))
	evalJS[bool](t, tab, `(window.kept = { panel: document.querySelector('[data-part="timeline"]'),
		wrap: document.querySelector('#timeline-wrap'), pic: document.querySelector('#timeline') }, true)`)

	require.NoError(t, b.queue(t, "tl").Job(id).Promote(ctx))
	b.waitState(t, "tl", id, drover.StateFailed)
	testkit.WaitFor(t, 30*time.Second, "the third attempt on the page", func() bool {
		return len(evalJS[[]string](t, tab, attempts)) == 3
	})
	require.Equal(t, []string{"1:retry-delayed", "2:retry-delayed", "3:retries-exhausted"}, evalJS[[]string](t, tab, attempts))
	for _, part := range []string{"panel", "wrap", "pic"} {
		require.True(t, evalJS[bool](t, tab, `window.kept.`+part+`.isConnected`), "the timeline's %s was drawn anew", part)
	}
}
