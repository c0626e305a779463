package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIPromoteAllNamesTheSchedulersRuns: "Promote all delayed…" on a
// queue with job schedulers says their next runs are among the delayed
// jobs it runs now. It asked "Run the 3 delayed jobs of reports now?" and
// the nightly report ran at once with them, unannounced. One job is "1
// delayed job", not "1 delayed jobs".
func TestUIPromoteAllNamesTheSchedulersRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "reports")
	for _, id := range []string{"nightly", "weekly"} {
		_, err := q.UpsertJobScheduler(ctx, id, drover.RepeatOptions{Pattern: "0 3 * * *"}, &drover.JobTemplate{Name: id})
		require.NoError(t, err)
	}
	b.add(t, "reports", "later", nil, &drover.JobOptions{Delay: time.Hour})
	b.add(t, "mail", "later", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	promote := func(queue string) string {
		t.Helper()
		// The page before has rows and the button too: wait for this one.
		do(t, tab, chromedp.Navigate(b.url+"#/q/"+queue+"?state=delayed"))
		testkit.WaitFor(t, 20*time.Second, queue+"'s page", func() bool { return text(t, tab, `h1 [data-name]`) == queue })
		do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
			chromedp.Click(chromedp.Search(`//button[text()="Promote all delayed…"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
		msg := text(t, tab, `.modal-body`)
		do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="no"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
		return msg
	}
	require.Equal(t, "Run the 3 delayed jobs of reports now? Jobs waiting for backoff keep their attempts. The next runs of its 2 job schedulers are among them and run now too, off schedule.", promote("reports"))
	require.Equal(t, "Run the 1 delayed job of mail now? Jobs waiting for backoff keep their attempts.", promote("mail"))
}
