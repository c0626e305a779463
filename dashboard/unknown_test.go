package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUnknownQueues is issue 15 items 5 and 15: a queue name that is no
// queue answers 404 for reads and actions, and nothing is written.
func TestUnknownQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "real", "x", nil, nil)
	c := b.as(t, "")
	for n := range 300 {
		require.Equal(t, http.StatusNotFound, c.get(fmt.Sprintf("api/queues/random-%d", n), nil))
	}
	for _, path := range []string{"api/queues/nosuch", "api/queues/nosuch/jobs", "api/queues/nosuch/jobs/1", "api/queues/nosuch/stalled",
		"api/queues/nosuch/delayed", "api/queues/nosuch/budgets", "api/queues/nosuch/events"} {
		require.Equal(t, http.StatusNotFound, c.get(path, nil), path)
	}
	for _, path := range []string{"pause", "resume", "clean", "drain", "obliterate", "promote", "retry", "jobs/1/retry", "jobs/1/promote", "jobs/1/remove"} {
		require.Equal(t, http.StatusNotFound, c.post("api/queues/nosuch/"+path, map[string]any{}, nil), path)
	}
	require.Equal(t, http.StatusOK, c.get("api/queues/real", nil))
	// A 404 says what it did not find, so a page can tell an unknown queue
	// from an unknown job of a queue that is there.
	missing := func(status int) string {
		t.Helper()
		require.Equal(t, http.StatusNotFound, status)
		var nf struct{ Error, Missing string }
		require.NoError(t, json.Unmarshal(c.lastBody, &nf))
		require.NotEmpty(t, nf.Error)
		return nf.Missing
	}
	require.Equal(t, "queue", missing(c.get("api/queues/nosuch/jobs/1", nil)))
	require.Equal(t, "queue", missing(c.get("api/queues/nosuch", nil)))
	require.Equal(t, "job", missing(c.get("api/queues/real/jobs/999", nil)))
	require.Equal(t, "scheduler", missing(c.post("api/queues/real/schedulers/nosuch/remove", map[string]any{}, nil)))
	written, err := b.rdb.Keys(context.Background(), b.prefix+":nosuch:*").Result()
	require.NoError(t, err)
	require.Empty(t, written, "nothing written for an unknown queue")
	var ov struct{ Queues []struct{ Name string } }
	require.Equal(t, http.StatusOK, c.get("api/overview", &ov))
	require.Len(t, ov.Queues, 1, "no phantom queue")
}

// TestUIUnknownQueueOrPage: a link to a queue that is not there (a typo,
// an obliterated queue) shows "No queue named …" and nothing to act on;
// a job link into such a queue says the same, not that the job is gone;
// a link to no page says so. The queue page showed its filters, bulk retry
// and empty panels under an error line, the job page "Job 1 is gone", and
// an unknown page the overview.
func TestUIUnknownQueueOrPage(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "real", "x", nil, nil)
	tab := browser(t)
	for _, hash := range []string{"#/q/nosuch", "#/q/nosuch?state=waiting", "#/q/nosuch/job/1", "#/q/nosuch/stalled", "#/q/nosuch/schedulers"} {
		do(t, tab, chromedp.Navigate(b.url+hash), chromedp.WaitVisible(chromedp.CSS(`#not-found`)))
		require.Equal(t, "No queue named nosuch", text(t, tab, `#not-found h1`), hash)
		require.Contains(t, text(t, tab, `#not-found`), `known queues: real`, hash)
		require.Equal(t, "", text(t, tab, `#bulk-retry`), hash)
		require.Equal(t, "", text(t, tab, `.feed`), hash)
		require.Equal(t, "", text(t, tab, `#jobs`), hash)
	}
	// The page draws its live-events panel at once and the job's answer
	// when the API replies: wait for the answer, not for a panel.
	do(t, tab, chromedp.Navigate(b.url+"#/q/real/job/999"), chromedp.WaitVisible(chromedp.CSS(`main .panel`)))
	testkit.WaitFor(t, 10*time.Second, "the job page to say job 999 is gone", func() bool {
		return strings.Contains(text(t, tab, `main`), "Job 999 is gone (removed, or never existed).")
	})
	do(t, tab, chromedp.Navigate(b.url+"#/nowhere/at/all"), chromedp.WaitVisible(chromedp.CSS(`#not-found`)))
	require.Equal(t, "No such page", text(t, tab, `#not-found h1`))
	require.Contains(t, text(t, tab, `#not-found`), "Nothing lives at #/nowhere/at/all.")
	// The overview is still where it was.
	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`a[href="#/q/real"]`)))
}

// TestUIMalformedLink: a link whose percent escapes do not decode (cut
// short when pasted) says there is no such page. The router's
// decodeURIComponent threw an uncaught URIError, and the page shown before
// stayed under the new address, its refreshes stopped.
func TestUIMalformedLink(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "real", "x", nil, nil)
	tab := browser(t)
	con := watchConsole(t, tab)
	do(t, tab, chromedp.Navigate(b.url+"#/q/real"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	for _, hash := range []string{"#/q/%E0%A4%A", "#/q/real/job/%ZZ", "#/find/50%"} {
		do(t, tab, chromedp.Evaluate[chromedp.Void](`location.hash = `+strconv.Quote(hash)), chromedp.WaitVisible(chromedp.CSS(`#not-found`)))
		require.Equal(t, "No such page", text(t, tab, `#not-found h1`), hash)
		require.Equal(t, "", text(t, tab, `#jobs`), hash)
		// Back to a page that works, for the next link.
		do(t, tab, chromedp.Evaluate[chromedp.Void](`location.hash = "#/q/real"`), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	}
	require.Empty(t, con.errors())
}
