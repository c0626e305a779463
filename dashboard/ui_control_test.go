package dashboard_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// evalJS runs js in the tab and decodes its result into a T.
func evalJS[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(step(t, tab), chromedp.Evaluate[T](js))
	require.NoError(t, err, js)
	return v
}

// TestUIBulkRetry covers issue 12's defects 1, 2 and 6: the bulk retry uses
// exactly the filter the boxes show (typed, Filter not pressed), its
// confirmation gives the count and a sample, it keeps attempts by default,
// leaves unrecoverable failures alone unless asked, and runs as a background
// operation whose progress the page shows and whose start and end are
// audited.
func TestUIBulkRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	b.startWorker(t, "pay", func(ctx context.Context, job *drover.Job) (any, error) {
		switch job.Name {
		case "declined":
			return nil, errors.New("card declined")
		case "fraud":
			return nil, drover.Unrecoverable(errors.New("card declined: fraud suspected"))
		}
		return nil, errors.New("gateway timeout")
	}, nil)
	var declined, others []string
	for range 3 {
		declined = append(declined, b.add(t, "pay", "declined", nil, &drover.JobOptions{Attempts: 1}))
	}
	for range 2 {
		others = append(others, b.add(t, "pay", "timeout", nil, &drover.JobOptions{Attempts: 1}))
	}
	fraud := b.add(t, "pay", "fraud", nil, &drover.JobOptions{Attempts: 5})
	for _, id := range append(append(append([]string{}, declined...), others...), fraud) {
		b.waitState(t, "pay", id, drover.StateFailed)
	}
	q := b.queue(t, "pay")
	require.NoError(t, q.Pause(ctx)) // retried jobs stay in wait

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/pay?state=failed"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"]`, fraud))),
		// Typed, not applied: the list still shows every failed job.
		chromedp.SendKeys(chromedp.CSS(`input[name="reason"]`), "declined"),
	)
	require.False(t, evalJS[bool](t, tab, `document.querySelector('input[name="reset"]').checked`), "fresh attempts are opt-in")
	require.False(t, evalJS[bool](t, tab, `document.querySelector('input[name="include-unrecoverable"]').checked`), "unrecoverable jobs are opt-in")
	require.Equal(t, 6, evalJS[int](t, tab, `document.querySelectorAll('#jobs tr[data-job]').length`))
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#bulk-retry`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #retry-preview`)),
	)
	preview := text(t, tab, `.modal #retry-preview`)
	require.Contains(t, preview, `Retry 3 failed jobs matching reason="declined", keeping their spent attempts?`)
	require.Contains(t, preview, "1 job that failed as unrecoverable is left out.")
	sample := evalJS[[]string](t, tab, `[...document.querySelectorAll('.modal [data-sample]')].map(r => r.dataset.sample)`)
	require.ElementsMatch(t, declined, sample)
	require.Equal(t, "Retry 3", text(t, tab, `.modal [data-confirm="yes"]`))
	// Another card is declined while the dialog is open: "Retry 3" retries
	// the three it showed, not a fourth it never did.
	require.NoError(t, q.Resume(ctx))
	late := b.add(t, "pay", "declined", nil, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "pay", late, drover.StateFailed)
	require.NoError(t, q.Pause(ctx))
	do(t, tab,
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#operations [data-operation][data-status="done"]`)),
	)
	require.Contains(t, text(t, tab, `#operations [data-operation]`), "done: retried 3 of 3")
	st, err := q.GetJobState(ctx, late)
	require.NoError(t, err)
	require.Equal(t, drover.StateFailed, st, "failed after the preview: not in the confirmed retry")
	for _, id := range declined {
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st, id)
		j, err := q.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, 1, j.AttemptsMade, "attempts kept")
	}
	for _, id := range append(others, fraud) {
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateFailed, st, id)
	}
	var actions []string
	for _, e := range b.audit.all() {
		actions = append(actions, e.Action+":"+e.Outcome)
		if e.Action == "retry-jobs-finished" {
			require.Equal(t, 3, e.Jobs)
		}
	}
	require.Equal(t, []string{"retry-jobs:ok", "retry-jobs:ok", "retry-jobs-finished:ok"}, actions, "dry run, start, end")
	screenshot(t, tab, "bulk-retry-done.png")
}

// TestBulkRetryCancel: a running bulk retry stops when cancelled, says so,
// and the cancel and the end are audited.
func TestBulkRetryCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	b.startWorker(t, "bulk", func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("down")
	}, &drover.WorkerOptions{Concurrency: 50})
	const n = 1000
	q := b.queue(t, "bulk")
	for range n {
		b.add(t, "bulk", "x", nil, nil)
	}
	testkit.WaitFor(t, 60*time.Second, "every job to fail", func() bool {
		c, err := q.GetJobCounts(ctx, drover.StateFailed)
		require.NoError(t, err)
		return c[drover.StateFailed] == n
	})
	require.NoError(t, q.Pause(ctx))
	c := b.as(t, "")
	var op dashboard.Operation
	require.Equal(t, 202, c.post("api/queues/bulk/retry", dashboard.RetryJobsRequest{}, &op))
	// Chunks of 100 with a pause between: cancel after the first.
	testkit.WaitFor(t, 20*time.Second, "the first chunk", func() bool {
		require.Equal(t, 200, c.get("api/operations/"+op.ID, &op))
		return op.Done > 0 || op.Status != dashboard.OperationRunning
	})
	// The cancel request's entry is slow to record: the operation's end
	// entry still comes after it (it came first in CI at 0e9f0bc).
	b.audit.holdBack(func(e dashboard.AuditEntry) {
		if e.Action == "cancel-operation" {
			time.Sleep(300 * time.Millisecond)
		}
	})
	require.Equal(t, 200, c.post("api/operations/"+op.ID+"/cancel", nil, nil))
	testkit.WaitFor(t, 20*time.Second, "the operation to end", func() bool {
		require.Equal(t, 200, c.get("api/operations/"+op.ID, &op))
		return op.Status != dashboard.OperationRunning
	})
	require.Equal(t, dashboard.OperationCancelled, op.Status)
	require.Less(t, op.Retried, n)
	require.Equal(t, n, op.Total)
	counts, err := q.GetJobCounts(ctx, drover.StateFailed)
	require.NoError(t, err)
	require.EqualValues(t, n-op.Retried, counts[drover.StateFailed])
	var actions []string
	for _, e := range b.audit.all() {
		actions = append(actions, e.Action+":"+e.Outcome+":"+e.Queue+":"+e.JobID)
	}
	// The operation's id is no job id: the entries name the queue, no job.
	require.Equal(t, []string{"retry-jobs:ok:bulk:", "cancel-operation:ok:bulk:", "retry-jobs-finished:cancelled:bulk:"}, actions)
}

