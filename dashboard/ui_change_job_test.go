package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIChangePriorityAndDelay: an operator gives a prioritized job another
// priority and a delayed job another due time from its page (BullMQ's
// changePriority and changeDelay; the page had neither, and an operator
// had to remove and re-add the job). Both are audited, CSRF-checked like
// every action, refused to a viewer, and a bad value or a job not delayed
// is refused with the reason.
func TestUIChangePriorityAndDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	pid := b.add(t, "cp", "urgent", nil, &drover.JobOptions{Priority: 5})
	did := b.add(t, "cp", "later", nil, &drover.JobOptions{Delay: time.Hour})
	q := b.queue(t, "cp")

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/cp/job/"+pid),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#change-priority`)))
	require.Equal(t, "5", text(t, tab, `#job-priority`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#change-priority`)), chromedp.WaitVisible(chromedp.CSS(`.modal #priority-value`)),
		chromedp.SetValue(chromedp.CSS(`.modal #priority-value`), "1"),
		chromedp.Click(chromedp.CSS(`.modal #priority-lifo`)),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast`)))
	require.Equal(t, "Job "+pid+" now has priority 1.", text(t, tab, `.toast`))
	j, err := q.GetJob(ctx, pid)
	require.NoError(t, err)
	require.Equal(t, 1, j.Priority)
	e := b.audit.last(t)
	require.Equal(t, "change-priority", e.Action)
	require.Equal(t, "ok", e.Outcome)
	require.Equal(t, pid, e.JobID)
	require.Equal(t, "otto", e.User)
	require.Equal(t, "priority=1 lifo=true", e.Detail)

	do(t, tab, chromedp.Navigate(b.url+"#/q/cp/job/"+did), chromedp.WaitVisible(chromedp.CSS(`#change-delay`)),
		chromedp.Click(chromedp.CSS(`#change-delay`)), chromedp.WaitVisible(chromedp.CSS(`.modal #delay-seconds`)),
		chromedp.SetValue(chromedp.CSS(`.modal #delay-seconds`), "90"),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)))
	testkit.WaitFor(t, 10*time.Second, "the change-delay toast", func() bool {
		return strings.Contains(text(t, tab, `#toasts`), "Job "+did+" is due in 1m")
	})
	j, err = q.GetJob(ctx, did)
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, j.Delay)
	st, err := q.GetJobState(ctx, did)
	require.NoError(t, err)
	require.Equal(t, drover.StateDelayed, st)
	require.Equal(t, "delayMs=90000", b.audit.last(t).Detail)

	// The API: refusals with reasons; a viewer is refused; nothing moves.
	op := b.as(t, operatorToken)
	require.Equal(t, http.StatusBadRequest, op.post("api/queues/cp/jobs/"+pid+"/priority", map[string]any{"priority": -1}, nil))
	require.Contains(t, string(op.lastBody), "priority must be between 0 (none) and 2097151, got -1")
	require.Equal(t, http.StatusBadRequest, op.post("api/queues/cp/jobs/"+pid+"/priority", map[string]any{}, nil))
	require.Equal(t, http.StatusBadRequest, op.post("api/queues/cp/jobs/"+did+"/delay", map[string]any{"delayMs": -5}, nil))
	require.Equal(t, http.StatusConflict, op.post("api/queues/cp/jobs/"+pid+"/delay", map[string]any{"delayMs": 1000}, nil))
	require.Contains(t, string(op.lastBody), "it is prioritized, not delayed")
	require.Equal(t, http.StatusNotFound, op.post("api/queues/cp/jobs/nope/delay", map[string]any{"delayMs": 1000}, nil))
	viewer := b.as(t, viewerToken)
	require.Equal(t, http.StatusForbidden, viewer.post("api/queues/cp/jobs/"+pid+"/priority", map[string]any{"priority": 2}, nil))
	noCSRF := b.as(t, operatorToken)
	noCSRF.csrf = ""
	require.Equal(t, http.StatusForbidden, noCSRF.post("api/queues/cp/jobs/"+pid+"/priority", map[string]any{"priority": 2}, nil))
	j, err = q.GetJob(ctx, pid)
	require.NoError(t, err)
	require.Equal(t, 1, j.Priority)
}
