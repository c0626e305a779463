package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUISignOutWhileRedisIsDown: an operator signs out while Redis, which
// keeps the sessions, does not answer. The page says the session could not
// be ended, and the browser no longer holds it: once Redis is back, a
// reload asks to sign in. The page reloaded as if signed out, said it
// could not reach the API, and came back signed in once Redis answered
// (the 503 left the cookie in place).
func TestUISignOutWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	_, proxy, base := proxiedDashboard(t, outageClient, &dashboard.Options{Auth: testUsers()})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(base+"#/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#whoami`)))
	proxy.Refuse()
	proxy.ResetAll()
	do(t, tab, chromedp.Click(chromedp.Search(`//button[text()="Sign out"]`)))
	testkit.WaitFor(t, 30*time.Second, "the page to say the sign-out is not finished", func() bool {
		return strings.Contains(text(t, tab, `#signout-failed`), "the session could not be ended")
	})
	require.NoError(t, proxy.Listen())
	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	require.Equal(t, "", text(t, tab, `#whoami`), "signed out")
}
