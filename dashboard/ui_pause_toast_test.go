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

// TestUIPauseAndResumeSayWhatTheyDid: pausing and resuming a queue from its
// page say what they did, as promote, clean, limits and retries do. Both
// closed the dialog with no word: only the "paused" badge came or went, at
// the page's reload.
func TestUIPauseAndResumeSayWhatTheyDid(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "pz", "x", nil, nil)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/pz?state=waiting"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	for _, step := range []struct{ button, toast string }{
		{"Pause…", "Paused pz: workers take none of its jobs until it is resumed; running jobs finish."},
		{"Resume…", "Resumed pz: workers take its jobs again."},
	} {
		do(t, tab, chromedp.Click(chromedp.Search(`//button[text()="`+step.button+`"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)),
			chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
		testkit.WaitFor(t, 30*time.Second, "the toast of "+step.button, func() bool {
			return strings.Contains(text(t, tab, `#toasts`), step.toast)
		})
	}
	paused, err := b.queue(t, "pz").IsPaused(context.Background())
	require.NoError(t, err)
	require.False(t, paused)
}
