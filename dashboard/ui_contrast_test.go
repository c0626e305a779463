package dashboard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// lowContrast lists the page's visible text whose colour on its background
// is under WCAG AA's ratio: 4.5:1, or 3:1 for large text (24px, or 18.66px
// bold). SVG charts are left out (their labels are not the text checked).
const lowContrast = `(() => {
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const L = (c) => 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  const bgOf = (n) => { for (; n && n.nodeType === 1; n = n.parentElement) { const c = parse(getComputedStyle(n).backgroundColor); if (c && c.a > 0.5) return c; } return { r: 255, g: 255, b: 255, a: 1 }; };
  const bad = new Map();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.textContent.trim()) continue;
    const n = t.parentElement;
    if (!n || n.closest('svg, noscript') || !n.offsetParent && getComputedStyle(n).position !== 'fixed') continue;
    const cs = getComputedStyle(n);
    if (cs.visibility === 'hidden' || Number(cs.opacity) < 0.99) continue;
    const fg = parse(cs.color), bg = bgOf(n);
    const ratio = (Math.max(L(fg), L(bg)) + 0.05) / (Math.min(L(fg), L(bg)) + 0.05);
    const size = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) {
      const key = n.tagName.toLowerCase() + '.' + [...n.classList].join('.') + ' ' + cs.color + ' on rgb(' + bg.r + ',' + bg.g + ',' + bg.b + ') ' + ratio.toFixed(2);
      if (!bad.has(key)) bad.set(key, t.textContent.trim().slice(0, 30));
    }
  }
  return [...bad].map(([k, v]) => k + ' "' + v + '"');
})()`

// TestUIBadgesReadable: the retry-state and queue badges are readable: their
// text has WCAG AA contrast on their backgrounds. "waiting for backoff" and
// "paused" read at 3.07:1 (orange on cream), "completed" at 3.77:1,
// "stalled ×1" at 4.26:1 and "failed for good" at 4.47:1.
func TestUIBadgesReadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "ct", func(_ context.Context, job *drover.Job) (any, error) {
		if job.Name == "ok" {
			return "done", nil
		}
		return nil, errors.New("nope")
	}, nil)
	backoff := b.add(t, "ct", "retry", nil, &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}})
	failed := b.add(t, "ct", "fail", nil, &drover.JobOptions{Attempts: 1})
	done := b.add(t, "ct", "ok", nil, nil)
	b.waitState(t, "ct", failed, drover.StateFailed)
	b.waitState(t, "ct", done, drover.StateCompleted)
	b.waitState(t, "ct", backoff, drover.StateDelayed)
	// A stall recovery, as a stalled checker (Node's or drover's) counts it.
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":ct:"+done, "stc", 1).Err())
	require.NoError(t, b.queue(t, "ct").Pause(ctx))

	tab := browser(t)
	for _, page := range []struct{ hash, ready string }{
		{"#/", `tr[data-queue="ct"] .rs-paused`},
		{"#/q/ct?state=delayed", `#jobs .rs-waiting-for-backoff`},
		{"#/q/ct?state=failed", `#jobs .rs-failed`},
		{"#/q/ct?state=completed", `#jobs .rs-stalled-recovered`},
		{"#/q/ct/job/" + done, `h1 .rs-completed`},
	} {
		do(t, tab, chromedp.Navigate(b.url+page.hash), chromedp.WaitVisible(chromedp.CSS(page.ready)))
		require.Empty(t, evalJS[[]string](t, tab, lowContrast), page.hash)
	}
}