// TestUITimelineTruthful covers defects 4 and 5: the drawn timeline of a
// first-try completion does not claim a Node worker ran it, a stall before
// a recovery is drawn, a long history keeps its newest attempt in view with
// the older ones folded and the dropped ones named, its legend is whole, and
// an unrecoverable failure says so in the list, the badge, the attempts and
// the picture.
func TestUITimelineTruthful(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	b.startWorker(t, "tl", func(ctx context.Context, job *drover.Job) (any, error) {
		switch job.Name {
		case "ok":
			return "done", nil
		case "fraud":
			return nil, drover.Unrecoverable(errors.New("fraud suspected"))
		}
		return nil, fmt.Errorf("flaky upstream (attempt %d)", job.AttemptsStarted)
	}, &drover.WorkerOptions{Name: "drover-worker-1"})
	okID := b.add(t, "tl", "ok", nil, nil)
	fraud := b.add(t, "tl", "fraud", nil, &drover.JobOptions{Attempts: 5})
	long := b.add(t, "tl", "long", nil, &drover.JobOptions{Attempts: 30})
	for _, id := range []string{fraud, long} {
		b.waitState(t, "tl", id, drover.StateFailed)
	}
	b.waitState(t, "tl", okID, drover.StateCompleted)
	// A job whose first worker stalled and whose second completed it: the
	// state BullMQ and drover leave (ats 2, atm 1, stc 1, no record).
	k := b.prefix + ":tl:"
	require.NoError(t, b.rdb.HSet(ctx, k+"stalled-once", "name", "import", "data", "{}", "opts", `{"attempts":1}`, "timestamp", time.Now().UnixMilli()-5000,
		"atm", 1, "ats", 2, "stc", 1, "processedOn", time.Now().UnixMilli()-2000, "finishedOn", time.Now().UnixMilli()-1000, "returnvalue", `"ok"`).Err())
	require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(float64(time.Now().UnixMilli()-1000), "stalled-once")).Err())

	tab := browser(t)
	outcomes := func() []string {
		return evalJS[[]string](t, tab, `[...document.querySelectorAll('#timeline [data-attempt]')].map(g => g.dataset.attempt + ':' + g.dataset.outcome + ':' + g.dataset.recorded)`)
	}
	open := func(id string) {
		do(t, tab, chromedp.Navigate(b.url+"#/q/tl/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	}

	// First-try completion by a drover worker.
	open(okID)
	require.Equal(t, []string{"1:completed:no"}, outcomes())
	require.NotContains(t, text(t, tab, `#timeline-source`), "Node BullMQ worker ran it")
	require.Contains(t, text(t, tab, `#timeline-source`), "a first try that completes")
	require.Contains(t, text(t, tab, `#timeline`), "no drover record")

	// Stalled, then recovered and completed.
	open("stalled-once")
	require.Equal(t, []string{"1:stalled:no", "2:completed:no"}, outcomes())
	require.Contains(t, text(t, tab, `#timeline`), "recovered by the stalled check")
	// Each wait's label sits in the gap between two boxes, not over them.
	require.Empty(t, evalJS[[]string](t, tab, `(() => {
		const boxes = [...document.querySelectorAll('#timeline g > rect')].map((r) => r.getBBox());
		return [...document.querySelectorAll('#timeline > text')].filter((t) => {
			const b = t.getBBox();
			return boxes.some((r) => b.x < r.x + r.width && b.x + b.width > r.x && b.y < r.y + r.height && b.y + b.height > r.y);
		}).map((t) => t.textContent);
	})()`), "gap labels that run into an attempt box")
	require.Empty(t, evalJS[[]string](t, tab, `[...document.querySelectorAll('#timeline g[data-attempt]')].flatMap((g) => {
		const r = g.querySelector('rect').getBBox();
		return [...g.querySelectorAll('text')].filter((t) => t.getBBox().x + t.getBBox().width > r.x + r.width - 4).map((t) => t.textContent);
	})`), "texts that run into their attempt box's right edge (4px of padding)")

	// Unrecoverable.
	open(fraud)
	require.Equal(t, "failed for good: unrecoverable", text(t, tab, `h1 [data-retry-state]`))
	require.Equal(t, "1 of 5 used; failed for good: unrecoverable (a retry is likely to fail the same way)", text(t, tab, `#attempts`))
	require.NotContains(t, text(t, tab, `#attempts`), "left")
	require.Equal(t, "yes", evalJS[string](t, tab, `document.querySelector('#timeline [data-attempt="1"]').dataset.unrecoverable || ''`))
	require.Contains(t, text(t, tab, `#timeline`), "failed: unrecoverable")
	do(t, tab, chromedp.Navigate(b.url+"#/q/tl?state=failed"), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"]`, fraud))))
	require.Equal(t, "failed for good: unrecoverable", text(t, tab, fmt.Sprintf(`#jobs tr[data-job="%s"] [data-retry-state]`, fraud)))
	require.Equal(t, "failed for good: attempts used up", text(t, tab, fmt.Sprintf(`#jobs tr[data-job="%s"] [data-retry-state]`, long)))

	// Thirty attempts: drover kept the newest 25; the picture names the 5
	// it dropped, folds the middle and shows the newest in view.
	open(long)
	require.Equal(t, "5", evalJS[string](t, tab, `document.querySelector('#timeline-omitted').dataset.omitted`))
	require.Equal(t, "17", evalJS[string](t, tab, `document.querySelector('#timeline-fold').dataset.fold`))
	drawn := outcomes()
	require.Len(t, drawn, 8)
	require.Equal(t, "6:retried:yes", drawn[0])
	require.Equal(t, "30:retries-exhausted:yes", drawn[7])
	// The scroll to the newest runs on the next frame: waited for, not
	// slept for (200 ms was too short for a frame on a loaded machine).
	testkit.WaitFor(t, 10*time.Second, "the newest attempt in view", func() bool {
		return evalJS[bool](t, tab, `(() => {
			const w = document.querySelector('#timeline-wrap').getBoundingClientRect();
			const a = document.querySelector('#timeline [data-attempt="30"] rect').getBoundingClientRect();
			return a.left >= w.left - 1 && a.right <= w.right + 1;
		})()`)
	})
	legend := evalJS[[]string](t, tab, `[...document.querySelectorAll('#timeline-legend li')].filter(li => {
		const r = li.getBoundingClientRect(), p = li.parentElement.getBoundingClientRect();
		return r.width > 0 && r.left >= p.left - 1 && r.right <= p.right + 1;
	}).map(li => li.dataset.legend)`)
	require.Subset(t, legend, []string{"completed", "retry-delayed", "retries-exhausted", "stalled", "retried"}, "every legend entry is drawn whole")
	require.Equal(t, evalJS[int](t, tab, `document.querySelectorAll('#timeline-legend li').length`), len(legend))
	screenshot(t, tab, "job-page-long-history.png")
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// TestUIOperatorViews covers what operators look for first: the queue page
// opens on the tab that has jobs; failed jobs grouped by error, one click to
// show a group and one to retry it; a job found by id from any page; an
// active job's progress bar, running time and worker; the delayed-set growth
// chart; conflicted retries on the stalled page.
func TestUIOperatorViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b.startWorker(t, "ops", func(ctx context.Context, job *drover.Job) (any, error) {
		var n int
		_ = job.DecodeData(&n)
		switch job.Name {
		case "timeout":
			return nil, fmt.Errorf("gateway timeout after %dms", 30000+n)
		case "declined":
			return nil, fmt.Errorf("card %d declined", 4000+n)
		case "long":
			_ = job.UpdateProgress(ctx, 40)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "done", nil
		}
		return "ok", nil
	}, &drover.WorkerOptions{Name: "ops-worker", Concurrency: 4})
	var timeouts, declined []string
	for n := range 3 {
		timeouts = append(timeouts, b.add(t, "ops", "timeout", n, &drover.JobOptions{Attempts: 1}))
	}
	for n := range 2 {
		declined = append(declined, b.add(t, "ops", "declined", n, &drover.JobOptions{Attempts: 1}))
	}
	long := b.add(t, "ops", "long", 0, nil)
	for _, id := range append(append([]string{}, timeouts...), declined...) {
		b.waitState(t, "ops", id, drover.StateFailed)
	}
	b.waitState(t, "ops", long, drover.StateActive)
	calm := b.add(t, "calm", "x", nil, nil)
	b.startWorker(t, "calm", func(ctx context.Context, job *drover.Job) (any, error) { return "ok", nil }, nil)
	b.waitState(t, "calm", calm, drover.StateCompleted)

	tab := browser(t)
	// The queue page opens on the tab with jobs: completed for calm, failed
	// (before active) for ops.
	do(t, tab, chromedp.Navigate(b.url+"#/q/calm"), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"]`, calm))))
	require.True(t, strings.HasPrefix(text(t, tab, `.tabs a.on`), "completed"), text(t, tab, `.tabs a.on`))
	do(t, tab, chromedp.Navigate(b.url+"#/q/ops"), chromedp.WaitVisible(chromedp.CSS(`#failure-groups tr[data-group]`)))
	require.True(t, strings.HasPrefix(text(t, tab, `.tabs a.on`), "failed"))
	groups := evalJS[[]string](t, tab, `[...document.querySelectorAll('#failure-groups tr[data-group]')].map(r => r.dataset.group + ' ' + r.cells[0].textContent)`)
	require.Equal(t, []string{"gateway timeout after <n>ms 3", "card <n> declined 2"}, groups)
	// Throughput: the five failures of the last minutes, drawn below the axis.
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#throughput-chart`)))
	require.Contains(t, text(t, tab, `#throughput-facts`), "0 completed and 5 failed in the last hour")
	require.Equal(t, 5, evalJS[int](t, tab, `[...document.querySelectorAll('#throughput-chart rect[data-failed]')].reduce((n, r) => n + Number(r.dataset.failed), 0)`))
	require.True(t, evalJS[bool](t, tab, `!!document.querySelector('#histogram') && !!document.querySelector('#growth-chart')`), "the delayed set's due times and its growth chart")

	// Show one group: the list holds its jobs only.
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#failure-groups tr[data-group="gateway timeout after <n>ms"] [data-show]`)),
		chromedp.WaitVisible(chromedp.CSS(`#error-filter`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job="%s"]`, timeouts[0]))),
	)
	shown := evalJS[[]string](t, tab, `[...document.querySelectorAll('#jobs tr[data-job]')].map(r => r.dataset.job)`)
	require.ElementsMatch(t, timeouts, shown)

	// Retry another group from its row.
	require.NoError(t, b.queue(t, "ops").Pause(ctx))
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#failure-groups tr[data-group="card <n> declined"] [data-retry-group]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #retry-preview`)),
	)
	require.Contains(t, text(t, tab, `.modal #retry-preview`), `Retry 2 failed jobs matching error="card <n> declined"`)
	do(t, tab,
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#operations [data-operation][data-status="done"]`)),
	)
	for _, id := range declined {
		st, err := b.queue(t, "ops").GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st)
	}

	// Find a job by id from the header: it opens the job page, which shows
	// the running job's progress, time and worker.
	do(t, tab,
		chromedp.SendKeys(chromedp.CSS(`#job-search input`), long+"\n"),
		chromedp.WaitVisible(chromedp.CSS(`#job-progress`)),
	)
	require.Contains(t, text(t, tab, `h1`), "Job "+long)
	require.InDelta(t, 0.4, evalJS[float64](t, tab, `document.querySelector('#job-progress').value`), 0.001)
	require.Contains(t, text(t, tab, `#running-for`), "for ")
	require.Contains(t, text(t, tab, `main`), "on worker ops-worker")
	screenshot(t, tab, "job-page-active.png")

	// A retry refused because a worker holds the lock is listed.
	require.NoError(t, b.rdb.Set(ctx, b.prefix+":ops:"+timeouts[0]+":lock", "sticky-worker:1", 30*time.Second).Err())
	c := b.as(t, "")
	require.Equal(t, 409, c.post("api/queues/ops/jobs/"+timeouts[0]+"/retry", map[string]bool{"resetAttempts": false}, nil))
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/ops/stalled"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#conflicts tr[data-conflict="%s"]`, timeouts[0]))),
	)
	row := text(t, tab, fmt.Sprintf(`#conflicts tr[data-conflict="%s"]`, timeouts[0]))
	require.Contains(t, row, "sticky-worker")
	require.Contains(t, row, "retry")
}

