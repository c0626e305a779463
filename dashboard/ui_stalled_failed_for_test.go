package dashboard_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUIStalledViewSaysWhyAJobFailed: the stalled view's "Jobs that
// stalled" listed a job its workers stalled too often as "failed", where
// every other list of the dashboard says "failed for good: stalled too
// often" (its badge was drawn without the job's failedFor).
func TestUIStalledViewSaysWhyAJobFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	k := b.prefix + ":st:"
	// As Node BullMQ's worker leaves a job its stalled checker failed.
	require.NoError(t, b.rdb.HSet(ctx, k+"9", "name", "n", "data", "{}", "opts", `{"attempts":3}`,
		"timestamp", 1000, "atm", 1, "ats", 2, "stc", 1, "processedOn", 5000, "finishedOn", 6000,
		"failedReason", "job stalled more than allowable limit",
		"stacktrace", `["UnrecoverableError: job stalled more than allowable limit\n    at Worker.processJob"]`).Err())
	require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redis.Z{Score: 6000, Member: "9"}).Err())

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/st/stalled"), chromedp.WaitVisible(chromedp.CSS(`#stalled-jobs tr[data-key="9"]`)))
	require.Equal(t, "failed for good: stalled too often", text(t, tab, `#stalled-jobs tr[data-key="9"] [data-retry-state]`))
}
