package dashboard_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestFlowChildrenShownStayTheSame: the job page of a flow parent with
// more pending children than it names (inspect.ChildrenShown) names the
// same ones at each refresh. It named a random draw: every 10 s the
// "Waiting for" list showed other children, and a child link the user had
// focused or was about to click went away.
func TestFlowChildrenShownStayTheSame(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	var kids []drover.FlowJob
	for i := range 40 {
		kids = append(kids, drover.FlowJob{Name: "part", QueueName: "parts", Data: map[string]int{"i": i}})
	}
	root := b.addFlow(t, drover.FlowJob{Name: "report", QueueName: "reports", Children: kids})
	c := b.as(t, "")
	read := func() string {
		t.Helper()
		var d struct {
			Children struct {
				Pending    int
				WaitingFor []struct{ Queue, ID string }
			}
		}
		require.Equal(t, http.StatusOK, c.get("api/queues/reports/jobs/"+root.Job.ID, &d))
		require.Equal(t, 40, d.Children.Pending)
		return fmt.Sprint(d.Children.WaitingFor)
	}
	first := read()
	for range 5 {
		require.Equal(t, first, read(), "the children named changed between two reads")
	}
}
