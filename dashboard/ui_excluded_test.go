package dashboard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIBulkRetrySaysWhyJobsAreLeftOut: a bulk retry leaves out a flow
// parent that a failed child failed, and a job that failed as
// unrecoverable, each with its own reason. The preview said "2 jobs that
// failed as unrecoverable are left out": the parent's own processor never
// failed.
func TestUIBulkRetrySaysWhyJobsAreLeftOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	tree, err := flows.Add(ctx, drover.FlowJob{Name: "order", QueueName: "q", Children: []drover.FlowJob{
		{Name: "charge", QueueName: "q", Opts: &drover.JobOptions{ParentPolicy: drover.FailParent}},
	}})
	require.NoError(t, err)
	fraud := b.add(t, "q", "fraud", nil, nil)
	b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
		switch job.Name {
		case "charge":
			return nil, errors.New("card declined")
		case "fraud":
			return nil, drover.Unrecoverable(errors.New("fraud suspected"))
		}
		return "shipped", nil
	}, nil)
	b.waitState(t, "q", tree.Job.ID, drover.StateFailed)
	b.waitState(t, "q", fraud, drover.StateFailed)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/q?state=failed"),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+fraud+`"]`)),
		chromedp.Click(chromedp.CSS(`#bulk-retry`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #retry-preview`)),
	)
	preview := text(t, tab, `.modal #retry-preview`)
	require.Contains(t, preview, "Retry 1 failed job (no filter: every one)")
	require.Contains(t, preview, "1 job that failed as unrecoverable is left out. 1 flow parent that a failed child failed is left out.")
	require.Contains(t, text(t, tab, `label:has(input[name="include-unrecoverable"])`), "include jobs that failed as unrecoverable or by a failed child")
}
