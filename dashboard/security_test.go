package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestSecurity is acceptance 3: binding, roles, CSRF and the audit log.
func TestSecurity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// failedJob leaves one failed job in queue q and returns its id.
	failedJob := func(t *testing.T, b *testBundle) string {
		t.Helper()
		b.startWorker(t, "q", func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("boom")
		}, nil)
		id := b.add(t, "q", "x", nil, nil)
		b.waitState(t, "q", id, drover.StateFailed)
		require.NoError(t, b.queue(t, "q").Pause(ctx)) // retried jobs stay in wait
		return id
	}

	t.Run("NonLoopbackBindWithoutAuthRefused", func(t *testing.T) {
		t.Parallel()
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		t.Cleanup(func() { _ = rdb.Close() })
		ins, err := inspect.New(rdb, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
		for _, addr := range []string{"0.0.0.0:7373", ":7373", "[::]:0", "192.0.2.10:80", "example.com:80"} {
			_, err := dashboard.NewServer(ins, &dashboard.ServerOptions{Addr: addr})
			require.ErrorIs(t, err, dashboard.ErrInsecureBind, addr)
		}
		for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", ""} {
			_, err := dashboard.NewServer(ins, &dashboard.ServerOptions{Addr: addr})
			require.NoError(t, err, addr)
		}
		_, err = dashboard.NewServer(ins, &dashboard.ServerOptions{Addr: "0.0.0.0:0", Handler: &dashboard.Options{Auth: testUsers()}})
		require.NoError(t, err, "with users a public bind is allowed")
		_, err = dashboard.New(ins, &dashboard.Options{Auth: &dashboard.Auth{Users: []dashboard.User{{Name: "x", Role: dashboard.RoleAdmin, Token: "short"}}}})
		require.ErrorContains(t, err, "at least 16 characters")
	})

	t.Run("ServerStartsOnLoopbackAndGuardsHost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		srv, err := dashboard.NewServer(b.ins, &dashboard.ServerOptions{Addr: "127.0.0.1:0"})
		require.NoError(t, err)
		require.NoError(t, srv.Start(ctx))
		t.Cleanup(func() { require.NoError(t, srv.Close(ctx)) })
		require.True(t, strings.HasPrefix(srv.URL(), "http://127.0.0.1:"))
		resp, err := http.Get(srv.URL() + "healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		// DNS rebinding: a page on evil.example resolving to 127.0.0.1.
		req, err := http.NewRequest(http.MethodGet, srv.URL()+"api/overview", nil)
		require.NoError(t, err)
		req.Host = "evil.example"
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	})

	t.Run("SignInRequired", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		anon := b.as(t, "")
		require.Equal(t, http.StatusUnauthorized, anon.get("api/overview", nil))
		require.Equal(t, http.StatusUnauthorized, anon.get("metrics", nil))
		require.Equal(t, http.StatusUnauthorized, b.as(t, "wrong-token-0123456789").get("api/overview", nil))
		require.Equal(t, http.StatusOK, b.as(t, viewerToken).get("api/overview", nil))
		// Health checks and the UI shell need no sign-in.
		require.Equal(t, http.StatusOK, anon.get("healthz", nil))
		require.Equal(t, http.StatusOK, anon.get("readyz", nil))
		require.Equal(t, http.StatusOK, anon.get("", nil))
		// An unauthenticated mutation is refused and audited.
		require.Equal(t, http.StatusUnauthorized, anon.post("api/queues/q/pause", nil, nil))
		e := b.audit.last(t)
		require.Equal(t, "pause", e.Action)
		require.Equal(t, "denied", e.Outcome)
	})

	t.Run("BasicAuthAndSessionSignIn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		c := b.as(t, "")
		c.headers["Authorization"] = "Basic b3R0bzpvdHRvLXBhc3N3b3JkLTAxMjM0NTY3ODk=" // otto:ottoPassword
		var s dashboard.Session
		require.Equal(t, http.StatusOK, c.get("api/session", &s))
		require.Equal(t, dashboard.Session{User: "otto", Role: dashboard.RoleOperator, Via: "basic", CSRF: s.CSRF, AuthEnabled: true, CanOperate: true}, s)

		// The UI's sign-in form: a session cookie, then CSRF on mutations.
		status, hdr := b.as(t, "").do(http.MethodPost, "api/login", map[string]string{"token": adminToken}, nil, nil)
		require.Equal(t, http.StatusOK, status)
		cookie := hdr.Get("Set-Cookie")
		require.Contains(t, cookie, "drover_session=")
		require.Contains(t, cookie, "HttpOnly")
		require.Contains(t, cookie, "SameSite=Strict")
		sess := b.as(t, "")
		sess.headers["Cookie"] = strings.SplitN(cookie, ";", 2)[0]
		require.Equal(t, http.StatusOK, sess.get("api/session", &s))
		require.Equal(t, "ada", s.User)
		sess.csrf = s.CSRF
		b.add(t, "q", "x", nil, nil)
		require.Equal(t, http.StatusOK, sess.post("api/queues/q/pause", nil, nil))
		// A forged cookie is nobody.
		forged := b.as(t, "")
		forged.headers["Cookie"] = "drover_session=YWRh.9999999999.AAAA"
		require.Equal(t, http.StatusUnauthorized, forged.get("api/session", nil))
		// Wrong credentials are refused and audited.
		status, _ = b.as(t, "").do(http.MethodPost, "api/login", map[string]string{"user": "otto", "password": "nope"}, nil, nil)
		require.Equal(t, http.StatusUnauthorized, status)
		e := b.audit.last(t)
		require.Equal(t, "login", e.Action)
		require.Equal(t, "otto", e.User)
		require.Equal(t, "denied", e.Outcome)
	})

	t.Run("RolesGateActions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		id := failedJob(t, b)
		viewer, operator, admin := b.as(t, viewerToken), b.as(t, operatorToken), b.as(t, adminToken)
		require.NotEmpty(t, viewer.csrf)

		// The viewer reads but cannot POST, even with a valid CSRF token.
		require.Equal(t, http.StatusOK, viewer.get("api/queues/q/jobs/"+id, nil))
		require.Equal(t, http.StatusForbidden, viewer.post("api/queues/q/jobs/"+id+"/retry", map[string]bool{"resetAttempts": true}, nil))
		e := b.audit.last(t)
		require.Equal(t, dashboard.AuditEntry{Log: dashboard.AuditActions, Time: e.Time, User: "vera", Role: dashboard.RoleViewer, Via: "token", Action: "retry-job",
			Queue: "q", JobID: id, Outcome: "denied", Error: e.Error, Remote: e.Remote}, e)
		require.Contains(t, e.Error, "needs the operator role")
		require.Equal(t, http.StatusForbidden, viewer.post("api/queues/q/retry", map[string]any{}, nil))
		require.Equal(t, http.StatusForbidden, viewer.get("api/audit", nil))

		// The operator retries and promotes, but does not pause or remove.
		require.Equal(t, http.StatusForbidden, operator.post("api/queues/q/pause", nil, nil))
		require.Equal(t, http.StatusForbidden, operator.post("api/queues/q/jobs/"+id+"/remove", nil, nil))
		var res map[string]any
		require.Equal(t, http.StatusOK, operator.post("api/queues/q/jobs/"+id+"/retry", map[string]bool{"resetAttempts": true}, &res))
		require.Equal(t, "failed", res["from"])
		e = b.audit.last(t)
		require.Equal(t, "otto", e.User)
		require.Equal(t, "ok", e.Outcome)
		require.Equal(t, 1, e.Jobs)
		require.Equal(t, "resetAttempts=true from=failed", e.Detail)

		// The admin does everything, and reads the audit log.
		require.Equal(t, http.StatusOK, admin.post("api/queues/q/resume", nil, nil))
		var audit struct{ Entries []dashboard.AuditEntry }
		require.Equal(t, http.StatusOK, admin.get("api/audit", &audit))
		require.Equal(t, "resume", audit.Entries[0].Action)
	})

	t.Run("CSRFRequiredOnEveryMutation", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		id := failedJob(t, b)
		admin := b.as(t, adminToken)
		mutations := []string{
			"api/queues/q/jobs/" + id + "/retry", "api/queues/q/jobs/" + id + "/promote", "api/queues/q/retry",
			"api/queues/q/promote", "api/queues/q/jobs/" + id + "/remove", "api/queues/q/pause", "api/queues/q/resume",
			"api/queues/q/clean", "api/queues/q/drain", "api/queues/q/obliterate",
		}
		for _, path := range mutations {
			before := len(b.audit.all())
			status, _ := admin.do(http.MethodPost, path, map[string]any{}, nil, map[string]string{"X-CSRF-Token": ""})
			require.Equal(t, http.StatusForbidden, status, path)
			status, _ = admin.do(http.MethodPost, path, map[string]any{}, nil, map[string]string{"X-CSRF-Token": "forged"})
			require.Equal(t, http.StatusForbidden, status, path)
			status, _ = admin.do(http.MethodPost, path, map[string]any{}, nil, map[string]string{"Origin": "https://evil.example"})
			require.Equal(t, http.StatusForbidden, status, path)
			status, _ = admin.do(http.MethodPost, path, map[string]any{}, nil, map[string]string{"Sec-Fetch-Site": "cross-site"})
			require.Equal(t, http.StatusForbidden, status, path)
			entries := b.audit.all()[before:]
			require.Len(t, entries, 4, path)
			for _, e := range entries {
				require.Equal(t, "denied", e.Outcome, path)
				require.Contains(t, e.Error, "CSRF check failed", path)
			}
		}
		// The other user's token does not pass either.
		otto := b.as(t, operatorToken)
		status, _ := admin.do(http.MethodPost, "api/queues/q/jobs/"+id+"/retry", nil, nil, map[string]string{"X-CSRF-Token": otto.csrf})
		require.Equal(t, http.StatusForbidden, status)
		c, err := b.queue(t, "q").GetJobCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), c[drover.StateFailed], "nothing was retried")
	})

	t.Run("EveryMutationIsAudited", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
		id := failedJob(t, b)
		for range 3 {
			b.add(t, "q", "later", nil, &drover.JobOptions{Delay: time.Hour})
		}
		c := b.as(t, "")
		type call struct {
			path   string
			body   any
			action string
			jobs   int
		}
		for _, tc := range []call{
			{"api/queues/q/retry", map[string]any{"dryRun": true}, "retry-jobs", 0},
			{"api/queues/q/retry", map[string]any{"filter": "reason=boom", "resetAttempts": true}, "retry-jobs", 0},
			{"api/queues/q/promote", nil, "promote-all", 3},
			{"api/queues/q/clean", map[string]any{"state": "waiting", "grace": "0s"}, "clean", 4},
			{"api/queues/q/pause", nil, "pause", 0},
			{"api/queues/q/resume", nil, "resume", 0},
			{"api/queues/q/jobs/" + id + "/remove", nil, "remove-job", 0},
			{"api/queues/q/obliterate", nil, "obliterate", 0},
		} {
			before, logged := time.Now(), len(b.audit.all())
			status, _ := c.do(http.MethodPost, tc.path, tc.body, nil, nil)
			// The call's own entry is the first it appended, before the end
			// of a bulk retry it started (TestBulkRetryAuditedAfterItsRequest).
			all := b.audit.all()
			require.Greater(t, len(all), logged, tc.path)
			e := all[logged]
			require.Equal(t, tc.action, e.Action, tc.path)
			require.Equal(t, "anonymous", e.User)
			require.Equal(t, "q", e.Queue)
			require.Equal(t, tc.jobs, e.Jobs, tc.action)
			require.False(t, e.Time.Before(before.Add(-time.Second)))
			if status == http.StatusOK || status == http.StatusAccepted {
				require.Equal(t, "ok", e.Outcome, tc.action)
			} else {
				require.Equal(t, "error", e.Outcome, tc.action)
			}
			if status == http.StatusAccepted {
				// A bulk retry runs in the background: its end is audited too,
				// with the jobs it moved.
				testkit.WaitFor(t, 20*time.Second, "the retry's end in the audit log", func() bool {
					return b.audit.last(t).Action == "retry-jobs-finished"
				})
				e := b.audit.last(t)
				require.Equal(t, "anonymous", e.User)
				require.Equal(t, "ok", e.Outcome)
				require.Equal(t, 1, e.Jobs)
			}
		}
		e := b.audit.all()
		require.Contains(t, e[1].Detail, `filter="reason=boom" resetAttempts=true`)
		require.Contains(t, e[1].Detail, `operation=1 started`)
		require.Equal(t, "error", e[7].Outcome, "the job was cleaned before: remove fails, and says so")
	})

	t.Run("ReadOnlyRefusesMutations", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers(), ReadOnly: true})
		admin := b.as(t, adminToken)
		var s dashboard.Session
		require.Equal(t, http.StatusOK, admin.get("api/session", &s))
		require.True(t, s.ReadOnly)
		require.False(t, s.CanAdmin)
		require.Equal(t, http.StatusForbidden, admin.post("api/queues/q/pause", nil, nil))
		e := b.audit.last(t)
		require.Equal(t, "denied", e.Outcome)
		require.Equal(t, "the dashboard is read-only", e.Error)
		require.Equal(t, http.StatusOK, admin.get("api/overview", nil))
	})

	t.Run("HeadersAgainstInjection", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		b.add(t, "q", "<script>alert(1)</script>", map[string]string{"x": "</script><script>alert(2)</script>"}, nil)
		c := b.as(t, "")
		status, hdr := c.do(http.MethodGet, "api/queues/q/jobs?state=waiting", nil, nil, nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "application/json; charset=utf-8", hdr.Get("Content-Type"))
		require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
		require.Contains(t, hdr.Get("Content-Security-Policy"), "script-src 'self'")
		require.Equal(t, "DENY", hdr.Get("X-Frame-Options"))
		_, hdr = c.do(http.MethodGet, "", nil, nil, nil)
		require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'")
	})
}

