package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestAPIOnAManagedRedis: the dashboard over a managed Redis (CONFIG
// renamed away; a user without @dangerous and without SCAN: no INFO,
// CLIENT, KEYS, SCAN) answers every read of its pages with 200, its
// probes and metrics too, and an operator's pause and resume work; the
// workers page answers 200 with the reason it lists none.
func TestAPIOnAManagedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start("--rename-command", "CONFIG", "")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.NoError(t, srv.Client(t).Do(ctx, "ACL", "SETUSER", "dash", "on", ">dash-password", "~*", "&*", "+@all", "-@dangerous", "-scan").Err())
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "dash", Password: "dash-password"})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	r, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "hourly", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)
	ins, err := inspect.New(rdb, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	base := hs.URL + "/"
	for _, p := range []string{
		"api/overview", "api/queues/q", "api/queues/q/jobs?state=delayed", "api/queues/q/jobs/" + r.Job.ID,
		"api/queues/q/stalled", "api/queues/q/delayed", "api/queues/q/budgets", "api/queues/q/failures",
		"api/queues/q/throughput", "api/queues/q/schedulers", "api/queues/q/conflicts", "api/workers",
		"api/jobs/" + r.Job.ID, "api/audit", "readyz", "metrics",
	} {
		resp, err := http.Get(base + p)
		require.NoError(t, err, p)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, b)
		if p == "api/overview" {
			require.Contains(t, string(b), `"q"`, "the overview lists the queue")
		}
	}
	c := (&testBundle{url: base}).as(t, "")
	require.Equal(t, http.StatusOK, c.post("api/queues/q/pause", nil, nil), "%s", c.lastBody)
	require.Equal(t, http.StatusOK, c.post("api/queues/q/resume", nil, nil), "%s", c.lastBody)
	require.False(t, strings.Contains(string(c.lastBody), "NOPERM"))
}
