package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUILiveFeedSaysWhenEmpty: the live feed of a queue page and of a job
// page says, while no event came, that none did since the page opened,
// and the line goes with the first event. The panel was empty under its
// "Live events" heading: a feed still loading, or a broken one, to look
// at.
func TestUILiveFeedSaysWhenEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	require.True(t, strings.HasPrefix(text(t, tab, `.feed`), "No event of this queue since this page opened at "), text(t, tab, `.feed`))
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	require.True(t, strings.HasPrefix(text(t, tab, `.feed`), "No event of this job since this page opened at "), text(t, tab, `.feed`))
	job, err := b.queue(t, "mail").GetJob(ctx, id)
	require.NoError(t, err)
	require.NoError(t, job.Promote(ctx))
	testkit.WaitFor(t, 30*time.Second, "the feed to carry the promotion", func() bool {
		return strings.Contains(text(t, tab, `.feed`), "waiting job "+id+" (from delayed)")
	})
	require.NotContains(t, text(t, tab, `.feed`), "No event")
}

// TestUILiveFeedSaysWhenItIsNotConnected: a page whose live-update stream
// is refused (the streams are all taken; Redis down) says in its feed that
// live updates are not connected, and the line goes once the stream
// opens. The feed said nothing, and its empty line promised events that
// could not come.
func TestUILiveFeedSaysWhenItIsNotConnected(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin, MaxStreams: 1})
	id := b.add(t, "mail", "send", nil, &drover.JobOptions{Delay: time.Hour})
	first := browser(t)
	do(t, first, chromedp.Navigate(b.url+"#/q/mail?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	second := browser(t)
	do(t, second, chromedp.Navigate(b.url+"#/q/mail/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	testkit.WaitFor(t, 20*time.Second, "the second page to say its feed is not connected", func() bool {
		return strings.Contains(text(t, second, `.feed`), "Live updates are not connected")
	})
	require.NotContains(t, text(t, first, `.feed`), "not connected")
	do(t, first, chromedp.Navigate("about:blank"))
	testkit.WaitFor(t, 30*time.Second, "the line to go once the stream opens", func() bool {
		return !strings.Contains(text(t, second, `.feed`), "not connected")
	})
}