// TestUIWorkers: the workers page lists every worker connection under the
// prefix, named as BullMQ's workers name theirs, idle or busy.
func TestUIWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	b.add(t, "mail", "x", nil, nil)
	enc := func(q string) string { return base64.StdEncoding.EncodeToString([]byte(q)) }
	connect := func(name string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: b.rdb.Options().Addr, ClientName: name, PoolSize: 1})
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Ping(ctx).Err())
		return c
	}
	connect(b.prefix + ":" + enc("mail") + ":w:node-mailer-1")
	idle := connect(b.prefix + ":" + enc("mail") + ":w:node-mailer-2")
	go func() { _ = idle.BZPopMin(ctx, 20*time.Second, b.prefix+":mail:marker-test").Err() }()
	// A worker with free slots waits for jobs while it runs one: not idle.
	// (It was shown "idle: waiting for jobs".)
	running := connect(b.prefix + ":" + enc("mail") + ":w:node-mailer-3")
	require.NoError(t, b.rdb.HSet(ctx, b.prefix+":mail:77", "name", "x", "data", "{}", "opts", "{}", "timestamp", time.Now().UnixMilli(), "pb", "node-mailer-3").Err())
	require.NoError(t, b.rdb.LPush(ctx, b.prefix+":mail:active", "77").Err())
	go func() { _ = running.BZPopMin(ctx, 20*time.Second, b.prefix+":mail:marker-test").Err() }()
	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/workers"),
		chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker="node-mailer-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker="node-mailer-2"] [data-state="idle"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker="node-mailer-3"] [data-state="running"]`)),
	)
	require.Equal(t, "busy", evalJS[string](t, tab, `document.querySelector('#workers tr[data-worker="node-mailer-1"] [data-state]').dataset.state`))
	require.Contains(t, text(t, tab, `#workers tr[data-worker="node-mailer-2"]`), "mail")
	require.Contains(t, text(t, tab, `#workers tr[data-worker="node-mailer-3"]`), "running 1, waiting for more")
	require.Equal(t, 3, evalJS[int](t, tab, `document.querySelectorAll('#workers tr[data-worker]').length`))
	screenshot(t, tab, "workers.png")
}

