package dashboard_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestLiveStreamEndsWithItsSession: a live-update stream opened with a
// session stops once the session ends (an admin signs everyone out, the
// user signs out elsewhere, it expires): the events after it are not sent.
// It went on streaming every job event (names, failed reasons, progress
// data) for as long as its connection stayed open, to a session that no
// longer signed anyone in.
func TestLiveStreamEndsWithItsSession(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	b.add(t, "q", "before", nil, nil)
	cookie, _ := signIn(t, b, map[string]string{"token": viewerToken}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"api/queues/q/events", nil)
	require.NoError(t, err)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return "<end>"
				}
				if strings.HasPrefix(l, "data: ") {
					return l
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s in 10s", what)
			}
		}
	}
	next("position")
	b.add(t, "q", "while-signed-in", nil, nil)
	require.Contains(t, next("event of a job added while signed in"), "while-signed-in")
	require.Equal(t, http.StatusOK, b.as(t, adminToken).post("api/sessions/revoke", dashboard.RevokeSessionsRequest{}, nil))
	time.Sleep(1100 * time.Millisecond) // past the stream's check interval
	late := b.add(t, "q", "after-revoke", nil, nil)
	for {
		l := next("end of the stream")
		if l == "<end>" {
			break
		}
		require.NotContains(t, l, `"jobId":"`+late+`"`, "the stream of a revoked session went on")
	}
}

// TestSignOutFromAnotherSiteRefused: a page on another origin (another
// site, or a sibling subdomain the SameSite cookie still goes to) cannot
// sign the user out: the sign-out is refused, audited, and the session
// stays. Sign-out was the one POST with no origin check (the sign-in
// form's has one): any such page ended the operator's session.
func TestSignOutFromAnotherSiteRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	cookie, _ := signIn(t, b, map[string]string{"token": operatorToken}, nil)
	c := b.withCookie(t, cookie)
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "same-site"}, {"Sec-Fetch-Site": "cross-site"}} {
		status, _ := c.do(http.MethodPost, "api/logout", nil, nil, h)
		require.Equal(t, http.StatusForbidden, status, "%v: %s", h, c.lastBody)
		e := b.audit.last(t)
		require.Equal(t, "logout", e.Action)
		require.Equal(t, "denied", e.Outcome)
		var s dashboard.Session
		require.Equal(t, http.StatusOK, c.get("api/session", &s), "%v: the session ended", h)
	}
	status, _ := c.do(http.MethodPost, "api/logout", nil, nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, http.StatusUnauthorized, c.get("api/session", nil))
}
