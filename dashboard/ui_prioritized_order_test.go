package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIPrioritizedListSaysItsOrder: a queue's prioritized jobs list the
// next to run first (priority, then age), and the order button says so.
// The list came in the other order under a button offering "Oldest first",
// as if it were by age: a priority-1 job added last showed among the
// oldest, and the job that runs next was at the bottom.
func TestUIPrioritizedListSaysItsOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	// Paused, so the jobs stay prioritized.
	require.NoError(t, b.queue(t, "pq").Pause(t.Context()))
	var ids []string
	for _, j := range []struct {
		name     string
		priority int
	}{{"a-urgent", 1}, {"b-bulk", 5}, {"c-normal", 2}, {"d-urgent", 1}} {
		ids = append(ids, b.add(t, "pq", j.name, nil, &drover.JobOptions{Priority: j.priority}))
	}
	a, bb, c, d := ids[0], ids[1], ids[2], ids[3]

	tab := browser(t)
	order := func() string {
		return evalJS[string](t, tab, `[...document.querySelectorAll('#jobs tr[data-job]')].map((r) => r.dataset.job).join(' ')`)
	}
	do(t, tab, chromedp.Navigate(b.url+"#/q/pq?state=prioritized"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	require.Equal(t, strings.Join([]string{a, d, c, bb}, " "), order(), "the next to run first")
	require.Equal(t, "Runs last first", text(t, tab, `#order-toggle`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#order-toggle`)))
	testkit.WaitFor(t, 30*time.Second, "the list turned", func() bool {
		return order() == strings.Join([]string{bb, c, d, a}, " ")
	})
	require.Equal(t, "Runs next first", text(t, tab, `#order-toggle`))
}
