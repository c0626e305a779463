package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUILimitsWithAFraction: an operator types 1.5 as the global
// concurrency in the Limits dialog. The error says which field wants what,
// in the API's words, and nothing changes. It showed Go's decoder error:
// "json: cannot unmarshal number 1.5 into Go struct field
// LimitsRequest.concurrency of type int".
func TestUILimitsWithAFraction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "q", "x", nil, nil)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q"), chromedp.WaitVisible(chromedp.CSS(`#limits-button`)),
		chromedp.Click(chromedp.CSS(`#limits-button`)), chromedp.WaitVisible(chromedp.CSS(`#limit-concurrency`)),
		chromedp.SetValue(chromedp.CSS(`#limit-concurrency`), "1.5"),
		chromedp.Click(chromedp.CSS(`[data-confirm="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.toast.error`)))
	var msg string
	testkit.WaitFor(t, 10*time.Second, "the error toast", func() bool {
		msg = text(t, tab, `.toast.error`)
		return msg != ""
	})
	require.Contains(t, msg, `"concurrency" must be a whole number, got 1.5`)
	require.False(t, strings.Contains(msg, "Go struct") || strings.Contains(msg, "unmarshal"), msg)
	_, set, err := b.queue(t, "q").GetGlobalConcurrency(ctx)
	require.NoError(t, err)
	require.False(t, set, "nothing changed")
}
