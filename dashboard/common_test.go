package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// Tokens of the test users (see testUsers).
const (
	viewerToken   = "viewer-token-0123456789"
	operatorToken = "operator-token-0123456789"
	adminToken    = "admin-token-0123456789"
	ottoPassword  = "otto-password-0123456789"
)

func testUsers() *dashboard.Auth {
	return &dashboard.Auth{Users: []dashboard.User{
		{Name: "vera", Role: dashboard.RoleViewer, Token: viewerToken},
		{Name: "otto", Role: dashboard.RoleOperator, Token: operatorToken, Password: ottoPassword},
		{Name: "ada", Role: dashboard.RoleAdmin, Token: adminToken},
	}}
}

type testBundle struct {
	rdb    *redis.Client
	prefix string
	ins    *inspect.Inspector
	url    string // the dashboard's base URL, ending in "/"
	audit  *auditLog
	h      http.Handler // the dashboard url serves
}

// auditLog collects audit entries.
type auditLog struct {
	mu      sync.Mutex
	entries []dashboard.AuditEntry
	// before, when set, runs before an entry is appended, outside mu (a
	// test holds an entry back with it).
	before func(dashboard.AuditEntry)
}

func (a *auditLog) add(_ context.Context, e dashboard.AuditEntry) {
	a.mu.Lock()
	before := a.before
	a.mu.Unlock()
	if before != nil {
		before(e)
	}
	a.mu.Lock()
	a.entries = append(a.entries, e)
	a.mu.Unlock()
}

// holdBack makes add call before first.
func (a *auditLog) holdBack(before func(dashboard.AuditEntry)) {
	a.mu.Lock()
	a.before = before
	a.mu.Unlock()
}

func (a *auditLog) all() []dashboard.AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]dashboard.AuditEntry(nil), a.entries...)
}

func (a *auditLog) last(t *testing.T) dashboard.AuditEntry {
	t.Helper()
	all := a.all()
	require.NotEmpty(t, all, "an audit entry")
	return all[len(all)-1]
}

// setup serves a dashboard over a fresh prefix with httptest. opts.Audit is
// replaced by the bundle's log.
func setup(t *testing.T, opts *dashboard.Options) *testBundle {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	// A short discovery interval: queues the tests create show at once.
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	b := &testBundle{rdb: rdb, prefix: prefix, ins: ins, audit: &auditLog{}}
	o := dashboard.Options{}
	if opts != nil {
		o = *opts
	}
	o.Audit = b.audit.add
	h, err := dashboard.New(ins, &o)
	require.NoError(t, err)
	// After the server (cleanups run last first): Close releases the
	// client New opened for live-update streams.
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.url = srv.URL + "/"
	b.h = h
	return b
}

func (b *testBundle) queue(t *testing.T, name string) *drover.Queue {
	t.Helper()
	q, err := drover.NewQueue(b.rdb, name, &drover.QueueOptions{Prefix: b.prefix, BackoffTypes: []string{"test"}})
	require.NoError(t, err)
	return q
}

func (b *testBundle) add(t *testing.T, queue, name string, data any, opts *drover.JobOptions) string {
	t.Helper()
	res, err := b.queue(t, queue).Add(context.Background(), name, data, opts)
	require.NoError(t, err)
	return res.Job.ID
}

// addFlow adds the flow root with a FlowProducer of the test's prefix.
func (b *testBundle) addFlow(t *testing.T, root drover.FlowJob) *drover.JobNode {
	t.Helper()
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	tree, err := flows.Add(context.Background(), root)
	require.NoError(t, err)
	return tree
}

// holdJob starts a worker on queue (opts as startWorker's) whose processor
// holds every job it takes until the test ends, adds a job named "long"
// and returns its id once the worker runs it (a queue with a job active),
// and a func that lets every held job finish.
func (b *testBundle) holdJob(t *testing.T, queue string, opts *drover.WorkerOptions) (string, func()) {
	t.Helper()
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	b.startWorker(t, queue, func(ctx context.Context, _ *drover.Job) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}, opts)
	// Before the worker's Close (cleanups run last first).
	t.Cleanup(let)
	id := b.add(t, queue, "long", nil, nil)
	b.waitState(t, queue, id, drover.StateActive)
	return id, let
}

