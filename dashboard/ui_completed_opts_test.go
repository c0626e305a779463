package dashboard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUICompletedJobShowsItsOptions: a completed job's page shows its
// return value and its options. The return value took the options' place:
// the options of a finished job (its priority, backoff, removal rules)
// could not be seen, though its Retry buttons run it again with them.
func TestUICompletedJobShowsItsOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "done", func(context.Context, *drover.Job) (any, error) { return map[string]bool{"sent": true}, nil }, nil)
	id := b.add(t, "done", "send", nil, &drover.JobOptions{Priority: 7, Attempts: 4, Backoff: &drover.Backoff{Type: "fixed", Delay: 1500}})
	b.waitState(t, "done", id, drover.StateCompleted)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/done/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-returnvalue`)))
	require.JSONEq(t, `{"sent": true}`, text(t, tab, `#job-returnvalue`))
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#job-opts`)))
	var opts map[string]any
	require.NoError(t, json.Unmarshal([]byte(text(t, tab, `#job-opts`)), &opts))
	require.EqualValues(t, 7, opts["priority"])
	require.EqualValues(t, 4, opts["attempts"])
}
