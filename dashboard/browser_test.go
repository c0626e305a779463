package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// The browser tests drive Debian's headless Chromium with chromedp. One
// browser serves the package; each test gets its own tab.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserErr    error
	browserCancel []context.CancelFunc
	browserDir    string
)

// browser returns a new tab, closed when the test ends. A missing Chromium
// fails the test with how to install it: browser tests never skip.
func browser(t *testing.T) context.Context {
	t.Helper()
	browserOnce.Do(startBrowser)
	if browserErr != nil {
		t.Fatalf("browser: %v", browserErr)
	}
	// A browser context of its own: cookies ignore the port, so tabs of
	// one context share every 127.0.0.1 dashboard's session cookie, and a
	// test signing in on its server signed out a parallel test on another
	// (TestUIReloadWhileRedisIsDown found the sign-in form after an
	// outage, CI at 7fec44b).
	tab, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first call opens the tab, bound to the context it gets: give it
	// the tab's own, not a step's that ends early.
	require.NoError(t, chromedp.Do(tab))
	return tab
}

// sameBrowserTab opens another tab in tab's browser context, sharing its
// cookies, as a second tab of one operator's browser does.
func sameBrowserTab(t *testing.T, tab context.Context) context.Context {
	t.Helper()
	second, cancel := chromedp.NewContext(tab)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(second))
	return second
}

func startBrowser() {
	path, err := chromiumPath()
	if err != nil {
		browserErr = err
		return
	}
	browserDir, err = os.MkdirTemp("", "drover-chromium-")
	if err != nil {
		browserErr = err
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		// No OS keyring over D-Bus: the sign-in form's password field would
		// otherwise stall the page while Chromium looks for one.
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.UserDataDir(browserDir),
		chromedp.WindowSize(1280, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	browserCancel = []context.CancelFunc{cancelCtx, cancelAlloc}
	// Start the browser now, so tests time their own work only. The first
	// Do owns the browser: its context must live as long as the browser.
	if err := chromedp.Do(ctx); err != nil {
		browserErr = fmt.Errorf("start chromium at %s: %w", path, err)
		return
	}
	browserCtx = ctx
}

func chromiumPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("chromium not found on PATH; install it with `apt-get install -y chromium` (scripts/ensure-deps.sh does this)")
}

// stopBrowser closes the browser, from TestMain.
func stopBrowser() {
	for _, c := range browserCancel {
		c()
	}
	if browserDir != "" {
		_ = os.RemoveAll(browserDir)
	}
}

// artifactsDir is where browser tests write screenshots: $DROVER_ARTIFACTS,
// else artifacts/ at the repository root (git-ignored).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DROVER_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

func screenshot(t *testing.T, tab context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(step(t, tab), chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(artifactsDir(t), name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	return path
}

// do runs actions; on failure it saves a screenshot of the tab and the
// page's text to the artifacts dir, to see what the browser saw. Each call
// gets a minute: at load 40 (a fresh-clone CI beside other work) a
// navigation and its first rendering outlasted 30 s.
func do(t *testing.T, tab context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancelStep := context.WithTimeout(tab, time.Minute)
	defer cancelStep()
	err := chromedp.Do(step, actions...)
	if err == nil {
		return
	}
	dbg, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	name := filepath.Join(artifactsDir(t), "failed-"+filepath.Base(t.Name())+".png")
	if png, serr := chromedp.Run(dbg, chromedp.FullScreenshot(100)); serr == nil {
		_ = os.WriteFile(name, png, 0o644)
	} else {
		name = "none: " + serr.Error()
	}
	text, terr := chromedp.Run(dbg, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	if terr != nil {
		text = "unreadable: " + terr.Error()
	}
	t.Fatalf("browser: %v\nscreenshot: %s\npage:\n%s", err, name, text)
}

// text reads the text of the first element matching the CSS selector sel
// ("" when there is none).
func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	step, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	js := fmt.Sprintf(`(() => { const n = document.querySelector(%q); return n ? n.textContent : ""; })()`, sel)
	s, err := chromedp.Run(step, chromedp.Evaluate[string](js))
	require.NoError(t, err, sel)
	return s
}

// step bounds one browser call, so a query that never matches fails the
// test in seconds instead of hanging until the tab's deadline.
func step(t *testing.T, tab context.Context) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestBrowserTabsKeepTheirOwnCookies: two tests' tabs, signed in on two
// dashboards (one host, two ports), stay signed in each. With one cookie
// jar, the second sign-in replaced the first tab's session cookie and its
// next request answered 401: the sign-in form where a parallel test
// expected its page.
func TestBrowserTabsKeepTheirOwnCookies(t *testing.T) {
	t.Parallel()
	signIn := func(url string) context.Context {
		tab := browser(t)
		do(t, tab, chromedp.Navigate(url),
			chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
			chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#whoami`)))
		return tab
	}
	first := signIn(setup(t, &dashboard.Options{Auth: testUsers()}).url)
	signIn(setup(t, &dashboard.Options{Auth: testUsers()}).url)
	do(t, first, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#whoami`)))
	require.Equal(t, "otto (operator)", text(t, first, `#whoami`))
}