// TestUICancelJob clicks the job page's cancel button of a running job: the
// worker's processor sees its context cancelled, the job fails for good with
// the typed reason, the page shows the cancelled attempt, and the action is
// audited with its reason.
func TestUICancelJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	causes := make(chan error, 1)
	b.startWorker(t, "cx", func(ctx context.Context, _ *drover.Job) (any, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}, nil)
	id := b.add(t, "cx", "long", nil, &drover.JobOptions{Attempts: 3})
	b.waitState(t, "cx", id, drover.StateActive)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/cx/job/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-job`)),
		chromedp.Click(chromedp.CSS(`#cancel-job`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #cancel-reason`)),
		chromedp.SendKeys(chromedp.CSS(`.modal #cancel-reason`), "stuck on a dead host"),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
	)
	require.ErrorIs(t, <-causes, drover.ErrJobCancelled)
	b.waitState(t, "cx", id, drover.StateFailed)
	j, err := b.queue(t, "cx").GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "cancelled: stuck on a dead host", j.FailedReason)
	require.Equal(t, drover.OutcomeCancelled, j.Timeline[len(j.Timeline)-1].Outcome)

	do(t, tab,
		chromedp.Navigate(b.url+"#/q/cx/job/"+id+"?r=1"),
		chromedp.WaitVisible(chromedp.CSS(`#timeline [data-outcome="cancelled"]`)),
	)
	require.False(t, evalJS[bool](t, tab, `!!document.querySelector('#cancel-job')`), "no cancel button once the job is not running")

	var found bool
	for _, e := range b.audit.all() {
		if e.Action == "cancel-job" {
			found = true
			require.Equal(t, "ok", e.Outcome)
			require.Equal(t, id, e.JobID)
			require.Equal(t, `reason="stuck on a dead host" retry=false seen=active`, e.Detail)
			require.Equal(t, 1, e.Jobs)
		}
	}
	require.True(t, found, "cancel-job audited: %v", b.audit.all())
}