// startWorker runs proc on queue until the test ends. The "test" backoff
// waits 10ms after the first failure and an hour after later ones.
func (b *testBundle) startWorker(t *testing.T, queue string, proc drover.ProcessorFunc, opts *drover.WorkerOptions) {
	t.Helper()
	o := drover.WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = b.prefix
	o.DrainDelay = 50 * time.Millisecond
	o.BackoffStrategies = map[string]drover.BackoffFunc{"test": func(attemptsMade int, _ string, _ error, _ *drover.Job) time.Duration {
		if attemptsMade == 1 {
			return 10 * time.Millisecond
		}
		return time.Hour
	}}
	w, err := drover.NewWorker(b.rdb, queue, proc, &o)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
	})
}

// testRetry makes a job fail twice quickly, then wait an hour for its third
// and last attempt (with the "test" backoff).
var testRetry = &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "test"}}

func (b *testBundle) waitState(t *testing.T, queue, id string, state drover.JobState) {
	t.Helper()
	q := b.queue(t, queue)
	testkit.WaitFor(t, 20*time.Second, "job "+id+" to be "+string(state), func() bool {
		s, err := q.GetJobState(context.Background(), id)
		require.NoError(t, err)
		return s == state
	})
}

// proxiedDashboard serves a dashboard whose Redis is reached through a
// fault proxy (Refuse and ResetAll take Redis away, Listen brings it back,
// DropReplyTo loses a reply). The dashboard's client has copt's options
// with the proxy's address. It returns queue "q" on a direct connection,
// the proxy and the base URL.
func proxiedDashboard(t *testing.T, copt redis.Options, opts *dashboard.Options) (*drover.Queue, *faultproxy.Proxy, string) {
	t.Helper()
	direct, prefix := redistest.Client(t)
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	copt.Addr = proxy.Addr
	rdb := redis.NewClient(&copt)
	t.Cleanup(func() { _ = rdb.Close() })
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	h, err := dashboard.New(ins, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	return q, proxy, srv.URL + "/"
}

// outageClient gives up on a Redis that went away quickly: one resend, a
// short dial timeout, so a page shows an outage within a second or two.
var outageClient = redis.Options{MaxRetries: 1, DialTimeout: 200 * time.Millisecond}

// client calls the dashboard as one user.
type client struct {
	t       *testing.T
	base    string
	headers map[string]string
	csrf    string
	hc      *http.Client
	// lastBody is the body of the last response.
	lastBody []byte
}

// as returns a client that sends token (none when "") and has read its
// CSRF token when it may.
func (b *testBundle) as(t *testing.T, token string) *client {
	t.Helper()
	c := &client{t: t, base: b.url, headers: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second}}
	if token != "" {
		c.headers["Authorization"] = "Bearer " + token
	}
	var s dashboard.Session
	if status := c.get("api/session", &s); status == http.StatusOK {
		c.csrf = s.CSRF
	}
	return c
}

// rawBody is a request body sent as it is, not encoded as JSON.
type rawBody string

// do sends a request; body (unless a rawBody) and out are JSON (out may be nil).
func (c *client) do(method, path string, body any, out any, extra map[string]string) (int, http.Header) {
	c.t.Helper()
	var rd io.Reader
	if raw, ok := body.(rawBody); ok {
		rd = strings.NewReader(string(raw))
	} else if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	if method != http.MethodGet && c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range extra {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	c.lastBody = raw
	if out != nil && len(raw) > 0 && resp.StatusCode < 300 {
		require.NoError(c.t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode, resp.Header
}

func (c *client) get(path string, out any) int {
	c.t.Helper()
	status, _ := c.do(http.MethodGet, path, nil, out, nil)
	return status
}

func (c *client) post(path string, body, out any) int {
	c.t.Helper()
	status, _ := c.do(http.MethodPost, path, body, out, nil)
	return status
}

// bulkRetry starts a bulk retry and waits for its background operation to
// end; it returns the finished operation.
func (c *client) bulkRetry(queue string, req dashboard.RetryJobsRequest) dashboard.Operation {
	c.t.Helper()
	var op dashboard.Operation
	require.Equal(c.t, http.StatusAccepted, c.post("api/queues/"+queue+"/retry", req, &op))
	require.NotEmpty(c.t, op.ID)
	testkit.WaitFor(c.t, 20*time.Second, "operation "+op.ID+" to end", func() bool {
		require.Equal(c.t, http.StatusOK, c.get("api/operations/"+op.ID, &op))
		return op.Status != dashboard.OperationRunning
	})
	return op
}
