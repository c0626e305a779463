package dashboard_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// signIn posts the sign-in form from c and returns the session cookie
// ("drover_session=...") and the session's CSRF token.
func signIn(t *testing.T, b *testBundle, body map[string]string, extra map[string]string) (cookie, csrf string) {
	t.Helper()
	status, hdr := b.as(t, "").do(http.MethodPost, "api/login", body, nil, extra)
	require.Equal(t, http.StatusOK, status)
	for _, c := range hdr.Values("Set-Cookie") {
		if strings.HasPrefix(c, "drover_session=") {
			cookie = strings.SplitN(c, ";", 2)[0]
		}
	}
	require.NotEmpty(t, cookie)
	c := b.withCookie(t, cookie)
	var s dashboard.Session
	require.Equal(t, http.StatusOK, c.get("api/session", &s))
	return cookie, s.CSRF
}

func (b *testBundle) withCookie(t *testing.T, cookie string) *client {
	t.Helper()
	c := b.as(t, "")
	c.headers["Cookie"] = cookie
	var s dashboard.Session
	if c.get("api/session", &s) == http.StatusOK {
		c.csrf = s.CSRF
	}
	return c
}

// TestSessions is issue 15 items 6 and 11: sessions live in Redis, so
// logout and revocation end them for every copy of the cookie, sign-in
// rotates them, and each has its own CSRF token.
func TestSessions(t *testing.T) {
	t.Parallel()

	t.Run("LogoutRevokesCopiedCookie", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		cookie, _ := signIn(t, b, map[string]string{"token": adminToken}, nil)
		stolen := b.withCookie(t, cookie) // a copy of the cookie, kept by someone else
		require.Equal(t, http.StatusOK, stolen.get("api/overview", nil))
		owner := b.withCookie(t, cookie)
		require.Equal(t, http.StatusOK, owner.post("api/logout", nil, nil))
		require.Equal(t, http.StatusUnauthorized, stolen.get("api/overview", nil), "the copy is signed out too")
		require.Equal(t, http.StatusUnauthorized, stolen.post("api/queues/q/pause", nil, nil))
	})

	t.Run("SignInRotatesTheSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		old, _ := signIn(t, b, map[string]string{"token": adminToken}, nil)
		fresh, _ := signIn(t, b, map[string]string{"token": adminToken}, map[string]string{"Cookie": old})
		require.NotEqual(t, old, fresh)
		require.Equal(t, http.StatusUnauthorized, b.withCookie(t, old).get("api/overview", nil), "the pre-sign-in session ends")
		require.Equal(t, http.StatusOK, b.withCookie(t, fresh).get("api/overview", nil))
	})

	t.Run("AdminRevokesSessions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		otto1, _ := signIn(t, b, map[string]string{"user": "otto", "password": ottoPassword}, nil)
		otto2, _ := signIn(t, b, map[string]string{"token": operatorToken}, nil)
		vera, _ := signIn(t, b, map[string]string{"token": viewerToken}, nil)
		admin := b.as(t, adminToken)
		// One user's sessions.
		require.Equal(t, http.StatusNotFound, admin.post("api/sessions/revoke", map[string]string{"user": "nobody"}, nil))
		require.Equal(t, http.StatusForbidden, b.withCookie(t, otto1).post("api/sessions/revoke", map[string]string{}, nil))
		require.Equal(t, http.StatusOK, admin.post("api/sessions/revoke", map[string]string{"user": "otto"}, nil))
		require.Equal(t, http.StatusUnauthorized, b.withCookie(t, otto1).get("api/overview", nil))
		require.Equal(t, http.StatusUnauthorized, b.withCookie(t, otto2).get("api/overview", nil))
		require.Equal(t, http.StatusOK, b.withCookie(t, vera).get("api/overview", nil))
		otto3, _ := signIn(t, b, map[string]string{"token": operatorToken}, nil)
		require.Equal(t, http.StatusOK, b.withCookie(t, otto3).get("api/overview", nil), "signing in again works")
		// Everyone's.
		require.Equal(t, http.StatusOK, admin.post("api/sessions/revoke", map[string]string{}, nil))
		require.Equal(t, http.StatusUnauthorized, b.withCookie(t, vera).get("api/overview", nil))
		require.Equal(t, http.StatusUnauthorized, b.withCookie(t, otto3).get("api/overview", nil))
		e := b.audit.last(t)
		require.Equal(t, "revoke-sessions", e.Action)
		require.Equal(t, "user=*", e.Detail)
	})

	t.Run("CSRFTokenPerSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		b.add(t, "q", "x", nil, nil)
		c1, csrf1 := signIn(t, b, map[string]string{"token": adminToken}, nil)
		c2, csrf2 := signIn(t, b, map[string]string{"token": adminToken}, nil)
		require.NotEqual(t, csrf1, csrf2, "two sessions of one user")
		s2 := b.withCookie(t, c2)
		status, _ := s2.do(http.MethodPost, "api/queues/q/pause", nil, nil, map[string]string{"X-CSRF-Token": csrf1})
		require.Equal(t, http.StatusForbidden, status, "another session's token")
		require.Equal(t, http.StatusOK, s2.post("api/queues/q/pause", nil, nil))
		// A signed-out session's token is worth nothing with a new session.
		require.Equal(t, http.StatusOK, b.withCookie(t, c1).post("api/logout", nil, nil))
		c3, _ := signIn(t, b, map[string]string{"token": adminToken}, nil)
		status, _ = b.withCookie(t, c3).do(http.MethodPost, "api/queues/q/resume", nil, nil, map[string]string{"X-CSRF-Token": csrf1})
		require.Equal(t, http.StatusForbidden, status)
	})
}

