package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUILongAndRightToLeftNames: a job named with 2,600 Arabic characters
// in a queue with a 1,020-character name. Its page showed the whole name
// as a heading of 35 lines and the queue's in its breadcrumbs: the job's
// state and buttons began below the first screen. Names now show at most
// two lines (a crumb one), all of the name in the title, each in its own
// direction (dir=auto).
func TestUILongAndRightToLeftNames(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	queue := strings.Repeat("verylongqueuename", 60)
	name := "إرسال " + strings.Repeat("اسم-طويل-جدا ", 200)
	q, err := drover.NewQueue(b.rdb, queue, &drover.QueueOptions{Prefix: b.prefix})
	require.NoError(t, err)
	res, err := q.Add(context.Background(), name, nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/"+queue+"/job/"+res.Job.ID), chromedp.WaitVisible(chromedp.CSS(`[data-part="facts"] button`)))
	height := evalJS[float64](t, tab, `window.innerHeight`)
	buttons := evalJS[float64](t, tab, `document.querySelector('[data-part="facts"] button').getBoundingClientRect().bottom`)
	require.Less(t, buttons, height, "the job's buttons are below the first screen")
	require.Equal(t, name, evalJS[string](t, tab, `document.querySelector('h1 .name.muted').title`), "the title has all of the name")
	require.Equal(t, "auto", evalJS[string](t, tab, `document.querySelector('h1 .name.muted').dir`))
	require.Equal(t, queue, evalJS[string](t, tab, `document.querySelector('.crumbs a[href^="#/q/"]').title`))

	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue]`)))
	require.Less(t, evalJS[float64](t, tab, `document.querySelector('#queues tr[data-queue]').getBoundingClientRect().height`), 100.0, "the overview's row")

	do(t, tab, chromedp.Navigate(b.url+"#/q/"+queue+"?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	require.Less(t, evalJS[float64](t, tab, `document.querySelector('h1').getBoundingClientRect().height`), 100.0, "the queue's heading")
	require.Equal(t, queue, text(t, tab, `h1 .name`))
}
