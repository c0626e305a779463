package dashboard_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestUISchedulerShowsItsEnd: a job scheduler with an end date, made by
// Node BullMQ or by drover, says on the schedulers page when it stops
// ("until ..."): the page showed "every 1h" and its next run alone, as if
// it ran for ever, although the API had its endDate.
func TestUISchedulerShowsItsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	end := time.Now().Add(50 * time.Hour).Truncate(time.Second)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	_, err := o.UpsertJobScheduler(ctx, b.prefix, "ends", "node-hourly", map[string]any{"every": 3_600_000, "endDate": end.UnixMilli(), "limit": 40},
		map[string]any{"name": "tick"})
	require.NoError(t, err)
	_, err = b.queue(t, "ends").UpsertJobScheduler(ctx, "drover-nightly", drover.RepeatOptions{Pattern: "0 3 * * *", TZ: "UTC", EndDate: end},
		&drover.JobTemplate{Name: "nightly"})
	require.NoError(t, err)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/ends/schedulers"), chromedp.WaitVisible(chromedp.CSS(`#schedulers tr[data-scheduler="drover-nightly"]`)))
	for _, id := range []string{"node-hourly", "drover-nightly"} {
		row := `#schedulers tr[data-scheduler="` + id + `"]`
		shown := evalJS[string](t, tab, `(document.querySelector('`+row+` [data-end]') || {dataset: {}}).dataset.end || ''`)
		require.Equal(t, strconv.FormatInt(end.UnixMilli(), 10), shown, id)
		require.Contains(t, text(t, tab, row), "until ", id)
		require.True(t, strings.Contains(text(t, tab, row), "in 2d") || strings.Contains(text(t, tab, row), "in 1d"), text(t, tab, row))
	}
	require.Contains(t, text(t, tab, `#schedulers tr[data-scheduler="node-hourly"]`), "1 of 40")
}
