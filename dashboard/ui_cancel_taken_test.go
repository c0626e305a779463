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

// TestUICancelQueuedJobTakenMeanwhile: an operator opens "Cancel job" on a
// waiting job ("It has not started: it fails for good now, without
// running"), and a drover worker takes the job while the dialog is open.
// The confirmed cancel is refused (409: the job is active now) and the
// running attempt goes on; the page says so and shows the job running.
// The cancel stopped the running attempt (the worker's context was
// cancelled and the job failed "cancelled"), which the dialog never said.
func TestUICancelQueuedJobTakenMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	id := b.add(t, "ct", "send", nil, nil)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/ct/job/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-job`)),
		chromedp.Click(chromedp.CSS(`#cancel-job`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #cancel-reason`)))
	require.Contains(t, text(t, tab, `.modal`), "It has not started")

	stopped := make(chan error, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b.startWorker(t, "ct", func(ctx context.Context, _ *drover.Job) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
			stopped <- context.Cause(ctx)
		}
		return nil, nil
	}, nil)
	b.waitState(t, "ct", id, drover.StateActive)

	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitVisible(chromedp.CSS(`.toast.error`)))
	msg := text(t, tab, `.toast.error`)
	require.Contains(t, msg, "it is active")
	require.Contains(t, msg, "its attempt goes on")
	testkit.WaitFor(t, 10*time.Second, "the page to show the job active", func() bool {
		return strings.Contains(text(t, tab, `h1`), "active") || text(t, tab, `dl.kv dd`) == "active"
	})
	select {
	case err := <-stopped:
		t.Fatalf("the running attempt was stopped: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	st, err := b.queue(t, "ct").GetJobState(ctx, id)
	require.NoError(t, err)
	require.Equal(t, drover.StateActive, st)
	e := b.audit.last(t)
	require.Equal(t, "cancel-job", e.Action)
	require.Equal(t, "error", e.Outcome)
	require.Contains(t, e.Error, "it is active")
	require.Contains(t, e.Detail, "seen=waiting")

	// The API: a bad from is refused, and from=active cancels the attempt.
	c := b.as(t, "")
	require.Equal(t, http.StatusBadRequest, c.post("api/queues/ct/jobs/"+id+"/cancel", map[string]any{"from": "completed"}, nil))
	require.Equal(t, http.StatusOK, c.post("api/queues/ct/jobs/"+id+"/cancel", map[string]any{"from": "active", "reason": "stop"}, nil))
	select {
	case cause := <-stopped:
		require.ErrorIs(t, cause, drover.ErrJobCancelled)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel seen active did not reach the running attempt")
	}
}
