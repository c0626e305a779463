package dashboard_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestUIThroughputSaysWhyItIsEmpty: on a Redis whose ACL refuses MULTI (a
// read-only user allowed the read scripts), the throughput read fails
// while the rest of the queue page works. The panel says why it is empty;
// it stayed blank, the reason only in the browser's console.
func TestUIThroughputSaysWhyItIsEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	admin := srv.Client(t)
	q, err := drover.NewQueue(admin, "q", nil)
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "reader", "on", ">reader-password", "~*", "&*", "+@all", "-multi", "-exec").Err())
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "reader", Password: "reader-password"})
	t.Cleanup(func() { _ = rdb.Close() })
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: "bull"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(hs.URL+"/#/q/q?state=waiting"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.WaitVisible(chromedp.CSS(`#throughput-facts`)))
	require.Contains(t, text(t, tab, `#throughput-facts`), "Could not load the throughput: ")
	require.Contains(t, text(t, tab, `#throughput-facts`), "multi")
}
