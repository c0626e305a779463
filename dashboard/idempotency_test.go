package dashboard_test

import (
	"context"
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
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestIdempotencyKeyActsOnce: a client that sends a bounded promotion, a
// clean or a bulk retry again (its connection dropped before the answer)
// had the action done twice: "promote 1" promoted 2, "remove 2" removed 4.
// With the same Idempotency-Key, the resend gets the first answer and
// nothing is done again; the audit log says it was replayed. The key is
// the sender's: another user's same key acts.
func TestIdempotencyKeyActsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	for n := range 3 {
		b.add(t, "q", "later", nil, &drover.JobOptions{Delay: time.Duration(n+1) * time.Hour})
	}
	q := b.queue(t, "q")
	delayed := func() int64 {
		c, err := q.GetJobCounts(ctx, drover.StateDelayed)
		require.NoError(t, err)
		return c[drover.StateDelayed]
	}
	ada := b.as(t, adminToken)
	send := func(c *client, path string, body any, key string) (int, string, string) {
		status, hdr := c.do(http.MethodPost, path, body, nil, map[string]string{"Idempotency-Key": key})
		return status, strings.TrimSpace(string(c.lastBody)), hdr.Get("Idempotency-Replayed")
	}

	status, first, replayed := send(ada, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, "k-1")
	require.Equal(t, http.StatusOK, status, first)
	require.Empty(t, replayed)
	require.EqualValues(t, 2, delayed())
	status, again, replayed := send(ada, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, "k-1")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, first, again, "the first answer")
	require.Equal(t, "true", replayed)
	require.EqualValues(t, 2, delayed(), "promoted once")
	e := b.audit.last(t)
	require.Equal(t, "promote-all", e.Action)
	require.Equal(t, "replayed", e.Outcome)
	require.Equal(t, "ada", e.User)

	// Another user's same key is another request.
	otto := b.as(t, operatorToken)
	status, _, replayed = send(otto, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, "k-1")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, replayed)
	require.EqualValues(t, 1, delayed())

	// A refused request releases its key: nothing was done.
	status, _, _ = send(ada, "api/queues/q/promote", dashboard.PromoteRequest{Limit: -1}, "k-2")
	require.Equal(t, http.StatusBadRequest, status)
	status, _, replayed = send(ada, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, "k-2")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, replayed)
	require.EqualValues(t, 0, delayed())

	// A bulk retry resent: the same operation, not a second one.
	b.startWorker(t, "r", func(context.Context, *drover.Job) (any, error) { return nil, errorString("down") }, nil)
	id := b.add(t, "r", "x", nil, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "r", id, drover.StateFailed)
	require.NoError(t, b.queue(t, "r").Pause(ctx))
	status, op1, _ := send(ada, "api/queues/r/retry", dashboard.RetryJobsRequest{}, "k-3")
	require.Equal(t, http.StatusAccepted, status, op1)
	status, op2, replayed := send(ada, "api/queues/r/retry", dashboard.RetryJobsRequest{}, "k-3")
	require.Equal(t, http.StatusAccepted, status)
	require.Equal(t, "true", replayed)
	require.Equal(t, op1, op2)
	var ops struct{ Operations []dashboard.Operation }
	require.Equal(t, http.StatusOK, ada.get("api/operations", &ops))
	require.Len(t, ops.Operations, 1)

	status, body, _ := send(ada, "api/queues/q/promote", nil, strings.Repeat("k", 201))
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "Idempotency-Key must be at most 200 bytes")
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestIdempotencyKeyClaimReplyLost: the reply to the SET NX that claims a
// request's Idempotency-Key is lost and go-redis sends it again (its
// default MaxRetries), as after a reset connection. The resend finds the
// key the first send set. Before, the request took that for another
// request still under way: it answered 409 and did nothing, and every
// resend with the key was refused the same way until the claim expired
// (IdempotencyTTL, 10 min), so the promotion was never done.
func TestIdempotencyKeyClaimReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// go-redis's default resends.
	q, proxy, base := proxiedDashboard(t, redis.Options{}, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	for n := range 2 {
		_, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Duration(n+1) * time.Hour})
		require.NoError(t, err)
	}
	c := &client{t: t, base: base, headers: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second}}
	var s dashboard.Session
	require.Equal(t, http.StatusOK, c.get("api/session", &s))
	c.csrf = s.CSRF

	proxy.DropReplyTo("pending") // the claim's SET NX
	status, hdr := c.do(http.MethodPost, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, nil,
		map[string]string{"Idempotency-Key": "k-1"})
	require.Equal(t, int64(1), proxy.Dropped(), "the claim's reply was lost once")
	require.Equal(t, http.StatusOK, status, string(c.lastBody))
	require.Empty(t, hdr.Get("Idempotency-Replayed"))
	counts, err := q.GetJobCounts(ctx, drover.StateDelayed, drover.StateWaiting)
	require.NoError(t, err)
	require.EqualValues(t, 1, counts[drover.StateWaiting], "promoted once")

	status, hdr = c.do(http.MethodPost, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, nil,
		map[string]string{"Idempotency-Key": "k-1"})
	require.Equal(t, http.StatusOK, status, string(c.lastBody))
	require.Equal(t, "true", hdr.Get("Idempotency-Replayed"), "the resend gets the first answer")
	counts, err = q.GetJobCounts(ctx, drover.StateDelayed, drover.StateWaiting)
	require.NoError(t, err)
	require.EqualValues(t, 1, counts[drover.StateDelayed], "nothing done again")
}

