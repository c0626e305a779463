package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUISchedulerTimesSayWhoseClock: in a browser in Los Angeles, a cron
// scheduler of America/New_York says its next run at 03:00 New York time,
// and the column says the times are Los Angeles'. The page showed the next
// run as 00:00 (the browser's clock) beside "cron 0 3 * * *" and
// "America/New_York", with no word of whose clock that was.
func TestUISchedulerTimesSayWhoseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	q := b.queue(t, "zones")
	_, err := q.UpsertJobScheduler(ctx, "nightly-ny", drover.RepeatOptions{Pattern: "0 3 * * *", TZ: "America/New_York"}, &drover.JobTemplate{Name: "nightly"})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "every-hour", drover.RepeatOptions{Every: time.Hour}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)

	tab := browser(t)
	_, err = chromedp.Call(tab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/Los_Angeles"})
	require.NoError(t, err)
	do(t, tab, chromedp.Navigate(b.url+"#/q/zones/schedulers"), chromedp.WaitVisible(chromedp.CSS(`#schedulers tr[data-scheduler="nightly-ny"]`)))
	require.Contains(t, text(t, tab, `#schedulers thead`), "Next run (America/Los_Angeles)")
	next, err := drover.NextRun("0 3 * * *", "America/New_York", time.Now())
	require.NoError(t, err)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	require.Equal(t, next.In(ny).Format("2006-01-02 15:04:05")+" in America/New_York", text(t, tab, `#schedulers tr[data-scheduler="nightly-ny"] [data-next-tz]`))
	require.Equal(t, "", text(t, tab, `#schedulers tr[data-scheduler="every-hour"] [data-next-tz]`), "an interval has no zone of its own")
}