// from returns an HTTP client whose connections come from ip (any
// 127.0.0.0/8 address works on loopback), to act as distinct clients.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestSignInThrottle is issue 15 item 7: failed sign-ins back off per
// client and per user with 429, for the form and for basic auth; short
// passwords are refused.
func TestSignInThrottle(t *testing.T) {
	t.Parallel()

	login := func(b *testBundle, hc *http.Client, user, pass string) (int, string) {
		body := fmt.Sprintf(`{"user":%q,"password":%q}`, user, pass)
		resp, err := hc.Post(b.url+"api/login", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	basic := func(b *testBundle, hc *http.Client, user, pass string) int {
		req, err := http.NewRequest(http.MethodGet, b.url+"api/overview", nil)
		require.NoError(t, err)
		req.SetBasicAuth(user, pass)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("FormBacksOffPerClient", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		attacker := from("127.0.0.2")
		for i := range 5 {
			s, _ := login(b, attacker, "nobody", "guess-guess-guess-guess")
			require.Equal(t, http.StatusUnauthorized, s, "failure %d is free", i+1)
		}
		// Right after the fifth failure the client waits 1 s.
		s, retry := login(b, attacker, "otto", ottoPassword)
		require.Equal(t, http.StatusTooManyRequests, s, "right credentials wait too")
		require.NotEmpty(t, retry)
		// A sustained attacker is mostly refused. The waits double (1 s, 2 s,
		// 4 s, ...), so only an attempt sent after a wait ran out gets
		// through; on a loaded machine 25 attempts may outlast the first
		// wait or two, never 1+2+4+8 s (a -count=2 run at load 8 saw the 30th attempt
		// land just after the first wait).
		var statuses []int
		through := 0
		for range 25 {
			s, _ := login(b, attacker, "nobody", "guess-guess-guess-guess")
			statuses = append(statuses, s)
			if s == http.StatusUnauthorized {
				through++
			} else {
				require.Equal(t, http.StatusTooManyRequests, s)
			}
		}
		require.LessOrEqual(t, through, 3, "statuses: %v", statuses)
		s, _ = login(b, from("127.0.0.3"), "otto", ottoPassword)
		require.Equal(t, http.StatusOK, s, "another client is not throttled")
		var sec dashboard.AuditPage
		require.Equal(t, http.StatusOK, b.as(t, adminToken).get("api/audit?log=security&limit=1000", &sec))
		throttled := 0
		for _, e := range sec.Entries {
			if e.Outcome == "throttled" {
				throttled++
			}
		}
		require.Positive(t, throttled)
	})

	t.Run("BasicAuthBacksOffPerUser", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers()})
		// Guesses at otto's password from many clients.
		for n := range 12 {
			require.NotEqual(t, http.StatusOK, basic(b, from(fmt.Sprintf("127.0.1.%d", n+1)), "otto", "guess-guess-guess-guess"))
		}
		require.Equal(t, http.StatusTooManyRequests, basic(b, from("127.0.2.1"), "otto", "guess-guess-guess-guess"))
		require.Equal(t, http.StatusTooManyRequests, basic(b, from("127.0.2.2"), "otto", ottoPassword), "otto waits, right or wrong")
		require.Equal(t, http.StatusOK, b.as(t, adminToken).get("api/overview", nil), "other users do not")
	})

	t.Run("BehindAProxyPerForwardedClient", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &dashboard.Options{Auth: testUsers(), TrustForwardedFor: true})
		via := func(client, user, pass string) int {
			c := b.as(t, "")
			status, _ := c.do(http.MethodPost, "api/login", map[string]string{"user": user, "password": pass}, nil,
				map[string]string{"X-Forwarded-For": "198.51.100.1, " + client})
			return status
		}
		var last int
		for range 30 {
			last = via("203.0.113.7", "nobody", "guess-guess-guess-guess")
		}
		require.Equal(t, http.StatusTooManyRequests, last)
		require.Equal(t, http.StatusOK, via("203.0.113.8", "otto", ottoPassword), "another client behind the same proxy")
		var sec dashboard.AuditPage
		require.Equal(t, http.StatusOK, b.as(t, adminToken).get("api/audit?log=security&limit=1", &sec))
		require.Equal(t, "203.0.113.8", sec.Entries[0].Remote)
	})

	t.Run("ShortPasswordRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		_, err := dashboard.New(b.ins, &dashboard.Options{Auth: &dashboard.Auth{Users: []dashboard.User{{Name: "x", Role: dashboard.RoleAdmin, Password: "fifteen-chars15"}}}})
		require.ErrorContains(t, err, "Password must be at least 16 characters")
	})
}

