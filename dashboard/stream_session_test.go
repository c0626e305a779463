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

// TestLiveStreamResumesFromTheBrowsersLastEvent: a stream the page opened
// with ?after=<id> (after the browser gave up on an error answer) that
// the browser later reconnects by itself comes back with the same URL and
// a newer Last-Event-ID, the last event it saw. The stream resumes there.
// It resumed at ?after's older id and sent the events in between again:
// the page's live feed listed them twice.
func TestLiveStreamResumesFromTheBrowsersLastEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	q := b.queue(t, "q")
	first := b.add(t, "q", "one", nil, nil)
	second := b.add(t, "q", "two", nil, nil)
	evs, err := b.rdb.XRange(ctx, b.prefix+":q:events", "-", "+").Result()
	require.NoError(t, err)
	var afterFirst, afterSecond string // the last event of each add
	for _, e := range evs {
		switch e.Values["jobId"] {
		case first:
			afterFirst = e.ID
		case second:
			afterSecond = e.ID
		}
	}
	require.NotEmpty(t, afterFirst)
	require.NotEmpty(t, afterSecond)
	_ = q
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, b.url+"api/queues/q/events?after="+afterFirst, nil)
	require.NoError(t, err)
	req.Header.Set("Last-Event-ID", afterSecond)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	third := b.add(t, "q", "three", nil, nil)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "data: {") {
			continue
		}
		require.NotContains(t, l, `"jobId":"`+second+`"`, "an event the browser had seen, sent again")
		if strings.Contains(l, `"jobId":"`+third+`"`) {
			return
		}
	}
	t.Fatalf("the stream ended before job %s's events: %v", third, sc.Err())
}