// TestUICancelQueuedJob: a job not running yet has a cancel button too; it
// fails the job for good at once, with the typed reason and no attempt. (The
// button was shown for active jobs only.)
func TestUICancelQueuedJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	id := b.add(t, "cq", "later", nil, &drover.JobOptions{Delay: time.Hour, Attempts: 3})

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/cq/job/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#cancel-job`)),
		chromedp.Click(chromedp.CSS(`#cancel-job`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #cancel-reason`)),
		chromedp.SendKeys(chromedp.CSS(`.modal #cancel-reason`), "customer left"),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
	)
	b.waitState(t, "cq", id, drover.StateFailed)
	j, err := b.queue(t, "cq").GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "cancelled: customer left", j.FailedReason)
	require.Zero(t, j.AttemptsMade)
}

// TestUIDotNames: Node BullMQ accepts "." and ".." as queue names and job
// ids (drover refuses them at add), and no URL path can carry such a
// segment: the page escapes them ("~..") and the API reads the escape back,
// so the job shows and its actions reach it. A name that is itself the
// escape ("~.") goes through unchanged.
func TestUIDotNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	for _, id := range []string{"..", ".", "~."} {
		_, err := o.Add(ctx, b.prefix, "..", "n", map[string]string{"id": id}, map[string]any{"jobId": id, "delay": 3600000})
		require.NoError(t, err)
	}
	tab := browser(t)
	for _, id := range []string{"..", ".", "~."} {
		do(t, tab, chromedp.Navigate(b.url+"#/q/../job/"+url.PathEscape(id)), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
		require.Equal(t, "Job "+id, text(t, tab, `h1 span`), id)
		require.JSONEq(t, fmt.Sprintf(`{"id":%q}`, id), text(t, tab, `#job-data`), id)
	}
	// An action reaches the job: run ".." now.
	do(t, tab, chromedp.Navigate(b.url+"#/q/../job/.."), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	do(t, tab, chromedp.Click(chromedp.Search(`//button[text()="Run now (keep attempts)"]`)), chromedp.Click(chromedp.CSS(`[data-confirm="yes"]`)))
	b.waitState(t, "..", "..", drover.StateWaiting)
	// The job moves before the handler returns and records the action:
	// wait for the entry rather than race it.
	testkit.WaitFor(t, 10*time.Second, "the audit entry", func() bool { return len(b.audit.all()) > 0 })
	require.Equal(t, "..", b.audit.last(t).JobID)
	require.Equal(t, "..", b.audit.last(t).Queue)
	// The queue page lists them and links to them.
	do(t, tab, chromedp.Navigate(b.url+"#/q/..?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="~."]`)))
	require.Equal(t, []string{".", "~."}, evalJS[[]string](t, tab, `[...document.querySelectorAll('#jobs tr[data-job]')].map((r) => r.dataset.job).sort()`))
}

// TestUIConfirmKeys: a destructive action's dialog starts on Cancel, so an
// Enter pressed out of habit deletes nothing, and Escape closes any dialog.
func TestUIConfirmKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	id := b.add(t, "keep", "x", nil, &drover.JobOptions{Delay: time.Hour})
	tab := browser(t)
	obliterate := chromedp.Click(chromedp.Search(`//button[text()="Obliterate…"]`))
	dialogOpen := func() bool { return evalJS[bool](t, tab, `!!document.querySelector('.modal')`) }
	do(t, tab, chromedp.Navigate(b.url+"#/q/keep?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)), obliterate, chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Equal(t, "no", evalJS[string](t, tab, `document.activeElement.dataset.confirm || document.activeElement.textContent`), "focus starts on Cancel")
	do(t, tab, chromedp.KeyEvent(kb.Enter), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	do(t, tab, obliterate, chromedp.WaitVisible(chromedp.CSS(`.modal`)), chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	require.False(t, dialogOpen())
	state, err := b.queue(t, "keep").GetJobState(ctx, id)
	require.NoError(t, err)
	require.Equal(t, drover.StateDelayed, state, "the queue and its job are still there")
	for _, e := range b.audit.all() {
		require.NotEqual(t, "obliterate", e.Action, "no obliterate was sent")
	}
}

// TestUIFlow: a parent in waiting-children says what it waits for, with
// links to its pending children, and a child links to its parent; the
// overview counts it under waiting-children.
func TestUIFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	later := &drover.JobOptions{Delay: time.Hour}
	tree, err := flows.Add(ctx, drover.FlowJob{Name: "assemble", QueueName: "orders", Children: []drover.FlowJob{
		{Name: "fast", QueueName: "parts"}, {Name: "wheel", QueueName: "parts", Opts: later}, {Name: "frame", QueueName: "parts", Opts: later},
	}})
	require.NoError(t, err)
	b.startWorker(t, "parts", func(ctx context.Context, job *drover.Job) (any, error) { return "made", nil }, nil)
	b.waitState(t, "parts", tree.Children[0].Job.ID, drover.StateCompleted)
	parent := tree.Job.ID
	slow := []string{"parts/" + tree.Children[1].Job.ID, "parts/" + tree.Children[2].Job.ID}
	slices.Sort(slow)

	tab := browser(t)
	// The overview counts the parent: it showed orders with every count 0.
	do(t, tab, chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="orders"]`)))
	require.Equal(t, []string{"Queue", "waiting", "prioritized", "active", "delayed", "waiting-children", "completed", "failed", "Alerts"},
		evalJS[[]string](t, tab, `[...document.querySelectorAll('#queues th')].map((th) => th.textContent)`))
	require.Equal(t, "1", text(t, tab, `#queues tr[data-queue="orders"] td[data-state="waiting-children"]`))
	do(t, tab, chromedp.Navigate(b.url+"#/q/orders/job/"+parent), chromedp.WaitVisible(chromedp.CSS(`#flow`)))
	require.Equal(t, "Children: 2 pending, 1 completed, 0 failed the parent, 0 failed without failing it (ignored).", text(t, tab, `#flow-children`))
	require.Equal(t, "Waiting for", text(t, tab, `#flow-waiting h3`))
	require.Equal(t, slow, evalJS[[]string](t, tab, `[...document.querySelectorAll('#flow-waiting a')].map((a) => a.dataset.ref)`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#flow-waiting a`)), chromedp.WaitVisible(chromedp.CSS(`#flow-parent`)))
	require.Equal(t, "Child of orders/"+parent+".", text(t, tab, `#flow-parent`))
	do(t, tab, chromedp.Click(chromedp.CSS(`#flow-parent a`)), chromedp.WaitVisible(chromedp.CSS(`#flow-children`)))
	require.Contains(t, text(t, tab, `h1`), "Job "+parent)
}

// TestUIRemoveSaysWhatGoesWithTheJob: removing a flow parent removes its
// children too (BullMQ's default), and removing a child releases its
// parent: the confirmation says both. It said "Delete job X and its logs?"
// and took the children along without a word.
func TestUIRemoveSaysWhatGoesWithTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	later := &drover.JobOptions{Delay: time.Hour}
	tree, err := flows.Add(ctx, drover.FlowJob{Name: "assemble", QueueName: "orders", Children: []drover.FlowJob{
		{Name: "wheel", QueueName: "parts", Opts: later}, {Name: "frame", QueueName: "parts", Opts: later},
	}})
	require.NoError(t, err)
	remove := chromedp.Click(chromedp.Search(`//button[text()="Remove…"]`))

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/orders/job/"+tree.Job.ID), chromedp.WaitVisible(chromedp.CSS(`#flow`)), remove,
		chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal`), "Delete job "+tree.Job.ID+" and its logs, with its 2 flow children and their own children, in their queues?")
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="no"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))

	child := tree.Children[0].Job.ID
	do(t, tab, chromedp.Navigate(b.url+"#/q/parts/job/"+child), chromedp.WaitVisible(chromedp.CSS(`#flow-parent`)), remove,
		chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal`), "Delete job "+child+" and its logs? Its parent orders/"+tree.Job.ID+" stops waiting for it.")
}

// TestUIUnreadableJob: a failed job whose hash does not decode is named
// apart, with a link to its page (which says what does not decode); the
// queue's other failed jobs and their groups still show.
func TestUIUnreadableJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	b.startWorker(t, "mixed", func(ctx context.Context, job *drover.Job) (any, error) {
		return nil, errors.New("gateway timeout")
	}, nil)
	good := b.add(t, "mixed", "charge", nil, &drover.JobOptions{Attempts: 1})
	b.waitState(t, "mixed", good, drover.StateFailed)
	k := b.prefix + ":mixed:"
	require.NoError(t, b.rdb.HSet(ctx, k+"damaged", "name", "charge", "data", "{}", "opts", `{"attempts":"one"}`, "timestamp", 1000,
		"atm", 1, "failedReason", "gateway timeout", "finishedOn", 2000).Err())
	require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(2000, "damaged")).Err())

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mixed?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+good+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#failure-groups tr[data-group]`)), chromedp.WaitVisible(chromedp.CSS(`#unreadable a[data-unreadable="damaged"]`)))
	require.Contains(t, text(t, tab, `#unreadable`), "1 job of this page could not be read")
	do(t, tab, chromedp.Click(chromedp.CSS(`#unreadable a`)), chromedp.WaitVisible(chromedp.Search(`//p[contains(., "Could not load the job")]`)))
	require.Contains(t, text(t, tab, `main`), `opts.attempts: not a number: "one"`)
}

// TestUILongNames: a 300-character job id and a 3,000-character job name
// (Node BullMQ takes both) stay inside the page: the table clips them and
// the job page wraps them, instead of widening the page past the window so
// the other columns and buttons are out of sight.
func TestUILongNames(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	id := "long-" + strings.Repeat("x", 300)
	b.add(t, "wide", strings.Repeat("N", 3000), nil, &drover.JobOptions{JobID: id, Delay: time.Hour})
	tab := browser(t)
	fits := func(where string) {
		t.Helper()
		require.LessOrEqual(t, evalJS[int](t, tab, `document.documentElement.scrollWidth`), evalJS[int](t, tab, `window.innerWidth`), where)
	}
	do(t, tab, chromedp.Navigate(b.url+"#/q/wide?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	fits("queue page")
	require.Equal(t, id, evalJS[string](t, tab, `document.querySelector('#jobs tr[data-job] td').title`), "the whole id on hover")
	do(t, tab, chromedp.Navigate(b.url+"#/q/wide/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)))
	fits("job page")
}

// TestUIRetryKeepingAttemptsSaysWhatIsLeft: retrying a job that used up its
// attempts while keeping them gives it one run, no more: the question says
// so.
func TestUIRetryKeepingAttemptsSaysWhatIsLeft(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	b.startWorker(t, "once", func(ctx context.Context, job *drover.Job) (any, error) { return nil, errors.New("upstream 502") }, nil)
	id := b.add(t, "once", "x", nil, &drover.JobOptions{Attempts: 2})
	b.waitState(t, "once", id, drover.StateFailed)
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/once/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#job-data`)),
		chromedp.Click(chromedp.Search(`//button[text()="Retry (keep attempts)"]`)), chromedp.WaitVisible(chromedp.CSS(`.modal`)))
	require.Contains(t, text(t, tab, `.modal`), "It has no attempt left of its 2: if this run fails, it fails for good.")
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-confirm="no"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
}

// TestUICleanCompletedSaysHowMany: the clean button asks with the number of
// completed jobs it will remove, and removes that many: a job that crosses
// the age line while the dialog is open stays. Before, the dialog said
// "up to 10000" and removed every job old enough at the click.
func TestUICleanCompletedSaysHowMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "old", "keep", nil, &drover.JobOptions{Delay: time.Hour}) // the queue exists
	k := b.prefix + ":old:"
	finished := func(id string, ago time.Duration) {
		t.Helper()
		at := time.Now().Add(-ago).UnixMilli()
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "n", "data", "{}", "opts", "{}", "timestamp", at, "delay", 0,
			"priority", 0, "finishedOn", at, "returnvalue", "null").Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redis.Z{Score: float64(at), Member: id}).Err())
	}
	for n, ago := range []time.Duration{5 * time.Hour, 4 * time.Hour, 3 * time.Hour} {
		finished(fmt.Sprintf("c%d", n), ago)
	}
	finished("recent", time.Minute)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/old"),
		chromedp.Click(chromedp.Search(`//button[text()="Clean completed…"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal`)),
	)
	require.Contains(t, text(t, tab, `.modal`), "Remove old's 3 completed jobs finished more than an hour ago?")
	require.Equal(t, "Remove 3", text(t, tab, `.modal [data-confirm="yes"]`))
	finished("crossed", 2*time.Hour) // old enough now, newer than the three counted
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	testkit.WaitFor(t, 10*time.Second, "the clean", func() bool {
		n, err := b.rdb.ZCard(ctx, k+"completed").Result()
		require.NoError(t, err)
		return n == 2
	})
	left, err := b.rdb.ZRange(ctx, k+"completed", 0, -1).Result()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"crossed", "recent"}, left)
}

