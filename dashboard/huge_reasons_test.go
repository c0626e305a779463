package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestHugeFailedReasons: a queue whose jobs failed with 1 MB messages (a
// response body, a dump) opens its failed tab at once. The list answered
// every job's whole reason (26 MB for 25 jobs, again at each refresh), the
// failure groups keyed and showed each group by all of its message (a 1 MB
// filter in the page's address when shown, 1 MB more per group in the
// answer), and the page laid out 25 MB of one-line text: the tab froze for
// 11 s.
// Lists and groups now read and send the start of each message; the job
// page still has the whole reason.
func TestHugeFailedReasons(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	huge := "upstream answered 500: " + strings.Repeat("E", 1<<20)
	b.startWorker(t, "huge", func(context.Context, *drover.Job) (any, error) { return nil, errors.New(huge) }, nil)
	var ids []string
	for range 25 {
		ids = append(ids, b.add(t, "huge", "call", nil, &drover.JobOptions{Attempts: 1}))
	}
	for _, id := range ids {
		b.waitState(t, "huge", id, drover.StateFailed)
	}

	c := b.as(t, "")
	size := func(path string) int {
		t.Helper()
		require.Equal(t, http.StatusOK, c.get(path, nil), path)
		return len(c.lastBody)
	}
	require.Less(t, size("api/queues/huge/jobs?state=failed&limit=25"), 200_000, "the list sends whole reasons")
	var fr struct {
		Groups []struct{ Error, Example, Filter string }
	}
	require.Equal(t, http.StatusOK, c.get("api/queues/huge/failures", &fr))
	require.Len(t, fr.Groups, 1)
	require.Less(t, len(fr.Groups[0].Filter), 20_000, "the group's filter holds the whole message")
	require.Less(t, len(fr.Groups[0].Example), 20_000, "the group's example is the whole message")
	// The group's filter still selects its jobs.
	var page struct{ Jobs []struct{ ID string } }
	require.Equal(t, http.StatusOK, c.get("api/queues/huge/jobs?state=failed&limit=25&error="+url.QueryEscape(fr.Groups[0].Error), &page))
	require.Len(t, page.Jobs, 25)
	// The job page has all of it.
	var d struct{ FailedReason string }
	require.Equal(t, http.StatusOK, c.get("api/queues/huge/jobs/"+ids[0], &d))
	require.Equal(t, huge, d.FailedReason)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/huge?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#failure-groups tr[data-group]`)))
	require.Equal(t, 25, countOf(t, tab, `#jobs tr[data-job]`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#failure-groups [data-show]`)))
	testkit.WaitFor(t, 30*time.Second, "the group's jobs", func() bool {
		return strings.Contains(text(t, tab, `#main p.muted`), "25 failed jobs; showing those matching error=")
	})
	require.Less(t, len(evalJS[string](t, tab, `location.hash`)), 40_000)
	require.Equal(t, 25, countOf(t, tab, `#jobs tr[data-job]`))
}
