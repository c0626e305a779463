package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIRetryOfAJobThatMovedMeanwhile: an operator opens "Retry" on a
// failed job; before they confirm, someone else retries it and a worker
// completes it. The confirmed retry is refused (the job is completed, not
// the failed job the dialog named), the job does not run again, and the
// page shows where it is. Before, the dashboard retried whatever finished
// state the job was in: the completed job ran a second time.
func TestUIRetryOfAJobThatMovedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	var runs atomic.Int32
	b.startWorker(t, "moved", func(ctx context.Context, job *drover.Job) (any, error) {
		if runs.Add(1) == 1 {
			return nil, errors.New("upstream 502")
		}
		return "ok", nil
	}, nil)
	id := b.add(t, "moved", "x", nil, nil)
	b.waitState(t, "moved", id, drover.StateFailed)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/moved/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)),
		chromedp.Click(chromedp.Search(`//button[text()="Retry (keep attempts)"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	// Meanwhile: another operator's retry, and the worker completes it.
	_, err := b.ins.RetryJob(ctx, "moved", id, false)
	require.NoError(t, err)
	b.waitState(t, "moved", id, drover.StateCompleted)
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.toast.error`)))
	require.Contains(t, text(t, tab, `.toast.error`), "completed")
	time.Sleep(300 * time.Millisecond) // a retry sent would have been taken by now
	b.waitState(t, "moved", id, drover.StateCompleted)
	require.Equal(t, int32(2), runs.Load(), "the completed job ran again")
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`h1 [data-retry-state="completed"]`)))
	e := b.audit.last(t)
	require.Equal(t, "retry-job", e.Action)
	require.Equal(t, "error", e.Outcome)
	require.Equal(t, 0, e.Jobs)
}

// TestRetryJobFromTheStateSeen: POST .../retry with "from" retries the job
// only from that state; in any other it answers 409 and leaves it there.
func TestRetryJobFromTheStateSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	q := b.queue(t, "seen")
	delayed := b.add(t, "seen", "d", nil, &drover.JobOptions{Delay: time.Hour})
	c := b.as(t, "")
	require.Equal(t, http.StatusConflict, c.post("api/queues/seen/jobs/"+delayed+"/retry", map[string]any{"from": "failed"}, nil), string(c.lastBody))
	require.Contains(t, string(c.lastBody), "the job is delayed, not failed")
	s, err := q.GetJobState(ctx, delayed)
	require.NoError(t, err)
	require.Equal(t, drover.StateDelayed, s)
	require.Equal(t, http.StatusBadRequest, c.post("api/queues/seen/jobs/"+delayed+"/retry", map[string]any{"from": "active"}, nil), string(c.lastBody))
	require.Equal(t, http.StatusOK, c.post("api/queues/seen/jobs/"+delayed+"/retry", map[string]any{"from": "delayed"}, nil), string(c.lastBody))
	s, err = q.GetJobState(ctx, delayed)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, s)
}
