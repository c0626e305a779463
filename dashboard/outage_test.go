package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestProbesWhileRedisIsPaused: Redis stops answering without closing its
// connections (SIGSTOP: a frozen host, a long fork, a partition). A
// readiness probe and a Prometheus scrape, each with a 10 s timeout (the
// scrape's default), must get their answer, 503 and drover_inspect_up 0,
// not time out: a timed-out scrape loses the very gauge that says Redis is
// down. Both come back once Redis answers again. Before, the go-redis
// client (ContextTimeoutEnabled off, its default) ignored /readyz's 2 s and
// the scrape's 5 s deadlines, and both took about 15 s: "Client.Timeout
// exceeded while awaiting headers".
func TestProbesWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	srv, get := pausableDashboard(t, 10*time.Second)

	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "\ndrover_inspect_up 1\n")

	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, "redis:")
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "\ndrover_inspect_up 0\n")

	require.NoError(t, srv.Signal(syscall.SIGCONT))
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "\ndrover_inspect_up 1\n")
	require.Contains(t, body, `drover_queue_jobs{queue="q",state="waiting"} 1`)
}

// TestAPIReadsWhileRedisIsPaused: while Redis is paused (SIGSTOP), the
// page's reads answer 503 naming Redis within the dashboard's read bound
// (10 s), so the page can say Redis is down, and answer again once it is
// back. Before, each read waited out its Redis calls' timeouts and retries
// one after another: 90 s for /api/overview, 60 s for a job list, past the
// server's one-minute write timeout.
func TestAPIReadsWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	srv, get := pausableDashboard(t, 15*time.Second)

	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	paths := []string{"/api/overview", "/api/queues/q/jobs?state=waiting"}
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Go(func() {
			code, body := get(p)
			assert.Equal(t, http.StatusServiceUnavailable, code, p)
			assert.Contains(t, body, "Redis unavailable", p)
		})
	}
	wg.Wait()

	require.NoError(t, srv.Signal(syscall.SIGCONT))
	for _, p := range paths {
		code, body := get(p)
		require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
	}
	code, body := get("/api/queues/q/jobs?state=waiting")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"name":"x"`)
}

// pausableDashboard serves a dashboard over a redis-server of its own (one
// job added to queue q), which the test may pause with srv.Signal; get
// reads a path with an HTTP client whose timeout is timeout.
func pausableDashboard(t *testing.T, timeout time.Duration) (srv *redistest.Server, get func(path string) (int, string)) {
	t.Helper()
	srv = redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	_, err = q.Add(context.Background(), "x", nil, nil)
	require.NoError(t, err)
	ins, err := inspect.New(rdb, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	client := &http.Client{Timeout: timeout}
	return srv, func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(hs.URL + path)
		require.NoError(t, err, path)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
}

// TestAPIWritesWhileRedisIsPaused: while Redis is paused (SIGSTOP), an
// action (pause a queue, promote a job) answers within the dashboard's
// bound with 503 and a JSON error that says its outcome is unknown, and
// the audit log records it as unknown, never as ok. Before, each action
// waited out its Redis calls' client timeouts (15 s and more here) and the
// test's 14 s HTTP client gave up: "Client.Timeout exceeded while awaiting
// headers".
func TestAPIWritesWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	srv, url, audit, delayed := pausableAdmin(t)
	c := (&testBundle{url: url}).as(t, "")
	c.hc.Timeout = 14 * time.Second // under the client's 15 s read timeout
	require.NotEmpty(t, c.csrf)

	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	paths := []string{"api/queues/q/pause", "api/queues/q/jobs/" + delayed + "/promote"}
	for _, p := range paths {
		require.Equal(t, http.StatusServiceUnavailable, c.post(p, nil, nil), p)
		var body struct{ Error, Outcome string }
		require.NoError(t, json.Unmarshal(c.lastBody, &body), "%s", c.lastBody)
		require.Equal(t, "unknown", body.Outcome, p)
		require.Contains(t, body.Error, "may or may not have happened", p)
	}
	// Recorded after the answer: the audit store is in the paused Redis.
	testkit.WaitFor(t, 5*time.Second, "both audit entries", func() bool { return len(audit.all()) == len(paths) })
	for _, e := range audit.all() {
		require.Equal(t, "unknown", e.Outcome, e.Action)
		require.Contains(t, e.Error, "outcome unknown", e.Action)
	}

	require.NoError(t, srv.Signal(syscall.SIGCONT))
	require.Equal(t, http.StatusOK, c.post("api/queues/q/resume", nil, nil), "%s", c.lastBody)
	require.Equal(t, "ok", audit.last(t).Outcome)
}

// TestUIActionWhileRedisIsPaused: an action confirmed while Redis is
// paused ends in a toast that says its outcome is unknown, not that it
// failed: it may have happened. Before, the page waited for an answer
// that came after the client's timeouts, then said "failed".
func TestUIActionWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	srv, url, _, _ := pausableAdmin(t)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(url+"#/q/q"), chromedp.Click(chromedp.Search(`//button[text()="Promote all delayed…"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)))
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	testkit.WaitFor(t, 14*time.Second, "the toast", func() bool {
		return strings.Contains(evalJS[string](t, tab, `document.body.innerText`),
			"Promote delayed jobs: outcome unknown. Redis did not answer in time, so it may or may not have happened")
	})
	require.NotContains(t, evalJS[string](t, tab, `document.body.innerText`), "Promote delayed jobs failed")
}

// pausableAdmin serves a dashboard over a redis-server of its own, which
// the test may pause with srv.Signal, to anonymous admins, recording its
// audit entries; queue q holds the delayed job delayed.
func pausableAdmin(t *testing.T) (srv *redistest.Server, url string, audit *auditLog, delayed string) {
	t.Helper()
	srv = redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	added, err := q.Add(context.Background(), "x", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	ins, err := inspect.New(rdb, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	audit = &auditLog{}
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin, Audit: audit.add})
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return srv, hs.URL + "/", audit, added.Job.ID
}
