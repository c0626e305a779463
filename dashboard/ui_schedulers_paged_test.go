package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUISchedulersComeInPages: a queue with a job scheduler per tenant
// lists them a page at a time, with how many there are, and the page turns
// through them. The API answered every scheduler, and the page drew them
// all and again every 5 s: with 20,000 schedulers, 1.7 MB per answer and
// a tab frozen for 1 to 8 s at each refresh.
func TestUISchedulersComeInPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "tenants")
	for i := range 250 {
		_, err := q.UpsertJobScheduler(ctx, fmt.Sprintf("tenant-%03d", i), drover.RepeatOptions{Every: time.Hour + time.Duration(i)*time.Second},
			&drover.JobTemplate{Name: "sync"})
		require.NoError(t, err)
	}

	c := b.as(t, "")
	var page struct {
		Schedulers    []struct{ ID string }
		Total, Offset int
	}
	require.Equal(t, http.StatusOK, c.get("api/queues/tenants/schedulers", &page))
	require.Len(t, page.Schedulers, dashboard.SchedulerPageDefault)
	require.Equal(t, 250, page.Total)
	require.Equal(t, http.StatusOK, c.get("api/queues/tenants/schedulers?offset=200", &page))
	require.Len(t, page.Schedulers, 50)
	require.Equal(t, 200, page.Offset)

	tab := browser(t)
	rows := func() int { return countOf(t, tab, `#schedulers tr[data-scheduler]`) }
	do(t, tab, chromedp.Navigate(b.url+"#/q/tenants/schedulers"), chromedp.WaitVisible(chromedp.CSS(`#schedulers-range`)))
	require.Equal(t, 100, rows())
	require.Equal(t, "1–100 of 250", text(t, tab, `#schedulers-range`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#schedulers-next`)))
	testkit.WaitFor(t, 30*time.Second, "the second page", func() bool { return text(t, tab, `#schedulers-range`) == "101–200 of 250" })
	require.Equal(t, 100, rows())
	do(t, tab, chromedp.Click(chromedp.CSS(`#schedulers-last`)))
	testkit.WaitFor(t, 30*time.Second, "the last page", func() bool { return text(t, tab, `#schedulers-range`) == "201–250 of 250" })
	require.Equal(t, 50, rows())
	require.Equal(t, 0, countOf(t, tab, `#schedulers-next`))
}
