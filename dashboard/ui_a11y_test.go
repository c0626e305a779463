package dashboard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// unlabelled lists the page's form fields that have no accessible name
// (no <label>, aria-label or aria-labelledby): a screen reader reads them
// as "edit text" only. A placeholder is not a label.
const unlabelled = `[...document.querySelectorAll('input, select, textarea')]
	.filter((n) => !(n.labels && n.labels.length) && !n.getAttribute('aria-label') && !n.getAttribute('aria-labelledby'))
	.map((n) => n.name || n.id || n.type)`

// TestUIKeyboardAndLabels: an operator who works with the keyboard opens a
// dialog with Enter, Tab stays inside it, Escape closes it and the focus
// goes back to the button that opened it; every form field has a name a
// screen reader reads; the state tab shown is marked current, not by its
// colour only. The filter boxes, the sign-in fields and the cancel reason
// had placeholders only, Tab left the dialog for the page behind it, and
// after Escape the focus was lost (on <body>).
func TestUIKeyboardAndLabels(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "kb", func(context.Context, *drover.Job) (any, error) { return nil, errors.New("nope") }, nil)
	id := b.add(t, "kb", "x", nil, nil)
	b.waitState(t, "kb", id, drover.StateFailed)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/kb?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#failure-groups [data-retry-group]`)))
	require.Empty(t, evalJS[[]string](t, tab, unlabelled), "queue page")
	require.Equal(t, "failed", evalJS[string](t, tab, `document.querySelector('.tabs [aria-current="page"]').firstChild.textContent`))

	// The failure group shown is said in words; its chip's × says what it does.
	do(t, tab, chromedp.Click(chromedp.CSS(`#failure-groups [data-show]`)), chromedp.WaitVisible(chromedp.CSS(`#error-filter`)),
		chromedp.WaitVisible(chromedp.CSS(`#failure-groups tr[aria-current="true"]`)))
	require.Equal(t, "Shown above", text(t, tab, `#failure-groups tr[aria-current="true"] [data-show]`))
	require.Equal(t, "remove the error filter", evalJS[string](t, tab, `document.querySelector('#error-filter a').getAttribute('aria-label')`))

	// Keyboard only: focus the button, Enter opens the dialog on Cancel.
	do(t, tab, chromedp.Focus(chromedp.Search(`//button[text()="Obliterate…"]`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	focused := `document.activeElement.dataset.confirm || document.activeElement.tagName`
	require.Equal(t, "no", evalJS[string](t, tab, focused))
	for _, want := range []string{"yes", "no", "yes"} {
		do(t, tab, chromedp.KeyEvent(kb.Tab))
		require.Equal(t, want, evalJS[string](t, tab, focused), "Tab cycles inside the dialog")
	}
	// Shift held (kb.Shift+kb.Tab types a Shift, then a plain Tab).
	do(t, tab, chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	require.Equal(t, "no", evalJS[string](t, tab, focused), "Shift+Tab too")
	do(t, tab, chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	require.Equal(t, "yes", evalJS[string](t, tab, focused), "Shift+Tab from the first goes round to the last")
	require.Equal(t, "Obliterate queue", evalJS[string](t, tab, `document.getElementById(document.querySelector('.modal').getAttribute('aria-labelledby')).textContent`))
	do(t, tab, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	require.Equal(t, "Obliterate…", evalJS[string](t, tab, `document.activeElement.textContent`), "the focus is back on the button")

	// The dialogs with fields: limits (labelled before) and the sign-in form.
	do(t, tab, chromedp.Click(chromedp.CSS(`#limits-button`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Empty(t, evalJS[[]string](t, tab, unlabelled), "limits dialog")
	do(t, tab, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	signIn := setup(t, &dashboard.Options{Auth: testUsers()})
	do(t, tab, chromedp.Navigate(signIn.url), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	require.Empty(t, evalJS[[]string](t, tab, unlabelled), "sign-in form")
}

// TestUIEnterInADialogFieldConfirms: an admin types a number in the Limits
// dialog and presses Enter, as in any form: the limits are applied. Enter
// in a field did nothing (the dialog stayed open, nothing applied); only
// the button applied them. A destructive dialog's field (a cancel reason)
// still waits for its button.
func TestUIEnterInADialogFieldConfirms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "mail")
	id := b.add(t, "mail", "x", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail"), chromedp.WaitVisible(chromedp.CSS(`#limits-button`)),
		chromedp.Click(chromedp.CSS(`#limits-button`)), chromedp.WaitVisible(chromedp.CSS(`#limit-concurrency`)),
		chromedp.SendKeys(chromedp.CSS(`#limit-concurrency`), "4"), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitNotPresent(chromedp.CSS(`.modal`)), chromedp.WaitVisible(chromedp.CSS(`h1 [data-limit="concurrency"]`)))
	n, set, err := q.GetGlobalConcurrency(ctx)
	require.NoError(t, err)
	require.True(t, set)
	require.Equal(t, 4, n)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#cancel-job`)),
		chromedp.Click(chromedp.CSS(`#cancel-job`)), chromedp.WaitVisible(chromedp.CSS(`#cancel-reason`)),
		chromedp.SendKeys(chromedp.CSS(`#cancel-reason`), "typo"), chromedp.KeyEvent(kb.Enter))
	time.Sleep(300 * time.Millisecond)
	require.True(t, evalJS[bool](t, tab, `!!document.querySelector('.modal')`), "Enter in a destructive dialog's field cancelled the job")
	st, err := q.GetJobState(ctx, id)
	require.NoError(t, err)
	require.Equal(t, drover.StateDelayed, st)
}

// TestUIFocusStaysOnTheJobPageAfterAnAction: a keyboard user runs a
// delayed job now (Enter on the button, Enter in the dialog); the job
// moves to waiting and its buttons change, the one confirmed with them.
// The focus goes to the page's heading, which says the new state: it fell
// to the page's body, and the next Tab started again at the top of the
// page.
func TestUIFocusStaysOnTheJobPageAfterAnAction(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "x", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-actions`)),
		chromedp.Focus(chromedp.Search(`//button[text()="Run now (keep attempts)"]`)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`.modal`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)),
		chromedp.WaitVisible(chromedp.CSS(`h1 [data-retry-state="waiting"]`)))
	testkit.WaitFor(t, 10*time.Second, "the focus on the heading", func() bool {
		return evalJS[string](t, tab, `document.activeElement.tagName`) == "H1"
	})
	require.Contains(t, evalJS[string](t, tab, `document.activeElement.textContent`), "Job "+id)
}

// TestUIDialogTabSkipsHiddenFields: Tab and Shift+Tab go round a dialog's
// fields that show, past one that is hidden (a field a dialog keeps for a
// choice not made, hidden by its attribute, display or visibility). The
// loop took a hidden field as its first or last stop, which the browser
// skips: Tab from the last button left the dialog.
func TestUIDialogTabSkipsHiddenFields(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "kb", "x", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	focused := `(() => { const a = document.activeElement; return a.closest('.modal') ? (a.id || a.dataset.confirm) : 'outside: ' + a.tagName; })()`
	do(t, tab, chromedp.Navigate(b.url+"#/q/kb/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#cancel-job`)),
		chromedp.Click(chromedp.CSS(`#cancel-job`)), chromedp.WaitVisible(chromedp.CSS(`.modal #cancel-reason`)))
	// Hidden fields before the first stop and after the last, three ways.
	evalJS[bool](t, tab, `(() => {
		const m = document.querySelector('.modal');
		const hidden = (how) => { const i = document.createElement('input'); i.className = 'hidden-field';
			if (how === 'attr') i.hidden = true; else if (how === 'display') i.style.display = 'none'; else i.style.visibility = 'hidden'; return i; };
		m.querySelector('.modal-body').prepend(hidden('attr'), hidden('visibility'));
		m.querySelector('.buttons').append(hidden('display'), hidden('visibility'));
		return true; })()`)
	do(t, tab, chromedp.Focus(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.KeyEvent(kb.Tab))
	require.Equal(t, "cancel-reason", evalJS[string](t, tab, focused), "Tab from the last button")
	do(t, tab, chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	require.Equal(t, "yes", evalJS[string](t, tab, focused), "Shift+Tab from the first field")
}
