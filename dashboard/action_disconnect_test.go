package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestActionOutlivesItsRequest: an action the user confirmed runs to its
// end when the browser goes away meanwhile (a reload, a closed tab, a
// proxy's timeout). Its Redis calls ran under the request's context, which
// the server cancels when the client disconnects: reloading the page while
// an obliterate of a large queue ran stopped it half-way (here: 1,000 of
// 3,000 jobs gone, the queue still listed, the audit saying "outcome
// unknown ... context canceled").
func TestActionOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, url, audit, _ := pausableAdmin(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "big", nil)
	require.NoError(t, err)
	for range 3 {
		batch := make([]drover.BulkJob, 1000)
		for i := range batch {
			batch[i] = drover.BulkJob{Name: "n"}
		}
		_, err := q.AddBulk(ctx, batch)
		require.NoError(t, err)
	}
	c := (&testBundle{url: url}).as(t, "")
	require.NotEmpty(t, c.csrf)

	// Redis holds the action's first call, and the browser leaves before
	// the answer.
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	req, err := http.NewRequest(http.MethodPost, url+"api/queues/big/obliterate", strings.NewReader(`{"force":false}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", c.csrf)
	_, err = (&http.Client{Timeout: 500 * time.Millisecond}).Do(req)
	require.Error(t, err, "the client gave up")
	require.NoError(t, srv.Signal(syscall.SIGCONT))

	testkit.WaitFor(t, 20*time.Second, "the audit entry", func() bool {
		for _, e := range audit.all() {
			if e.Action == "obliterate" {
				return true
			}
		}
		return false
	})
	var e = audit.last(t)
	require.Equal(t, "obliterate", e.Action)
	require.Equal(t, "ok", e.Outcome, "%s", e.Error)
	n, err := rdb.Exists(ctx, "bull:big:meta", "bull:big:wait").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the queue is gone")
	left, err := rdb.Keys(ctx, "bull:big:*").Result()
	require.NoError(t, err)
	require.Empty(t, left, "no job of the queue is left")
}
