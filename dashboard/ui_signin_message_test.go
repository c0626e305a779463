package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUISignInSaysWhyItFailed: a refused sign-in's reason is in a live
// region, so a screen reader says it; the grey line under the form was
// silent, and a user who cannot see it pressed Sign in and heard nothing.
func TestUISignInSaysWhyItFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "otto"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "not-the-password"),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	testkit.WaitFor(t, 20*time.Second, "the reason", func() bool {
		return evalJS[string](t, tab, `[...document.querySelectorAll('form p')].map((p) => p.textContent).join('')`) != ""
	})
	require.True(t, evalJS[bool](t, tab, `(() => { const p = [...document.querySelectorAll('form p')].find((p) => p.textContent);
		return !!p.closest('[role="alert"], [aria-live="assertive"], [aria-live="polite"], [role="status"]'); })()`),
		"the refusal is not in a live region")
}
