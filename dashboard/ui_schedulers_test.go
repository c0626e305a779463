package dashboard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// shotTo saves a screenshot of the tab as name in $DROVER_SCREENSHOTS (the
// README's: DROVER_SCREENSHOTS=../docs/screenshots), else the artifacts dir.
func shotTo(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("DROVER_SCREENSHOTS")
	if dir == "" {
		screenshot(t, tab, name)
		return
	}
	png, err := chromedp.Run(step(t, tab), chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
}

// TestUISchedulers: the job schedulers page lists a queue's schedulers
// (id, cron pattern or interval, time zone, next run, iterations, job
// name), and an operator removes one: confirmed, gone from Redis, audited.
func TestUISchedulers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	q := b.queue(t, "reports")
	_, err := q.UpsertJobScheduler(ctx, "nightly-sales", drover.RepeatOptions{Pattern: "0 3 * * *", TZ: "Europe/Paris"},
		&drover.JobTemplate{Name: "sales-report"})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "quarter-hour-sync", drover.RepeatOptions{Every: 15 * time.Minute, Limit: 96},
		&drover.JobTemplate{Name: "sync-ledger"})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "monday-digest", drover.RepeatOptions{Pattern: "30 8 * * 1", TZ: "America/New_York"},
		&drover.JobTemplate{Name: "weekly-digest"})
	require.NoError(t, err)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/reports"),
		chromedp.WaitVisible(chromedp.CSS(`#schedulers-link`)),
		chromedp.Click(chromedp.CSS(`#schedulers-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#schedulers tr[data-scheduler="nightly-sales"]`)),
	)
	row := text(t, tab, `#schedulers tr[data-scheduler="nightly-sales"]`)
	for _, want := range []string{"cron 0 3 * * *", "Europe/Paris", "sales-report", "in "} {
		require.Contains(t, row, want)
	}
	next, err := drover.NextRun("0 3 * * *", "Europe/Paris", time.Now())
	require.NoError(t, err)
	shown := evalJS[string](t, tab, `document.querySelector('#schedulers tr[data-scheduler="nightly-sales"] [data-next]').dataset.next`)
	ms, err := strconv.ParseInt(shown, 10, 64) // epoch ms, as the API's
	require.NoError(t, err)
	at := time.UnixMilli(ms)
	require.True(t, at.Equal(next), "next run %s, want %s", at, next)
	row = text(t, tab, `#schedulers tr[data-scheduler="quarter-hour-sync"]`)
	for _, want := range []string{"every 15m", "1 of 96", "sync-ledger"} {
		require.Contains(t, row, want)
	}
	require.Equal(t, "quarter-hour-sync",
		evalJS[string](t, tab, `document.querySelector('#schedulers tr[data-scheduler]').dataset.scheduler`), "soonest first")
	shotTo(t, tab, "schedulers.png")

	do(t, tab,
		chromedp.Click(chromedp.CSS(`#schedulers [data-remove="nightly-sales"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#schedulers tr[data-scheduler="nightly-sales"]`)),
	)
	n, err := q.GetJobSchedulersCount(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	e := b.audit.last(t)
	require.Equal(t, "remove-scheduler", e.Action)
	require.Equal(t, "reports", e.Queue)
	require.Equal(t, "scheduler=nightly-sales", e.Detail)
	require.Equal(t, "ok", e.Outcome)
}

// TestUIThroughputFromMetrics: with a worker writing BullMQ's metrics the
// throughput chart is drawn from them and says so; a queue whose workers
// write none falls back to the finished sets and says that.
func TestUIThroughputFromMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	proc := func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "bad" {
			return nil, errors.New("no")
		}
		return "ok", nil
	}
	b.startWorker(t, "metered", proc, &drover.WorkerOptions{Metrics: &drover.MetricsOptions{MaxDataPoints: 120}})
	var last string
	for range 3 {
		b.add(t, "metered", "good", nil, nil)
	}
	for range 2 {
		last = b.add(t, "metered", "bad", nil, &drover.JobOptions{Attempts: 1})
	}
	b.waitState(t, "metered", last, drover.StateFailed)
	// A completed job no metered worker counted: the chart must not show it.
	require.NoError(t, b.rdb.ZAdd(context.Background(), b.prefix+":metered:completed", redisZ(float64(time.Now().UnixMilli()), "uncounted")).Err())
	plain := b.add(t, "plain", "good", nil, nil)
	b.startWorker(t, "plain", proc, nil)
	b.waitState(t, "plain", plain, drover.StateCompleted)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/metered?state=completed"), chromedp.WaitVisible(chromedp.CSS(`#throughput-chart`)))
	require.Equal(t, "metrics", evalJS[string](t, tab, `document.querySelector('#throughput-facts').dataset.source`))
	require.Contains(t, text(t, tab, `#throughput-facts`), "3 completed and 2 failed in the last hour")
	require.Contains(t, text(t, tab, `#throughput-facts`), "From BullMQ's per-minute metrics lists")
	require.Equal(t, 3, evalJS[int](t, tab, `[...document.querySelectorAll('#throughput-chart rect[data-completed]')].reduce((n, r) => n + Number(r.dataset.completed), 0)`))
	require.Equal(t, 2, evalJS[int](t, tab, `[...document.querySelectorAll('#throughput-chart rect[data-failed]')].reduce((n, r) => n + Number(r.dataset.failed), 0)`))

	do(t, tab, chromedp.Navigate(b.url+"#/q/plain?state=completed"), chromedp.WaitVisible(chromedp.CSS(`#throughput-facts[data-source="finished-sets"]`)))
	require.Contains(t, text(t, tab, `#throughput-facts`), "1 completed and 0 failed in the last hour")
	require.Contains(t, text(t, tab, `#throughput-facts`), "No worker writes BullMQ's metrics")
}

// TestUISchedulerRemovedKeepsTheFocus: a job scheduler removed from the
// keyboard leaves the focus on the page's heading. Its row went with the
// focus, which fell back to the page's body: the next Tab began again at
// the header.
func TestUISchedulerRemovedKeepsTheFocus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "reports")
	for _, id := range []string{"nightly", "weekly"} {
		_, err := q.UpsertJobScheduler(ctx, id, drover.RepeatOptions{Pattern: "0 3 * * *"}, &drover.JobTemplate{Name: id})
		require.NoError(t, err)
	}
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/reports/schedulers"), chromedp.WaitVisible(chromedp.CSS(`[data-remove="nightly"]`)),
		chromedp.Focus(chromedp.CSS(`[data-remove="nightly"]`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.Focus(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.KeyEvent(kb.Enter), chromedp.WaitNotPresent(chromedp.CSS(`[data-remove="nightly"]`)))
	testkit.WaitFor(t, 10*time.Second, "the focus to land on the heading", func() bool {
		return evalJS[string](t, tab, `document.activeElement.tagName`) == "H1"
	})
	require.Equal(t, "Job schedulers of reports", text(t, tab, `h1`))
}
