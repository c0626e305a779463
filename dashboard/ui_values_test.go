package dashboard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestUIJobShowsNullValues: a Node job added with null data whose
// processor returned nothing (BullMQ stores both as JSON null) shows null
// in its Data and Return value panels. Both panels were empty, as if the
// values had not loaded, while every other JSON value (false, 0, "", [],
// {}) showed.
func TestUIJobShowsNullValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, o, add := nodeWalk(t)
	id := add("q", "job", nil, nil)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Return(nil)}))
	_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
	require.NoError(t, err)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	require.Equal(t, "null", text(t, tab, `#job-data`))
	require.Equal(t, "Return value", text(t, tab, `.grid2 .panel:nth-child(2) h2`))
	require.Equal(t, "null", text(t, tab, `.grid2 .panel:nth-child(2) pre`))
}

// TestUIJobShowsReportedProgress: a Node processor reported progress 150,
// another -5 (BullMQ takes any number). The job page says 150% and -5%
// beside a full and an empty bar; it said 100% and 0%.
func TestUIJobShowsReportedProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, o, add := nodeWalk(t)
	want := map[string]string{}
	for _, p := range []int{150, -5, 42} {
		done := bullmqoracle.Return("ok")
		id := add("q", "job", map[string]any{"behavior": bullmqoracle.Progress(p, &done)}, nil)
		want[id] = fmt.Sprintf(" %d%%", p)
	}
	require.NoError(t, o.StartWorker(ctx, b.prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FromData("behavior")}))
	tab := browser(t)
	for id, w := range want {
		_, err := o.WaitUntilFinished(ctx, b.prefix, "q", id, 20*time.Second)
		require.NoError(t, err)
		do(t, tab, chromedp.Navigate(b.url+"#/q/q/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-progress`)))
		require.Equal(t, w, text(t, tab, `#job-progress-value`), "job %s", id)
	}
}
