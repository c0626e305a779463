package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// focusMarked focuses the element sel names, as a keyboard user tabbing to
// it does, and marks it, so stillFocused can tell whether the page's
// refresh kept it.
func focusMarked(t *testing.T, tab context.Context, sel string) {
	t.Helper()
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Focus(chromedp.CSS(sel)))
	require.True(t, evalJS[bool](t, tab, `(document.activeElement.focusKept = true, true)`))
}

// stillFocused says whether the element focusMarked focused is still in
// the page and still has the focus.
func stillFocused(t *testing.T, tab context.Context) bool {
	t.Helper()
	return evalJS[bool](t, tab, `(() => { const a = document.activeElement; return !!a && a.isConnected && a.focusKept === true; })()`)
}

// TestUIRefreshKeepsFocus: the pages that redraw themselves (the overview
// every 5 s, a queue page every 10 s and after each live event, the job
// schedulers, stalled and workers pages every few seconds) keep the links
// and buttons that stay, with the keyboard focus on them, when what they
// show changes. They replaced every row: a keyboard user tabbing down the
// queues or a busy queue's jobs was sent back to the top of the page at
// each refresh (on the demo's queue, several times a second), and a click
// pressed as its row was replaced did nothing.
func TestUIRefreshKeepsFocus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	first := b.add(t, "fa", "one", nil, nil)
	b.add(t, "fb", "one", nil, nil)

	t.Run("overview", func(t *testing.T) {
		tab := browser(t)
		do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="fb"]`)))
		focusMarked(t, tab, `tr[data-queue="fa"] a`)
		b.add(t, "fa", "two", nil, nil)
		testkit.WaitFor(t, 30*time.Second, "the overview to count the new job", func() bool {
			return text(t, tab, `tr[data-queue="fa"] td[data-state="waiting"]`) == "2"
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused queue link away")
	})

	t.Run("queue page", func(t *testing.T) {
		tab := browser(t)
		do(t, tab, chromedp.Navigate(b.url+"#/q/fa?state=waiting"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+first+`"]`)))
		focusMarked(t, tab, `#jobs tr[data-job="`+first+`"] a`)
		// The live event of a new job refreshes the list: a row comes in
		// above the focused one.
		added := b.add(t, "fa", "three", nil, nil)
		testkit.WaitFor(t, 30*time.Second, "the list to show the new job", func() bool {
			return evalJS[bool](t, tab, `!!document.querySelector('#jobs tr[data-job="`+added+`"]')`)
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused job link away")

		// A state tab and an action button stay too; the kept Pause button,
		// relabelled when the queue is paused elsewhere, resumes it.
		focusMarked(t, tab, `#pause-queue`)
		require.NoError(t, b.queue(t, "fa").Pause(ctx))
		testkit.WaitFor(t, 30*time.Second, "the button to offer Resume", func() bool {
			return text(t, tab, `#pause-queue`) == "Resume…"
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused Pause button away")
		do(t, tab, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)))
		require.Equal(t, "Resume queue", text(t, tab, `.modal h2`))
		do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)))
		testkit.WaitFor(t, 20*time.Second, "the queue to be resumed", func() bool {
			paused, err := b.queue(t, "fa").IsPaused(ctx)
			require.NoError(t, err)
			return !paused
		})

		focusMarked(t, tab, `.tabs a[href$="state=completed"]`)
		b.add(t, "fa", "four", nil, nil)
		testkit.WaitFor(t, 30*time.Second, "the waiting tab to count the new job", func() bool {
			return text(t, tab, `.tabs a[href$="state=waiting"] .count`) == "4"
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused state tab away")
	})

	t.Run("schedulers", func(t *testing.T) {
		q := b.queue(t, "fc")
		_, err := q.UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, &drover.JobTemplate{Name: "tick"})
		require.NoError(t, err)
		tab := browser(t)
		do(t, tab, chromedp.Navigate(b.url+"#/q/fc/schedulers"), chromedp.WaitVisible(chromedp.CSS(`[data-remove="hourly"]`)))
		focusMarked(t, tab, `[data-remove="hourly"]`)
		_, err = q.UpsertJobScheduler(ctx, "daily", drover.RepeatOptions{Every: 24 * time.Hour}, &drover.JobTemplate{Name: "tock"})
		require.NoError(t, err)
		testkit.WaitFor(t, 30*time.Second, "the page to list the new scheduler", func() bool {
			return evalJS[bool](t, tab, `!!document.querySelector('[data-remove="daily"]')`)
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused Remove button away")
		// The kept button removes its own scheduler.
		do(t, tab, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)))
		require.Contains(t, text(t, tab, `.modal p`), "Remove job scheduler hourly of fc?")
		do(t, tab, chromedp.KeyEvent(kb.Escape))
	})

	t.Run("stalled and workers", func(t *testing.T) {
		id, _ := b.holdJob(t, "fd", &drover.WorkerOptions{Name: "busy"})
		tab := browser(t)
		// The lock's TTL changes at every refresh (3 s).
		do(t, tab, chromedp.Navigate(b.url+"#/q/fd/stalled"), chromedp.WaitVisible(chromedp.CSS(`#active-locks a[href$="/job/`+id+`"]`)))
		focusMarked(t, tab, `#active-locks a[href$="/job/`+id+`"]`)
		ttl := text(t, tab, `#active-locks tbody`)
		testkit.WaitFor(t, 30*time.Second, "the stalled page to refresh", func() bool {
			return text(t, tab, `#active-locks tbody`) != ttl
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused job link away")

		// The connection's idle time changes at every refresh (5 s).
		do(t, tab, chromedp.Navigate(b.url+"#/workers"), chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-queue="fd"] a`)))
		focusMarked(t, tab, `#workers tr[data-queue="fd"] a`)
		row := text(t, tab, `#workers tbody`)
		testkit.WaitFor(t, 30*time.Second, "the workers page to refresh", func() bool {
			return text(t, tab, `#workers tbody`) != row
		})
		require.True(t, stillFocused(t, tab), "the refresh took the focused queue link away")
	})
}

// TestUIRefreshThatTakesTheFocusedRowAway: a keyboard user is on a job's
// link in a queue's delayed list when the job is promoted elsewhere: the
// refresh takes its row out, and the focus goes to the page's heading,
// not to the body, where the next Tab began again at the header.
func TestUIRefreshThatTakesTheFocusedRowAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: 2 * time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+id+`"]`)))
	focusMarked(t, tab, `#jobs tr[data-job="`+id+`"] a`)
	job, err := b.queue(t, "mail").GetJob(ctx, id)
	require.NoError(t, err)
	require.NoError(t, job.Promote(ctx))
	testkit.WaitFor(t, 30*time.Second, "the promoted job's row to go", func() bool {
		return countOf(t, tab, `#jobs tr[data-job="`+id+`"]`) == 0
	})
	testkit.WaitFor(t, 5*time.Second, "the focus on the heading", func() bool {
		return evalJS[string](t, tab, `document.activeElement.tagName`) == "H1"
	})
}
