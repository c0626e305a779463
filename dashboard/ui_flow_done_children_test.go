package dashboard_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIFlowParentLinksItsFinishedChildren: the page of a flow parent
// whose children (in another queue) all completed links them, as it links
// pending and failed ones, and a child's page links back: it said
// "Children: 0 pending, 2 completed, ..." and named none, so the finished
// children of a flow could not be reached from it.
func TestUIFlowParentLinksItsFinishedChildren(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	tree := b.addFlow(t, drover.FlowJob{Name: "report", QueueName: "parents", Children: []drover.FlowJob{
		{Name: "part", QueueName: "kids"}, {Name: "part", QueueName: "kids"}}})
	b.startWorker(t, "kids", func(context.Context, *drover.Job) (any, error) { return "ok", nil }, nil)
	b.waitState(t, "parents", tree.Job.ID, drover.StateWaiting)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/parents/job/"+tree.Job.ID), chromedp.WaitVisible(chromedp.CSS(`#flow-children`)))
	require.Contains(t, text(t, tab, `#flow-children`), "2 completed")
	for _, kid := range tree.Children {
		n := evalJS[float64](t, tab, `document.querySelectorAll('#flow a[data-ref="kids/`+kid.Job.ID+`"]').length`)
		require.Equal(t, 1.0, n, "a link to completed child %s", kid.Job.ID)
	}
	kid := tree.Children[0].Job.ID
	do(t, tab, chromedp.Click(chromedp.CSS(`#flow a[data-ref="kids/`+kid+`"]`)), chromedp.WaitVisible(chromedp.CSS(`#flow-parent a`)))
	require.Equal(t, "parents/"+tree.Job.ID, text(t, tab, `#flow-parent a`))
}
