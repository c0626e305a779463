package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIRetryWithFreshAttempts is acceptance 1: sign in, find the job that
// failed twice and waits for backoff, see its timeline and next run, retry it
// with fresh attempts, see it complete. It writes a screenshot of the job page.
func TestUIRetryWithFreshAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	var healthy atomic.Bool
	b.startWorker(t, "payments", func(ctx context.Context, job *drover.Job) (any, error) {
		_, _ = job.Log(ctx, fmt.Sprintf("calling the card processor (attempt %d)", job.AttemptsStarted))
		switch {
		case job.Name == "refund":
			return map[string]string{"refund": "done"}, nil
		case job.Name == "bad-card":
			return nil, drover.Unrecoverable(errors.New("card declined"))
		case !healthy.Load():
			return nil, fmt.Errorf("card processor timeout after 30s (attempt %d)", job.AttemptsStarted)
		}
		return map[string]string{"charge": "ok"}, nil
	}, &drover.WorkerOptions{Name: "worker-1"})
	b.add(t, "payments", "refund", map[string]int{"order": 41}, nil)
	b.add(t, "payments", "bad-card", map[string]int{"order": 42}, &drover.JobOptions{Attempts: 3})
	id := b.add(t, "payments", "charge", map[string]any{"order": 43, "amount": 1999}, testRetry)
	testkit.WaitFor(t, 20*time.Second, "two failures", func() bool {
		j, err := b.queue(t, "payments").GetJob(ctx, id)
		require.NoError(t, err)
		return j.AttemptsMade == 2
	})
	b.waitState(t, "payments", id, drover.StateDelayed)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url),
		// Sign in with the operator's token.
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		// Overview -> queue -> delayed tab -> the job.
		chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="payments"]`)),
		chromedp.Click(chromedp.CSS(`#queues a[href="#/q/payments"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.tabs a[href="#/q/payments?state=delayed"]`)),
		chromedp.Click(chromedp.CSS(`.tabs a[href="#/q/payments?state=delayed"]`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"] [data-retry-state="waiting-for-backoff"]`, id))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"] a`, id))),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)),
	)
	state := text(t, tab, `h1 [data-retry-state]`)
	require.Equal(t, "waiting for backoff", state)
	attempts := text(t, tab, `#attempts`)
	require.Equal(t, "2 of 3 used, 1 left", attempts)
	nextRun := text(t, tab, `#next-run`)
	detail, err := b.ins.Job(ctx, "payments", id)
	require.NoError(t, err)
	require.Equal(t, uiTime(detail.NextRun.Time, time.Now()), nextRun)
	require.WithinDuration(t, time.Now().Add(time.Hour), detail.NextRun.Time, time.Minute)
	rel := text(t, tab, `#next-run-rel`)
	require.True(t, strings.HasPrefix(rel, "in 59m") || strings.HasPrefix(rel, "in 1h"), rel)
	// The timeline: two failed attempts with their backoffs, then the next run.
	outcomes, err := chromedp.Run(step(t, tab), chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#timeline [data-attempt]')].map(g => g.dataset.attempt + ':' + g.dataset.outcome)`))
	require.NoError(t, err)
	require.Equal(t, []string{"1:retry-delayed", "2:retry-delayed"}, outcomes)
	svgText := text(t, tab, `#timeline`)
	require.Contains(t, svgText, "backoff 10ms")
	require.Contains(t, svgText, "card processor timeout")
	require.Contains(t, svgText, "next run")
	require.Contains(t, svgText, nextRun)
	screenshot(t, tab, "job-page-waiting-for-backoff.png")

	healthy.Store(true)
	do(t, tab,
		chromedp.Click(chromedp.Search(`//button[text()="Retry with fresh attempts"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		// Live updates refresh the page as the job runs and completes.
		chromedp.WaitVisible(chromedp.CSS(`h1 [data-retry-state="completed"]`)),
	)
	attempts = text(t, tab, `#attempts`)
	require.Equal(t, "1 of 3 used, 2 left", attempts)
	outcomes, err = chromedp.Run(step(t, tab), chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#timeline [data-attempt]')].map(g => g.dataset.attempt + ':' + g.dataset.outcome)`))
	require.NoError(t, err)
	// Fresh attempts reset attemptsStarted too: the new run is #1 again,
	// after the boundary the retry left.
	require.Equal(t, []string{"1:retry-delayed", "2:retry-delayed", "1:completed"}, outcomes)
	require.Equal(t, 1, evalJS[int](t, tab, `document.querySelectorAll('#timeline [data-fresh="restart"]').length`))
	require.Contains(t, text(t, tab, `#timeline`), "retried with fresh attempts")
	screenshot(t, tab, "job-page-completed.png")

	e := b.audit.last(t)
	require.Equal(t, "otto", e.User)
	require.Equal(t, "retry-job", e.Action)
	require.Equal(t, id, e.JobID)
	require.Equal(t, 1, e.Jobs)
	require.Equal(t, "ok", e.Outcome)
}

// TestUIEscapesJobData is acceptance 2: XSS payloads in a job's name, data,
// failed reason and logs render as text on every page.
func TestUIEscapesJobData(t *testing.T) {
	t.Parallel()
	const payload = `<img src=x onerror="window.__xss=(window.__xss||0)+1;alert(1)"><script>window.__xss=1;alert(2)</script>"><svg onload=alert(3)>`
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "evil", func(ctx context.Context, job *drover.Job) (any, error) {
		_, _ = job.Log(ctx, "log "+payload)
		return nil, drover.Unrecoverable(errors.New("reason " + payload))
	}, nil)
	id := b.add(t, "evil", "name "+payload, map[string]string{"html": payload}, nil)
	b.waitState(t, "evil", id, drover.StateFailed)

	tab := browser(t)
	var dialogs atomic.Int32
	require.NoError(t, chromedp.Listen(tab, func(ev any) {
		if ev, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go func() {
				_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			}()
			_ = ev
		}
	}))
	injected := `({xss: window.__xss || 0, imgs: document.querySelectorAll('img').length, scripts: document.querySelectorAll('main script, main svg[onload]').length})`
	type probe struct {
		XSS     int `json:"xss"`
		Imgs    int `json:"imgs"`
		Scripts int `json:"scripts"`
	}
	check := func(where string) {
		t.Helper()
		p, err := chromedp.Run(step(t, tab), chromedp.Evaluate[probe](injected))
		require.NoError(t, err)
		require.Equal(t, probe{}, p, "no injection on the %s", where)
	}

	do(t, tab,
		chromedp.Navigate(b.url+"#/q/evil?state=failed"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"]`, id))),
	)
	row := text(t, tab, fmt.Sprintf(`#jobs tr[data-job="%s"]`, id))
	require.Contains(t, row, "name "+payload)
	require.Contains(t, row, "reason <img src=x")
	check("queue page")

	do(t, tab,
		chromedp.Navigate(b.url+"#/q/evil/job/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#job-logs`)),
	)
	for sel, want := range map[string]string{
		`h1`:             "name " + payload,
		`#failed-reason`: "reason " + payload,
		`#job-logs`:      "log " + payload,
		`#job-data`:      `"html": "<img src=x onerror=\"window.__xss`,
		`#timeline`:      "reason <img src=x",
	} {
		require.Contains(t, text(t, tab, sel), want, sel)
	}
	check("job page")
	// Let any deferred handler (onerror, onload) run before the verdict.
	do(t, tab, chromedp.Sleep(300*time.Millisecond))
	check("job page, later")
	require.Zero(t, dialogs.Load(), "no alert() ran")
}

// uiTime is how the dashboard's fmtTime shows instant t when the page is
// drawn at now: the time of day alone on the same local day, the date
// before it on any other (a next run an hour away is tomorrow after 23:00).
func uiTime(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); now.Year() == y && now.Month() == m && now.Day() == d {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}