// TestAuditLogs is issue 15 item 8: anonymous traffic cannot flush the
// audit log; actions and security events are kept apart, durably, paged.
func TestAuditLogs(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	b.add(t, "q", "x", nil, nil)
	admin := b.as(t, adminToken)
	require.Equal(t, http.StatusOK, admin.post("api/queues/q/pause", nil, nil))
	// 600 anonymous mutation attempts and failed sign-ins from 600 clients.
	for n := range 600 {
		hc := from(fmt.Sprintf("127.0.%d.%d", 10+n/200, 1+n%200))
		resp, err := hc.Post(b.url+"api/queues/q/obliterate", "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		resp.Body.Close()
		if n%2 == 0 {
			resp, err = hc.Post(b.url+"api/login", "application/json", strings.NewReader(`{"token":"wrong-token-0123456789"}`))
			require.NoError(t, err)
			resp.Body.Close()
		}
		hc.CloseIdleConnections()
	}
	var actions dashboard.AuditPage
	require.Equal(t, http.StatusOK, admin.get("api/audit", &actions))
	require.Len(t, actions.Entries, 1)
	require.Equal(t, "pause", actions.Entries[0].Action)
	require.Equal(t, "ada", actions.Entries[0].User)

	// The security log holds the flood, paged newest first.
	seen := 0
	before := ""
	for page := 0; ; page++ {
		var sec dashboard.AuditPage
		require.Equal(t, http.StatusOK, admin.get("api/audit?log=security&limit=250&before="+before, &sec))
		for _, e := range sec.Entries {
			require.Equal(t, dashboard.AuditSecurity, e.Log)
		}
		seen += len(sec.Entries)
		if sec.Next == "" {
			break
		}
		require.Len(t, sec.Entries, 250)
		before = sec.Next
	}
	require.Equal(t, 900, seen)

	// Durable: a new dashboard over the same Redis reads the same log.
	h, err := dashboard.New(b.ins, &dashboard.Options{Auth: testUsers()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "/api/audit", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"action":"pause"`)
}
