package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUIJobWithHugeData: a job whose data is 5 MB opens at once. Its page
// laid the whole text out in one box: 7 s before the page showed, and a
// freeze again at every 10 s refresh. The box now holds the first 65,536
// characters and says how many there are; "Show all" shows the rest.
func TestUIJobWithHugeData(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	blob := strings.Repeat("0123456789abcdef", 5<<16) // 5 MB
	id := b.add(t, "big", "import", map[string]string{"blob": blob}, nil)

	tab := browser(t)
	start := time.Now()
	do(t, tab, chromedp.Navigate(b.url+"#/q/big/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	t.Logf("the job page drew in %v", time.Since(start))
	shown := evalJS[int](t, tab, `document.querySelector('#job-data').textContent.length`)
	require.Less(t, shown, 70_000, "the page laid out the whole data")
	full := len("{\n  \"blob\": \"\"\n}") + len(blob)
	require.Equal(t, full, evalJS[int](t, tab, `Number(document.querySelector('#job-data').dataset.cut)`))
	require.Contains(t, text(t, tab, `.cut-note`), "Showing the first 65,536 of 5,242,896 characters.")
	do(t, tab, chromedp.Click(chromedp.CSS(`.cut-note button`)))
	require.Equal(t, full, evalJS[int](t, tab, `document.querySelector('#job-data').textContent.length`))
	require.True(t, evalJS[bool](t, tab, `document.querySelector('#job-data').textContent.endsWith('0123456789abcdef"\n}')`))
}

// TestUIShowAllKeepsTheFocus: "Show all" pressed from the keyboard moves
// the focus to the text it shows, which the keyboard then scrolls. The
// button went away with the focus, which fell back to the page's start:
// the next Tab began again at the header.
func TestUIShowAllKeepsTheFocus(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "big", "import", map[string]string{"blob": strings.Repeat("x", 100_000)}, nil)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/big/job/"+id), chromedp.WaitVisible(chromedp.CSS(`.cut-note button`)),
		chromedp.Focus(chromedp.CSS(`.cut-note button`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitNotPresent(chromedp.CSS(`.cut-note`)))
	require.Equal(t, "job-data", evalJS[string](t, tab, `document.activeElement.id`))
	require.Equal(t, "0", evalJS[string](t, tab, `document.activeElement.getAttribute('tabindex')`), "a tab stop")
}
