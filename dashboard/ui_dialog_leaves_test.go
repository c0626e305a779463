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

// TestUIDialogLeavesWithItsPage: a confirmation is the page's that asked
// it. "Delete job 1?" open on the job's page stayed over the queue's list
// after the browser's Back, and its Remove still removed job 1; a session
// that ended meanwhile left it over the sign-in form. Leaving the page
// answers it no.
func TestUIDialogLeavesWithItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	id := b.add(t, "q", "x", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q?state=delayed"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), adminToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	do(t, tab, chromedp.Navigate(b.url+"#/q/q/job/"+id), chromedp.WaitVisible(chromedp.CSS(`[data-part="facts"] button`)))
	removeDialog := func() {
		t.Helper()
		do(t, tab, chromedp.Click(chromedp.CSS(`[data-part="facts"] button.danger:last-child`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
		require.Contains(t, text(t, tab, `.modal`), "Delete job "+id)
	}
	removeDialog()
	do(t, tab, chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	require.False(t, evalJS[bool](t, tab, `!!document.querySelector('.modal')`), "the question stayed after Back")
	require.Equal(t, "#/q/q?state=delayed", evalJS[string](t, tab, `location.hash`))

	// The session ends while the question is open.
	do(t, tab, chromedp.NavigateForward(), chromedp.WaitVisible(chromedp.CSS(`[data-part="facts"] button`)))
	removeDialog()
	c := b.as(t, adminToken)
	require.Equal(t, http.StatusOK, c.post("api/sessions/revoke", map[string]any{}, nil), string(c.lastBody))
	testkit.WaitFor(t, 30*time.Second, "the sign-in form", func() bool {
		return strings.Contains(text(t, tab, `#signin-message`), "Your session ended")
	})
	require.False(t, evalJS[bool](t, tab, `!!document.querySelector('.modal')`), "the question stayed over the sign-in form")
	job, err := b.queue(t, "q").GetJob(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, job)
}
