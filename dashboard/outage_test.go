package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
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
