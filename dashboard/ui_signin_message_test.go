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

// TestUISignInOneAttemptAtATime: a sign-in sent twice before the first
// answer (Enter pressed twice, or Enter then a click) counts once: each
// sent its own login, two failed sign-ins toward the lockout for one
// wrong password. A refusal empties the password field and puts the
// cursor in it, for the next try.
func TestUISignInOneAttemptAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "otto"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "not-the-password"))
	evalJS[bool](t, tab, `(() => { const f = document.querySelector('form'); f.requestSubmit(); f.requestSubmit(); return true; })()`)
	testkit.WaitFor(t, 20*time.Second, "the reason", func() bool {
		return text(t, tab, `#signin-message`) != ""
	})
	time.Sleep(300 * time.Millisecond) // a second login, if sent, is audited by now
	n := 0
	for _, e := range b.audit.all() {
		if e.Action == "login" {
			n++
		}
	}
	require.Equal(t, 1, n, "logins sent for one wrong password")
	require.Equal(t, "", evalJS[string](t, tab, `document.querySelector('input[name="password"]').value`))
	require.Equal(t, "password", evalJS[string](t, tab, `document.activeElement.name`))
}

// TestUISignInRefusedAgainIsSaidAgain: a second refusal that reads as the
// first (the same wrong password typed again) is put in the page anew and
// counted, so a screen reader says it again and the page shows that the
// second try was made. The line stayed as it was: an alert whose text
// does not change is not announced, and the page looked as if Sign in had
// not been pressed.
func TestUISignInRefusedAgainIsSaidAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	tab := browser(t)
	refuse := func() {
		t.Helper()
		do(t, tab, chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "not-a-token-0123456789"),
			chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	}
	do(t, tab, chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	refuse()
	testkit.WaitFor(t, 20*time.Second, "the first refusal", func() bool { return text(t, tab, `#signin-message`) != "" })
	first := text(t, tab, `#signin-message`)
	require.Equal(t, "wrong credentials", first)
	evalJS[bool](t, tab, `(() => { document.querySelector('#signin-message').dataset.seen = '1'; return true; })()`)
	refuse()
	testkit.WaitFor(t, 20*time.Second, "the second refusal", func() bool {
		return evalJS[bool](t, tab, `!document.querySelector('#signin-message').dataset.seen`)
	})
	require.Equal(t, "wrong credentials (refused 2 times in a row)", text(t, tab, `#signin-message`))
	require.Equal(t, "alert", evalJS[string](t, tab, `document.querySelector('#signin-message').getAttribute('role')`))
}

// TestUISignInStartsInTheTokenField: the sign-in page, at first and after
// a session ended, puts the cursor in the token field, so typing signs in.
// The focus was on the page's body: the first keys typed went nowhere.
func TestUISignInStartsInTheTokenField(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	require.Equal(t, "token", evalJS[string](t, tab, `document.activeElement.name || document.activeElement.tagName`))
	do(t, tab, chromedp.KeyEvent(operatorToken+"\r"), chromedp.WaitVisible(chromedp.CSS(`#whoami`)))
	require.Equal(t, "otto (operator)", text(t, tab, `#whoami`))
}
