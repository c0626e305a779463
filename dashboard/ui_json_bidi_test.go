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

// TestUIJobDataShowsBidiControlsEscaped: a job's data holding a
// right-to-left override (U+202E, as a Node producer passed it through
// from user input) shows it as the escape \u202e, as `drover job` does,
// and its JSON reads left to right. The override was laid out: the rest of
// the string, its closing quote and the keys after it were drawn
// reversed ("\u202eevil" read "live" backwards, the quotes swapped), so
// the panel did not show what the job holds.
func TestUIJobDataShowsBidiControlsEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "bidi")
	res, err := q.Add(context.Background(), "send", map[string]string{"s": "\u202eevil \"quoted\" after", "z": "\u2067isolate"}, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/bidi/job/"+res.Job.ID), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	data := text(t, tab, `#job-data`)
	require.Contains(t, data, `"s": "\u202eevil \"quoted\" after"`)
	require.Contains(t, data, `"z": "\u2067isolate"`)
	require.NotContains(t, data, "\u202e")
	require.Positive(t, wordDirection(t, tab, `#job-data`, "evil"), "the data reads left to right")
}
