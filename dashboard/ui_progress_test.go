package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIFeedShowsProgress: a job page's live feed shows the value of each
// progress event, escaped. It said "progress job 1" and nothing of the
// value: the events the API streamed carried none.
func TestUIFeedShowsProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "q", "copy", nil, nil)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q/job/"+id), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	job, err := b.queue(t, "q").GetJob(ctx, id)
	require.NoError(t, err)
	// The page's stream opens after its first load: report until the
	// feed carries a report.
	testkit.WaitFor(t, 30*time.Second, "the live feed to carry the progress value", func() bool {
		require.NoError(t, job.UpdateProgress(ctx, map[string]any{"pct": 42, "step": "<b>copy</b>"}))
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(text(t, tab, `.feed`), `progress job `+id+`: {"pct":42,"step":"<b>copy</b>"}`)
	})
	require.Zero(t, countOf(t, tab, `.feed b`), "the value is text, not markup")
}

// countOf counts the elements matching the CSS selector sel.
func countOf(t *testing.T, tab context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(step(t, tab), chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	require.NoError(t, err)
	return n
}