// TestUIQueueLimits: why waiting jobs do not move although a worker runs.
// The overview and the queue page show a queue whose global concurrency
// the active jobs reached ("maxed 1/1") and one a manual rate limit blocks
// ("rate-limited"); the queue page also lists the limits in force that do
// not bite (the global rate limit), and the API says the same in
// QueueInfo.Limits.
func TestUIQueueLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	capped := b.queue(t, "capped")
	require.NoError(t, capped.SetGlobalConcurrency(ctx, 1))
	require.NoError(t, capped.SetGlobalRateLimit(ctx, 10, time.Second))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{}, 1)
	b.startWorker(t, "capped", func(ctx context.Context, _ *drover.Job) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}, &drover.WorkerOptions{Concurrency: 4})
	b.add(t, "capped", "first", nil, nil)
	<-started
	b.add(t, "capped", "second", nil, nil)
	limited := b.queue(t, "limited")
	b.add(t, "limited", "x", nil, nil)
	require.NoError(t, limited.RateLimit(ctx, time.Hour))
	b.add(t, "calm", "x", nil, nil)

	var ov dashboard.Overview
	require.Equal(t, http.StatusOK, b.as(t, "").get("api/overview", &ov))
	byName := map[string]inspect.QueueInfo{}
	for _, q := range ov.Queues {
		byName[q.Name] = q.QueueInfo
	}
	require.Equal(t, 1, *byName["capped"].Limits.Concurrency)
	require.True(t, byName["capped"].Limits.Maxed)
	require.Equal(t, &inspect.RateLimit{Max: 10, Duration: time.Second}, byName["capped"].Limits.RateLimit)
	require.Zero(t, byName["capped"].Limits.RateLimitedFor)
	require.Greater(t, byName["limited"].Limits.RateLimitedFor, 59*time.Minute)
	require.Equal(t, inspect.Limits{}, byName["calm"].Limits)

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url),
		chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="capped"] [data-limit="concurrency"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="limited"] [data-limit="rate-limited"]`)),
	)
	require.Equal(t, "maxed 1/1", text(t, tab, `#queues tr[data-queue="capped"] [data-limit="concurrency"]`))
	require.Contains(t, text(t, tab, `#queues tr[data-queue="limited"] [data-limit="rate-limited"]`), "rate-limited ")
	require.Zero(t, evalJS[int](t, tab, `document.querySelectorAll('#queues tr[data-queue="calm"] [data-limit]').length`), "a queue without limits has no badge")
	require.Zero(t, evalJS[int](t, tab, `document.querySelectorAll('#queues tr[data-queue="capped"] [data-limit="rate"]').length`), "the overview shows only limits that bite")
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/capped"),
		chromedp.WaitVisible(chromedp.CSS(`h1 [data-limit="rate"]`)),
	)
	require.Equal(t, "maxed 1/1", text(t, tab, `h1 [data-limit="concurrency"]`))
	require.Equal(t, "≤ 10 per 1.0s", text(t, tab, `h1 [data-limit="rate"]`))
}

