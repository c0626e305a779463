package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestFindJobSkipsADamagedQueue: finding a job by id searches every queue.
// A job hash of that id in another queue that another program overwrote
// with a string made GET /api/jobs/{id} fail whole (500, that queue's
// WRONGTYPE error) and the page showed an error, though a healthy queue
// held the job. The answer now lists the readable matches and names each
// queue it could not search; the page shows both and does not jump to the
// one match, since the damaged queue may hold the id too.
func TestFindJobSkipsADamagedQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	for _, q := range []string{"broken", "good"} {
		b.add(t, q, "x", nil, &drover.JobOptions{JobID: "j1"})
	}
	damaged := b.prefix + ":broken:j1"
	require.NoError(t, b.rdb.Del(ctx, damaged).Err())
	require.NoError(t, b.rdb.Set(ctx, damaged, "oops", 0).Err())

	var res struct {
		Matches []struct{ Queue, State string }
		Skipped []struct{ Queue, Error string }
	}
	c := b.as(t, "")
	require.Equal(t, http.StatusOK, c.get("api/jobs/j1", &res), string(c.lastBody))
	require.Len(t, res.Matches, 1)
	require.Equal(t, "good", res.Matches[0].Queue)
	require.Equal(t, "waiting", res.Matches[0].State)
	require.Len(t, res.Skipped, 1)
	require.Equal(t, "broken", res.Skipped[0].Queue)
	require.Contains(t, res.Skipped[0].Error, damaged+" holds a string, not a hash")

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/find/j1"))
	testkit.WaitFor(t, 30*time.Second, "the skipped queue named", func() bool {
		return strings.Contains(text(t, tab, `#main`), "could not be searched")
	})
	require.Equal(t, 1, countOf(t, tab, `#find-results tr[data-match="good"]`))
	require.Equal(t, 1, countOf(t, tab, `#find-skipped li[data-skipped="broken"]`))
}
