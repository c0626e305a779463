package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestUIFailureGroupsStayCompact: a Node job failed with a 5,000-character
// message (an error with a dump in it) makes one failure group among
// others. Its row shows a few lines of the error and of its example, the
// whole error on hover, and its first and last seen times each on one
// line. The row printed the message twice in full, a block taller than the
// screen that squeezed the times into "00:27" over ":35".
func TestUIFailureGroupsStayCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, o, add := nodeWalk(t)
	long := "dump " + strings.Repeat("x", 5000)
	var ids []string
	for _, msg := range []string{long, "boom"} {
		ids = append(ids, add("q", "job", map[string]any{"behavior": bullmqoracle.Fail(msg)}, nil))
	}
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FromData("behavior")}))
	for _, id := range ids {
		_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
		require.NoError(t, err)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#failure-groups tr[data-group^="dump"]`)))
	row := `document.querySelector('#failure-groups tr[data-group^="dump"]')`
	require.Less(t, evalJS[float64](t, tab, row+`.getBoundingClientRect().height`), 160.0, "the long group's row")
	require.Equal(t, long, evalJS[string](t, tab, row+`.querySelector('[title]').title`), "the whole error on hover")
	// Each time takes one line: its text makes one box.
	lines := evalJS[int](t, tab, `[...`+row+`.querySelectorAll('td.when')].map((td) => { const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length; }).reduce((a, b) => Math.max(a, b), 0)`)
	require.Equal(t, 1, lines, "a time on one line")
}
