package dashboard_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/embedredis"
)

// TestUIWorkersOnTheDemoEngine: the workers page of `drover demo`'s
// embedded engine, which refuses CLIENT LIST with a reply ending in a
// full stop ("... Try CLIENT HELP."), says why in one sentence with one
// full stop. It read "Try CLIENT HELP..", the first page a new user opens
// after the queues.
func TestUIWorkersOnTheDemoEngine(t *testing.T) {
	t.Parallel()
	srv, err := embedredis.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: "bull"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(hs.URL+"/#/workers"), chromedp.WaitVisible(chromedp.CSS(`#workers-unavailable`)))
	msg := text(t, tab, `#workers-unavailable`)
	require.Contains(t, msg, "CLIENT LIST")
	require.True(t, strings.HasSuffix(msg, "."), "%q ends its sentence", msg)
	require.False(t, strings.HasSuffix(msg, ".."), "%q ends in two full stops", msg)
}