// TestUILimitsAction: an admin changes a queue's limits from its page (the
// Limits… dialog), which Redis shows and the audit log records; the API
// refuses a contradictory or empty request without touching Redis, and
// refuses a viewer.
func TestUILimitsAction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "mail")
	b.add(t, "mail", "x", nil, nil)
	require.NoError(t, q.SetGlobalRateLimit(ctx, 10, time.Second))

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/mail"),
		chromedp.WaitVisible(chromedp.CSS(`#limits-button`)),
		chromedp.Click(chromedp.CSS(`#limits-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#limit-concurrency`)),
		chromedp.SendKeys(chromedp.CSS(`#limit-concurrency`), "3"),
		chromedp.SetValue(chromedp.CSS(`#limit-rate-max`), ""),
		chromedp.SetValue(chromedp.CSS(`#limit-rate-ms`), ""),
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`h1 [data-limit="concurrency"]`)),
	)
	require.Equal(t, "concurrency 3", text(t, tab, `h1 [data-limit="concurrency"]`))
	n, set, err := q.GetGlobalConcurrency(ctx)
	require.NoError(t, err)
	require.True(t, set)
	require.Equal(t, 3, n)
	rl, err := q.GetGlobalRateLimit(ctx)
	require.NoError(t, err)
	require.Nil(t, rl, "the emptied rate fields lifted the rate limit")
	e := b.audit.last(t)
	require.Equal(t, "set-limits", e.Action)
	require.Equal(t, "mail", e.Queue)
	require.Equal(t, "concurrency=3 rate=none", e.Detail)

	admin := b.as(t, "")
	before, err := b.rdb.HGetAll(ctx, b.prefix+":mail:meta").Result()
	require.NoError(t, err)
	for _, body := range []map[string]any{
		{},
		{"concurrency": 0},
		{"concurrency": 2, "removeConcurrency": true},
		{"rateLimit": map[string]any{"max": 0, "durationMs": 1000}},
		{"concurrency": 2, "blockMs": -1},
		{"blockMs": 1000, "unblock": true},
	} {
		require.Equal(t, http.StatusBadRequest, admin.post("api/queues/mail/limits", body, nil), "%v", body)
	}
	after, err := b.rdb.HGetAll(ctx, b.prefix+":mail:meta").Result()
	require.NoError(t, err)
	require.Equal(t, before, after, "refused requests changed nothing")
	require.Equal(t, http.StatusNotFound, admin.post("api/queues/nosuch/limits", map[string]any{"concurrency": 1}, nil))

	var lim inspect.Limits
	require.Equal(t, http.StatusOK, admin.post("api/queues/mail/limits", map[string]any{"blockMs": 60000}, &lim))
	require.Greater(t, lim.RateLimitedFor, 50*time.Second)

	viewer := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	require.Equal(t, http.StatusForbidden, viewer.as(t, "").post("api/queues/mail/limits", map[string]any{"concurrency": 1}, nil))
}

