package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// heldAPI serves a bundle's dashboard at url; answers to API paths that
// start with its prefix wait until release.
type heldAPI struct {
	url      string
	release  func()
	seen     atomic.Int32 // held requests received
	answered atomic.Int32 // held requests answered
}

// holdAPI serves b's dashboard at a URL of its own, holding back the
// answers to requests for api/<prefix>... until release is called.
func holdAPI(t *testing.T, b *testBundle, prefix string) *heldAPI {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	ha := &heldAPI{release: func() { once.Do(func() { close(gate) }) }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/"+prefix) {
			b.h.ServeHTTP(w, r)
			return
		}
		ha.seen.Add(1)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		b.h.ServeHTTP(w, r)
		ha.answered.Add(1)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(ha.release) // runs first: Close waits for held requests
	ha.url = srv.URL + "/"
	return ha
}

// leaveWhileHeld opens page at ha (its answer held back), moves on to the
// workers page, and lets the held answer through once that page shows.
func leaveWhileHeld(t *testing.T, ha *heldAPI, page string) context.Context {
	t.Helper()
	tab := browser(t)
	do(t, tab, chromedp.Navigate(ha.url+page))
	testkit.WaitFor(t, 20*time.Second, "the page to ask for its data", func() bool { return ha.seen.Load() > 0 })
	evalJS[bool](t, tab, `(location.hash = '#/workers', true)`)
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#workers`)))
	ha.release()
	testkit.WaitFor(t, 20*time.Second, "the held answer", func() bool { return ha.answered.Load() > 0 })
	return tab
}

// stays checks, for d, that the workers page is still the one shown.
func staysOnWorkers(t *testing.T, tab context.Context, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		require.Equal(t, "Workers", text(t, tab, `#main h1`), "the page left drew over the workers page")
		require.NotContains(t, text(t, tab, `#main`), "Something went wrong")
	}
}

// TestUIFindLeftDoesNotDrawOver: a Find answer that comes after the user
// moved on to another page is dropped. It drew its results over the page
// shown (or, for a single match, navigated away from it).
func TestUIFindLeftDoesNotDrawOver(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	ha := holdAPI(t, b, "jobs/")
	tab := leaveWhileHeld(t, ha, "#/find/nosuchjob")
	staysOnWorkers(t, tab, 2*time.Second)
}

// TestUIAuditLeftDoesNotDrawOver: an Audit answer that comes after the
// user moved on is dropped; a refusal ("before must be an entry id")
// replaced the page shown with "Something went wrong".
func TestUIAuditLeftDoesNotDrawOver(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	ha := holdAPI(t, b, "audit")
	tab := leaveWhileHeld(t, ha, "#/audit?before=nope")
	staysOnWorkers(t, tab, 2*time.Second)
}

// TestUIOverviewLeftStopsPolling: an Overview page left before its first
// answer came does not poll (every 5 s) under the page shown next. It
// did, until the next navigation.
func TestUIOverviewLeftStopsPolling(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	ha := holdAPI(t, b, "overview")
	tab := leaveWhileHeld(t, ha, "#/")
	staysOnWorkers(t, tab, 7*time.Second)
	require.Equal(t, int32(1), ha.seen.Load(), "the overview page left kept polling")
}

// TestUIWorkersLeftStopsPolling: the same for the Workers page, left for
// the Overview before its first answer came.
func TestUIWorkersLeftStopsPolling(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	ha := holdAPI(t, b, "workers")
	tab := browser(t)
	do(t, tab, chromedp.Navigate(ha.url+"#/workers"))
	testkit.WaitFor(t, 20*time.Second, "the page to ask for its data", func() bool { return ha.seen.Load() > 0 })
	evalJS[bool](t, tab, `(location.hash = '#/', true)`)
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#queues`)))
	ha.release()
	testkit.WaitFor(t, 20*time.Second, "the held answer", func() bool { return ha.answered.Load() > 0 })
	for end := time.Now().Add(7 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		require.Equal(t, "Queues", text(t, tab, `#main h1`))
	}
	require.Equal(t, int32(1), ha.seen.Load(), "the workers page left kept polling")
}
