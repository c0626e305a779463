package dashboard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIDoubleClickAsksOnce: "Clean completed…" clicked twice before its
// preview came back opened two dialogs, one behind the other; confirming
// the first removed the 6 jobs it named, and the second, still there with
// "Remove 6", removed the job that had aged past the hour since (7 in all
// for one operator's "Remove 6"). A button's second click while its first
// is under way does nothing now, and a dialog never opens behind another.
func TestUIDoubleClickAsksOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "old", "keep", nil, &drover.JobOptions{Delay: time.Hour}) // the queue exists
	k := b.prefix + ":old:"
	finished := func(id string, ago time.Duration) {
		t.Helper()
		at := time.Now().Add(-ago).UnixMilli()
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "n", "data", "{}", "opts", "{}", "timestamp", at, "finishedOn", at, "returnvalue", "null").Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redis.Z{Score: float64(at), Member: id}).Err())
	}
	for n := range 6 {
		finished(fmt.Sprintf("c%d", n), time.Duration(6-n)*time.Hour)
	}
	completed := func() int64 {
		n, err := b.rdb.ZCard(ctx, k+"completed").Result()
		require.NoError(t, err)
		return n
	}
	clean := chromedp.Search(`//button[text()="Clean completed…"]`)
	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/old"),
		chromedp.WaitVisible(clean),
	)
	// Two clicks before the preview answers.
	evalJS[bool](t, tab, `(() => { const b = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Clean completed…'); b.click(); b.click(); return true; })()`)
	do(t, tab,
		chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.Sleep(300*time.Millisecond), // the second click's preview, if any
	)
	require.Equal(t, 1, evalJS[int](t, tab, `document.querySelectorAll('.modal').length`), "one dialog")
	require.Equal(t, "Remove 6", text(t, tab, `.modal [data-confirm="yes"]`))
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)))
	testkit.WaitFor(t, 10*time.Second, "the clean", func() bool { return completed() == 0 })
	finished("crossed", 2*time.Hour) // aged past the hour after the clean
	do(t, tab, chromedp.Sleep(300*time.Millisecond))
	require.Equal(t, 0, evalJS[int](t, tab, `document.querySelectorAll('.modal').length`), "no second dialog")
	require.EqualValues(t, 1, completed(), "the job that crossed later stays")
}
