package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestUIOverviewFilterByName: with 300 queues, the overview finds one by
// name. It had no filter: the browser's find-in-page over a table redrawn
// every 5 seconds. The filter keeps the keyboard while it narrows the
// list, survives the refresh and a reload (it is in the address), and says
// when no queue matches.
func TestUIOverviewFilterByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	for i := range 300 {
		q, err := drover.NewQueue(b.rdb, fmt.Sprintf("billing-%03d", i), &drover.QueueOptions{Prefix: b.prefix})
		require.NoError(t, err)
		_, err = q.Add(ctx, "x", nil, nil)
		require.NoError(t, err)
	}
	b.add(t, "Émails-طابور", "x", nil, nil)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="billing-299"]`)))
	require.Equal(t, 301, countOf(t, tab, `#queues tr[data-queue]`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#queue-search`)), chromedp.SendKeys(chromedp.CSS(`#queue-search`), "ÉMAILS"))
	testkit.WaitFor(t, 10*time.Second, "the list to narrow", func() bool { return countOf(t, tab, `#queues tr[data-queue]`) == 1 })
	require.Contains(t, text(t, tab, `#main p.muted`), `301 queues, 1 with "ÉMAILS" in the name`)
	require.Equal(t, "#/?q=%C3%89MAILS", evalJS[string](t, tab, `location.hash`))

	do(t, tab, chromedp.SendKeys(chromedp.CSS(`#queue-search`), strings.Repeat(kb.Backspace, 6)+"-29"))
	testkit.WaitFor(t, 10*time.Second, "billing-29x", func() bool { return countOf(t, tab, `#queues tr[data-queue]`) == 10 })
	// The 5 s refresh keeps the filter and the keyboard in the box.
	time.Sleep(6 * time.Second)
	require.Equal(t, 10, countOf(t, tab, `#queues tr[data-queue]`))
	require.Equal(t, "queue-search", evalJS[string](t, tab, `document.activeElement.id`))

	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="billing-290"]`)))
	require.Equal(t, 10, countOf(t, tab, `#queues tr[data-queue]`))
	require.Equal(t, "-29", evalJS[string](t, tab, `document.querySelector('#queue-search').value`))

	do(t, tab, chromedp.SendKeys(chromedp.CSS(`#queue-search`), kb.End+"zzz"), chromedp.WaitVisible(chromedp.CSS(`#no-queue-match`)))
	// The keys arrive one by one: the line first says "-29z" (a loaded
	// machine read it then, in a run of the whole package), then "-29zzz".
	testkit.WaitFor(t, 10*time.Second, "the line to name the whole filter", func() bool {
		return text(t, tab, `#no-queue-match`) == `No queue has "-29zzz" in its name.`
	})
}
