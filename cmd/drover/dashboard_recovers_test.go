package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestDashboardRecoversAfterRedisWasSlow: `drover dashboard` answers again
// once Redis answers again after a request of its went unanswered (Redis
// paused for a few seconds). The dashboard shares the one-shot commands'
// --timeout hook, which fails every later request at once after the first
// unanswered one: the dashboard answered 503 with that first request's
// error ("read tcp …: i/o timeout") on every page, minutes after Redis was
// back, until it was restarted.
func TestDashboardRecoversAfterRedisWasSlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	prefix := redistest.UniquePrefix()
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)

	var out testkit.SyncBuffer
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- (&Main{Stdout: &out, Stderr: &out}).Run(cctx, []string{"dashboard", "--addr", "127.0.0.1:0",
			"--redis", srv.Addr, "--prefix", prefix, "--timeout", "1s"})
	}()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	re := regexp.MustCompile(`drover dashboard: (\S+) `)
	var url string
	waitUntil(t, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	hc := &http.Client{Timeout: 30 * time.Second}
	status := func() (int, string) {
		resp, err := hc.Get(url + "api/queues/q")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := status()
	require.Equal(t, http.StatusOK, code, body)

	// Redis holds every command for 3 s: the dashboard's request goes
	// unanswered within its 1 s.
	require.NoError(t, rdb.Do(ctx, "CLIENT", "PAUSE", 3000, "ALL").Err())
	code, body = status()
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, "Redis unavailable")

	testkit.WaitFor(t, 20*time.Second, "the dashboard to answer once Redis does", func() bool {
		code, body = status()
		return code == http.StatusOK
	})
}
