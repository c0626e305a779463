package dashboard_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestStreamsDoNotStarveTheAPI is issue 15 item 14: live-update streams
// read over their own bounded connections, so a full set of streams leaves
// the API's pool free.
func TestStreamsDoNotStarveTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, prefix := redistest.Client(t)
	// The API's client has a small pool, as a busy service's would.
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr, PoolSize: 4, PoolTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(ctx)) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleViewer, MaxStreams: 16})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); require.NoError(t, h.Close(ctx)) })

	// 16 streams, each open and blocked in its read.
	sctx, stopStreams := context.WithCancel(ctx)
	t.Cleanup(stopStreams)
	for range 16 {
		req, err := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+"/api/queues/q/events", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		t.Cleanup(func() { resp.Body.Close() })
		sc := bufio.NewScanner(resp.Body)
		require.True(t, sc.Scan()) // retry: 2000
		require.True(t, sc.Scan()) // : open
	}
	time.Sleep(200 * time.Millisecond) // the streams are in their blocking reads

	hc := &http.Client{Timeout: 10 * time.Second}
	for range 10 {
		for _, path := range []string{"/api/overview", "/api/queues/q", "/api/queues/q/jobs?state=waiting"} {
			resp, err := hc.Get(srv.URL + path)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
	}
	require.LessOrEqual(t, rdb.PoolStats().TotalConns, uint32(4))
}