// TestAuditEntryReplyLost: the reply to the XADD that stores an action's
// audit entry is lost and go-redis sends it again. The log must hold the
// action once: before, the resend appended a second entry, and the audit
// log showed one promotion as two.
func TestAuditEntryReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// go-redis's default resends.
	q, proxy, base := proxiedDashboard(t, redis.Options{}, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	_, err := q.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	c := &client{t: t, base: base, headers: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second}}
	var s dashboard.Session
	require.Equal(t, http.StatusOK, c.get("api/session", &s))
	c.csrf = s.CSRF

	proxy.DropReplyTo("dashboard:audit") // the XADD's key
	status, _ := c.do(http.MethodPost, "api/queues/q/promote", dashboard.PromoteRequest{Limit: 1}, nil, nil)
	require.Equal(t, http.StatusOK, status, string(c.lastBody))
	require.Equal(t, int64(1), proxy.Dropped(), "the audit append's reply was lost")
	var log struct{ Entries []dashboard.AuditEntry }
	require.Equal(t, http.StatusOK, c.get("api/audit", &log))
	promotions := 0
	for _, e := range log.Entries {
		if e.Action == "promote-all" {
			promotions++
		}
	}
	require.Equal(t, 1, promotions, "one promotion, one entry: %+v", log.Entries)
}

// TestFailedSignInReplyLost: the reply to the write that counts a failed
// sign-in is lost and go-redis sends it again. The failure must count
// once: before, the resend ran the HINCRBY again, so one wrong password
// counted as two against the client and the user, and the throttle (5 free
// failures) closed after 3.
func TestFailedSignInReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newResendRig(t)
	direct, prefix, proxy := r.direct, r.prefix, r.proxy
	// The first write to a throttle key (not its read) loses its reply:
	// armed from a hook, right before that write is sent.
	r.rdb.AddHook(&keyWriteDrop{proxy: proxy, marker: "::dashboard:throttle:"})

	resp, err := http.Post(r.url+"api/login", "application/json",
		strings.NewReader(`{"user":"otto","password":"guess-guess-guess-guess"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, int64(1), proxy.Dropped(), "the count's reply was lost once")
	for _, party := range []string{"client:127.0.0.1", "user:otto"} {
		n, err := direct.HGet(ctx, prefix+"::dashboard:throttle:"+party, "n").Result()
		require.NoError(t, err)
		require.Equal(t, "1", n, "one failure counted against %s", party)
	}
}

// resendRig is a dashboard (testUsers' sign-ins) whose Redis client goes
// through a fault proxy with go-redis's default resends, for the tests of
// writes whose reply is lost and sent again; direct reaches the same
// Redis without the proxy, and rdb takes the test's hooks.
type resendRig struct {
	direct *redis.Client
	prefix string
	proxy  *faultproxy.Proxy
	rdb    *redis.Client
	url    string // the dashboard's base URL, ending in "/"
}

func newResendRig(t *testing.T) *resendRig {
	t.Helper()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr}) // go-redis's default resends
	t.Cleanup(func() { _ = rdb.Close() })
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(ctx) })
	h, err := dashboard.New(ins, &dashboard.Options{Auth: testUsers()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(ctx) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &resendRig{direct: direct, prefix: prefix, proxy: proxy, rdb: rdb, url: srv.URL + "/"}
}

// keyWriteDrop arms its proxy to lose the reply of the first command or
// pipeline that writes a key whose name holds marker, whatever the
// commands (reads, HMGET and HGETALL, pass).
type keyWriteDrop struct {
	proxy  *faultproxy.Proxy
	marker string
	once   sync.Once
}

func (d *keyWriteDrop) writes(cmds ...redis.Cmder) bool {
	for _, c := range cmds {
		if c.Name() == "hmget" || c.Name() == "hgetall" {
			continue
		}
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.Contains(s, d.marker) {
				return true
			}
		}
	}
	return false
}

func (d *keyWriteDrop) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *keyWriteDrop) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d.writes(cmd) {
			d.once.Do(func() { d.proxy.DropReplyTo(d.marker) })
		}
		return next(ctx, cmd)
	}
}

func (d *keyWriteDrop) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if d.writes(cmds...) {
			d.once.Do(func() { d.proxy.DropReplyTo(d.marker) })
		}
		return next(ctx, cmds)
	}
}

// TestRevokeSessionsReplyLost: the reply to the write that revokes a
// user's sessions is lost and go-redis sends it again. The user's epoch
// must go up once: before, the resend ran the HINCRBY again (epoch 2), so
// a session the user signed in between the two sends (recording epoch 1)
// was revoked by the second.
func TestRevokeSessionsReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newResendRig(t)
	direct, prefix, proxy := r.direct, r.prefix, r.proxy
	b := &testBundle{url: r.url}
	admin := b.as(t, adminToken)
	r.rdb.AddHook(&keyWriteDrop{proxy: proxy, marker: "::dashboard:epochs"}) // armed from here on

	require.Equal(t, http.StatusOK, admin.post("api/sessions/revoke", map[string]string{"user": "otto"}, nil),
		string(admin.lastBody))
	require.Equal(t, int64(1), proxy.Dropped(), "the revocation's reply was lost once")
	epoch, err := direct.HGet(ctx, prefix+"::dashboard:epochs", "u:otto").Result()
	require.NoError(t, err)
	require.Equal(t, "1", epoch, "the epoch went up once")
}
