package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUISchedulerIntervalIsExact: the job schedulers page shows an
// interval scheduler's period whole. It rounded it as it rounds elapsed
// times: every 1h 1m 22s read "every 1h 1m", every 25h 1m 1s "every 1d 1h".
func TestUISchedulerIntervalIsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	q := b.queue(t, "iv")
	for id, every := range map[string]time.Duration{
		"a": time.Hour + time.Minute + 22*time.Second,
		"b": 25*time.Hour + time.Minute + time.Second,
		"c": 1500 * time.Millisecond,
	} {
		_, err := q.UpsertJobScheduler(ctx, id, drover.RepeatOptions{Every: every}, &drover.JobTemplate{Name: "tick"})
		require.NoError(t, err)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/iv/schedulers"), chromedp.WaitVisible(chromedp.CSS(`#schedulers tr[data-scheduler="c"]`)))
	for id, want := range map[string]string{"a": "every 1h 1m 22s", "b": "every 1d 1h 1m 1s", "c": "every 1s 500ms"} {
		require.Equal(t, want, text(t, tab, `#schedulers tr[data-scheduler="`+id+`"] td:nth-child(2)`), id)
	}
}