// TestUIPromoteRunsWhatItSaid: the "Promote all delayed…" dialog names
// the count the page shows, and confirming it runs at most that many
// (those due first): a job delayed after the page counted stays delayed,
// and the toast says so. It promoted every delayed job at click time.
func TestUIPromoteRunsWhatItSaid(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	early := b.add(t, "q", "early", nil, &drover.JobOptions{Delay: time.Hour})
	soon := b.add(t, "q", "soon", nil, &drover.JobOptions{Delay: 2 * time.Hour})
	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/q"), chromedp.Click(chromedp.Search(`//button[text()="Promote all delayed…"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal [data-confirm="yes"]`)))
	require.Contains(t, text(t, tab, `.modal`), "Run the 2 delayed jobs of q now?")
	late := b.add(t, "q", "late", nil, &drover.JobOptions{Delay: 3 * time.Hour}) // while the dialog is open
	do(t, tab, chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	b.waitState(t, "q", early, drover.StateWaiting)
	b.waitState(t, "q", soon, drover.StateWaiting)
	b.waitState(t, "q", late, drover.StateDelayed)
	testkit.WaitFor(t, 10*time.Second, "the toast", func() bool {
		return strings.Contains(evalJS[string](t, tab, `document.body.innerText`), "Promoted 2 jobs. 1 delayed since the count stays delayed.")
	})
}

// TestUITimelineSaysWhyAJobRanOrDidNot: the picture names a retry by hand
// between a failure for good and the run after it, and draws a job
// cancelled while queued as a failure outside any attempt ("failed without
// running", no attempt number), not as an empty timeline.
func TestUITimelineSaysWhyAJobRanOrDidNot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	var runs atomic.Int32
	b.startWorker(t, "tl", func(ctx context.Context, job *drover.Job) (any, error) {
		if runs.Add(1) == 1 {
			return nil, drover.Unrecoverable(errors.New("mailbox full"))
		}
		return "sent", nil
	}, nil)
	byHand := b.add(t, "tl", "send", nil, &drover.JobOptions{Attempts: 3})
	b.waitState(t, "tl", byHand, drover.StateFailed)
	job, err := b.queue(t, "tl").GetJob(ctx, byHand)
	require.NoError(t, err)
	require.NoError(t, job.Retry(ctx, drover.StateFailed, nil))
	b.waitState(t, "tl", byHand, drover.StateCompleted)
	unrun := b.add(t, "tl", "send", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, b.queue(t, "tl").CancelJob(ctx, unrun, "not needed", nil))

	tab := browser(t)
	outcomes := func() []string {
		return evalJS[[]string](t, tab, `[...document.querySelectorAll('#timeline [data-attempt]')].map(g => g.dataset.attempt + ':' + g.dataset.outcome)`)
	}
	do(t, tab, chromedp.Navigate(b.url+"#/q/tl/job/"+byHand), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	require.Equal(t, []string{"1:failed-unrecoverable", "2:completed"}, outcomes())
	require.Contains(t, text(t, tab, `#timeline`), "retried by hand")

	do(t, tab, chromedp.Navigate(b.url+"#/q/tl/job/"+unrun), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	require.Equal(t, []string{"1:failed-unrun"}, outcomes())
	tl := text(t, tab, `#timeline`)
	require.Contains(t, tl, "failed without running")
	require.Contains(t, tl, "no attempt ran")
	require.NotContains(t, tl, "#1 failed without running", "not numbered as an attempt")
}