// A bulk retry runs in the background and audits its end; that entry comes
// after the entry of the request that started it, even when the request's
// own entry is slow to record (here held back 500 ms) and the retry is done
// first. Before, the log read retry-jobs-finished, then retry-jobs.
func TestBulkRetryAuditedAfterItsRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "q", func(context.Context, *drover.Job) (any, error) { return nil, errors.New("boom") }, nil)
	b.waitState(t, "q", b.add(t, "q", "x", nil, nil), drover.StateFailed)
	require.NoError(t, b.queue(t, "q").Pause(context.Background())) // the retried job stays in wait
	b.audit.holdBack(func(e dashboard.AuditEntry) {
		if e.Action == "retry-jobs" && strings.Contains(e.Detail, "started") {
			time.Sleep(500 * time.Millisecond)
		}
	})
	c := b.as(t, "")
	status, _ := c.do(http.MethodPost, "api/queues/q/retry", map[string]any{}, nil, nil)
	require.Equal(t, http.StatusAccepted, status)
	testkit.WaitFor(t, 20*time.Second, "the retry's end in the audit log", func() bool {
		return slices.ContainsFunc(b.audit.all(), func(e dashboard.AuditEntry) bool { return e.Action == "retry-jobs-finished" })
	})
	var actions []string
	for _, e := range b.audit.all() {
		actions = append(actions, e.Action+":"+e.Outcome)
	}
	require.Equal(t, []string{"retry-jobs:ok", "retry-jobs-finished:ok"}, actions)
}
