package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestAPIWhileRedisIsBlackholed: the network between the dashboard and
// Redis black-holes (a partition: the connections stay open, nothing
// passes either way, new ones connect and hang), with go-redis's default
// client options, as a user builds the client. Every read of the page
// answers an error naming Redis within the dashboard's bound, not after
// the HTTP client gave up (30 s here), the probes answer too, and all
// answer 200 again once the network heals.
func TestAPIWhileRedisIsBlackholed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, proxy, base := proxiedDashboard(t, redis.Options{}, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	r, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)
	paths := []string{
		"api/overview", "api/queues/q", "api/queues/q/jobs?state=delayed", "api/queues/q/jobs/" + r.Job.ID,
		"api/queues/q/stalled", "api/queues/q/delayed", "api/queues/q/budgets", "api/queues/q/failures",
		"api/queues/q/throughput", "api/queues/q/schedulers", "api/workers", "api/jobs/" + r.Job.ID,
		"readyz",
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	get := func(p string) (int, string, error) {
		resp, err := hc.Get(base + p)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	for _, p := range paths {
		code, body, err := get(p)
		require.NoError(t, err, p)
		require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
	}

	proxy.SetBlackhole(true)
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Go(func() {
			code, body, err := get(p)
			if !assert.NoError(t, err, "%s: no answer", p) {
				return
			}
			assert.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", p, body)
			assert.Contains(t, body, "edis", p)
		})
	}
	wg.Wait()

	proxy.SetBlackhole(false)
	for _, p := range paths {
		testkit.WaitFor(t, 30*time.Second, p+" answering again", func() bool {
			code, _, err := get(p)
			return err == nil && code == http.StatusOK
		})
	}
}

// TestUIOutageBannerWhenBlackholed: the overview is open when the network
// to Redis black-holes (go-redis's default client options). The page says
// Redis does not answer, and the banner goes by itself once the network
// heals; the queue's row stays.
func TestUIOutageBannerWhenBlackholed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, proxy, base := proxiedDashboard(t, redis.Options{}, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	_, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	tab := browser(t)
	shown := func() bool {
		t.Helper()
		v, err := chromedp.Run(step(t, tab), chromedp.Evaluate[bool](`(() => { const b = document.getElementById('outage'); return !!b && !b.hidden && b.offsetHeight > 0; })()`))
		require.NoError(t, err)
		return v
	}
	do(t, tab, chromedp.Navigate(base+"#/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="q"]`)))
	require.False(t, shown(), "no banner while Redis answers")
	proxy.SetBlackhole(true)
	testkit.WaitFor(t, 45*time.Second, "the outage banner", shown)
	require.Contains(t, text(t, tab, `#outage`), "Redis does not answer")
	proxy.SetBlackhole(false)
	testkit.WaitFor(t, 45*time.Second, "the banner to go once the network heals", func() bool { return !shown() })
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="q"]`)))
}
