package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// readsLeftToRight is a script taking a CSS selector and a word: it finds
// the word in a text node under the selected element and answers how far
// right of its first letter its last letter is drawn (negative: the word
// is drawn reversed, right to left).
const readsLeftToRight = `(sel, word) => {
  const root = document.querySelector(sel);
  if (!root) return 0;
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const i = n.data.indexOf(word);
    if (i < 0) continue;
    const at = (k) => { const r = document.createRange(); r.setStart(n, k); r.setEnd(n, k + 1); return r.getBoundingClientRect().left; };
    return at(i + word.length - 1) - at(i);
  }
  return 0;
}`

func wordDirection(t *testing.T, tab context.Context, sel, word string) float64 {
	t.Helper()
	return evalJS[float64](t, tab, `(`+readsLeftToRight+`)(`+jsString(sel)+`, `+jsString(word)+`)`)
}

// TestUIBidiIdsAreIsolated: a job id holding a right-to-left override
// (U+202E), put into a sentence of a dialog, a toast, the live feed or
// the window's title, stays in its own direction: the words after it are
// drawn left to right. The override ran to the end of the sentence, so
// "Job ‮abc promoted." read "Job .detomorp cba".
func TestUIBidiIdsAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	const id = "\u202eabc"
	q := b.queue(t, "bidi")
	_, err := q.Add(context.Background(), "\u202ename", nil, &drover.JobOptions{JobID: id, Delay: time.Hour})
	require.NoError(t, err)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/bidi/job/"+strings.ReplaceAll(id, "\u202e", "%E2%80%AE")),
		chromedp.WaitVisible(chromedp.CSS(`[data-part="facts"] button`)))
	require.True(t, strings.HasPrefix(evalJS[string](t, tab, `document.title`), `job \u202eabc · bidi`), "the title shows the id's override as an escape")

	do(t, tab, chromedp.Click(chromedp.Search(`//button[starts-with(text(),"Run now")]`)), chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)))
	require.Positive(t, wordDirection(t, tab, `.modal-body`, "keeping"), "the dialog's words after the id")
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	testkit.WaitFor(t, 30*time.Second, "the toast", func() bool { return strings.Contains(text(t, tab, `#toasts`), "promoted.") })
	require.Positive(t, wordDirection(t, tab, `#toasts`, "promoted"), "the toast's words after the id")
	testkit.WaitFor(t, 30*time.Second, "the feed's waiting event", func() bool { return strings.Contains(text(t, tab, `.feed`), "(from delayed)") })
	require.Positive(t, wordDirection(t, tab, `.feed`, "delayed"), "the feed's words after the id")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
