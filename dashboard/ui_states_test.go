package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// Queue names an operator may meet: HTML, script tags and non-ASCII.
const (
	parentsQueue = `parents <b>ü</b>`
	kidsQueue    = `kids <script>window.__xss=1</script> 名`
)

// TestUIWalkEveryState walks the dashboard over the states Node BullMQ and
// drover make: flows across two queues with a failed child under each
// parent policy, job schedulers (every, cron with a time zone),
// deduplicated and debounced jobs, a rate-limited queue, one at its global
// concurrency, a paused one, prioritized and delayed jobs, 1,000 log
// lines, a 1 MB payload, HTML and script tags in names, data and failures,
// and a queue of 100,000 jobs. Every page shows what Node's getters say,
// and the browser reports no error.
func TestUIWalkEveryState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, o, add := nodeWalk(t)
	const evil = `<img src=x onerror="window.__xss=1"><script>window.__xss=1</script> ☃`
	// One flow per parent policy: a child that fails and one delayed for
	// an hour, so a parent that does not fail keeps waiting for it.
	policies := []string{"failParentOnFailure", "continueParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure"}
	flows := map[string]*bullmqoracle.FlowIDs{}
	for _, p := range policies {
		f, err := o.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{Name: "parent " + p, QueueName: parentsQueue, Children: []bullmqoracle.FlowJob{
			{Name: "doomed " + evil, QueueName: kidsQueue, Data: map[string]any{"behavior": bullmqoracle.Fail("child failed: " + evil)}, Opts: map[string]any{p: true}},
			{Name: "later", QueueName: kidsQueue, Opts: map[string]any{"delay": 3_600_000}},
		}})
		require.NoError(t, err)
		flows[p] = f
	}
	require.NoError(t, o.StartWorker(ctx, b.prefix, kidsQueue, bullmqoracle.WorkerOptions{ID: "kids", Behavior: bullmqoracle.FromData("behavior")}))
	t.Cleanup(func() { _ = o.StopWorker(context.Background(), "kids", true) })
	for _, p := range policies {
		_, err := o.WaitUntilFinished(ctx, b.prefix, kidsQueue, flows[p].Children[0].ID, 20*time.Second)
		require.NoError(t, err)
	}
	require.NoError(t, o.StopWorker(ctx, "kids", false))
	_, err := o.UpsertJobScheduler(ctx, b.prefix, "sched", "every-hour", map[string]any{"every": 3_600_000}, map[string]any{"name": "tick"})
	require.NoError(t, err)
	_, err = o.UpsertJobScheduler(ctx, b.prefix, "sched", "monday-9", map[string]any{"pattern": "0 9 * * 1", "tz": "Europe/Berlin"}, map[string]any{"name": "report"})
	require.NoError(t, err)
	dedup := add("misc", "dedup", nil, map[string]any{"deduplication": map[string]any{"id": "d1"}, "delay": 3_600_000})
	require.Equal(t, dedup, add("misc", "dedup", nil, map[string]any{"deduplication": map[string]any{"id": "d1"}, "delay": 3_600_000}))
	debounced := add("misc", "debounced", nil, map[string]any{"deduplication": map[string]any{"id": "d2", "ttl": 60_000}})
	prio := add("misc", "urgent "+evil, map[string]any{"html": evil}, map[string]any{"priority": 5})
	logged := add("misc", "chatty", nil, nil)
	for n := range 1000 {
		_, err := o.Log(ctx, b.prefix, "misc", logged, fmt.Sprintf("line %d <b>bold</b>", n))
		require.NoError(t, err)
	}
	huge := add("misc", "huge", map[string]any{"blob": strings.Repeat("ü", 512*1024)}, nil)
	add("paused", "held", nil, nil)
	require.NoError(t, o.Pause(ctx, b.prefix, "paused"))
	require.NoError(t, o.SetGlobalRateLimit(ctx, b.prefix, "limited", 5, time.Minute))
	require.NoError(t, o.RateLimit(ctx, b.prefix, "limited", time.Minute))
	add("limited", "y", nil, nil)
	require.NoError(t, o.SetGlobalConcurrency(ctx, b.prefix, "maxed", 1))
	add("maxed", "z", nil, nil)
	// drover makes the big queue: 100,000 waiting jobs.
	bq := b.queue(t, "big")
	for range 100 {
		batch := make([]drover.BulkJob, 1000)
		for n := range batch {
			batch[n] = drover.BulkJob{Name: "bulk", Data: n}
		}
		_, err := bq.AddBulk(ctx, batch)
		require.NoError(t, err)
	}

	tab := browser(t)
	con := watchConsole(t, tab)
	// The overview's counts are Node's getJobCounts, queue by queue.
	do(t, tab, chromedp.Navigate(b.url+"#/"), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="big"]`)))
	for _, q := range []string{parentsQueue, kidsQueue, "misc", "sched", "paused", "limited", "maxed", "big"} {
		states := []string{"waiting", "prioritized", "active", "delayed", "waiting-children", "completed", "failed"}
		want, err := o.GetJobCounts(ctx, b.prefix, q, states...)
		require.NoError(t, err)
		for _, s := range states {
			got := text(t, tab, fmt.Sprintf(`#queues tr[data-queue=%q] td[data-state=%q]`, q, s))
			require.Equal(t, strconv.FormatInt(want[s], 10), got, "%s %s", q, s)
		}
	}
	esc := url.PathEscape
	jobURL := func(q, id string) string { return "#/q/" + esc(q) + "/job/" + esc(id) }
	pages := []struct{ hash, want string }{
		{"#/q/" + esc(parentsQueue) + "?state=waiting-children", `#jobs tr[data-job="` + flows["ignoreDependencyOnFailure"].ID + `"]`},
		{"#/q/" + esc(kidsQueue) + "?state=failed", `#failure-groups`},
		{"#/q/misc?state=prioritized", `#jobs tr[data-job="` + prio + `"]`},
		{"#/q/misc?state=delayed", `#jobs tr[data-job="` + dedup + `"]`},
		{"#/q/misc?state=waiting", `#jobs tr[data-job="` + debounced + `"]`},
		{"#/q/sched/schedulers", `#schedulers tr[data-scheduler="monday-9"]`},
		{"#/q/paused", `#jobs tr[data-job]`},
		{"#/q/limited", `[data-limit="rate-limited"]`},
		{"#/q/maxed", `[data-limit="concurrency"]`},
		{"#/q/big?state=waiting", `#jobs tr[data-job]`},
		{"#/q/big/stalled", `#stalled-jobs`},
		{jobURL("misc", logged), `#job-logs`},
		{jobURL("misc", huge), `#job-data`},
		{jobURL("misc", prio), `#job-data`},
	}
	for _, p := range policies {
		pages = append(pages, struct{ hash, want string }{jobURL(parentsQueue, flows[p].ID), `#flow-children`},
			struct{ hash, want string }{jobURL(kidsQueue, flows[p].Children[0].ID), `#failed-reason`})
	}
	for _, p := range pages {
		do(t, tab, chromedp.Navigate(b.url+p.hash), chromedp.WaitVisible(chromedp.CSS(p.want)))
	}
	// The queue Node paused says since when, on the overview and its page.
	for _, at := range []struct{ hash, sel string }{{"#/", `#queues tr[data-queue="paused"] [data-paused-since]`}, {"#/q/paused", `[data-paused-since]`}} {
		do(t, tab, chromedp.Navigate(b.url+at.hash), chromedp.WaitVisible(chromedp.CSS(at.sel)))
		// Read in one step, and again if a live update was redrawing the
		// badge at that moment.
		var badge, since string
		testkit.WaitFor(t, 10*time.Second, "the paused badge on "+at.hash, func() bool {
			got := evalJS[[]string](t, tab, `(() => { const e = document.querySelector('`+at.sel+`'); return e ? [e.textContent, e.dataset.pausedSince] : ['', ''] })()`)
			badge, since = got[0], got[1]
			return badge != ""
		})
		require.Regexp(t, `^paused \d`, badge, at.hash)
		ms, err := strconv.ParseInt(since, 10, 64)
		require.NoError(t, err, "data-paused-since %q", since)
		require.WithinDuration(t, time.Now(), time.UnixMilli(ms), 5*time.Minute)
	}
	// The job with 1,000 log lines says which of them it shows.
	do(t, tab, chromedp.Navigate(b.url+jobURL("misc", logged)), chromedp.WaitVisible(chromedp.CSS(`#job-logs`)))
	require.Equal(t, "Logs (the newest 200 of 1000 lines)", text(t, tab, `#logs-heading`))
	require.True(t, strings.HasPrefix(text(t, tab, `#job-logs`), "line 800 <b>bold</b>\n"))
	// A job list's first page is Node's getJobs for the state, in order.
	for _, l := range []struct{ queue, state string }{{"big", "waiting"}, {"misc", "prioritized"}, {kidsQueue, "failed"}, {parentsQueue, "waiting-children"}} {
		want, err := o.GetJobs(ctx, b.prefix, l.queue, []string{l.state}, 0, 24, false)
		require.NoError(t, err)
		do(t, tab, chromedp.Navigate(b.url+"#/q/"+esc(l.queue)+"?state="+l.state), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+want[0]+`"]`)))
		require.Equal(t, want, evalJS[[]string](t, tab, `[...document.querySelectorAll('#jobs tr[data-job]')].map((r) => r.dataset.job)`), l)
	}
	// The job schedulers' rows are Node's getJobScheduler.
	do(t, tab, chromedp.Navigate(b.url+"#/q/sched/schedulers"), chromedp.WaitVisible(chromedp.CSS(`#schedulers tr[data-scheduler="monday-9"]`)))
	for id, repeats := range map[string]string{"every-hour": "every 1h", "monday-9": "cron 0 9 * * 1"} {
		sc, err := o.GetJobScheduler(ctx, b.prefix, "sched", id)
		require.NoError(t, err)
		row := fmt.Sprintf(`#schedulers tr[data-scheduler=%q]`, id)
		require.Equal(t, strconv.FormatInt(sc.Next, 10), evalJS[string](t, tab, `document.querySelector('`+row+` [data-next]').dataset.next`), id)
		require.Equal(t, repeats, text(t, tab, row+` td:nth-child(2)`), id)
		require.Equal(t, sc.TZ, text(t, tab, row+` td:nth-child(3)`), id)
	}
	// A deduplicated and a debounced job say who holds their id, as Node's
	// getDeduplicationJobId answers, and until when.
	for id, want := range map[string]string{dedup: "id d1: held by this job, until it finishes or is removed; adds with this id make no new job",
		debounced: "id d2: held by this job, until "} {
		dedupID := map[string]string{dedup: "d1", debounced: "d2"}[id]
		var holder string
		require.NoError(t, o.QueueCall(ctx, b.prefix, "misc", "getDeduplicationJobId", &holder, dedupID))
		require.Equal(t, id, holder)
		do(t, tab, chromedp.Navigate(b.url+jobURL("misc", id)), chromedp.WaitVisible(chromedp.CSS(`#dedup`)))
		require.Contains(t, text(t, tab, `#dedup`), want)
	}
	// Each parent's flow panel says what Node's getDependenciesCount says.
	for _, p := range policies {
		var counts map[string]int64
		require.NoError(t, o.JobRead(ctx, b.prefix, parentsQueue, flows[p].ID, "getDependenciesCount", &counts))
		do(t, tab, chromedp.Navigate(b.url+jobURL(parentsQueue, flows[p].ID)), chromedp.WaitVisible(chromedp.CSS(`#flow-children`)))
		require.Equal(t, fmt.Sprintf("Children: %d pending, %d completed, %d failed the parent, %d failed without failing it (ignored).",
			counts["unprocessed"], counts["processed"], counts["failed"], counts["ignored"]), text(t, tab, `#flow-children`), p)
		do(t, tab, chromedp.Navigate(b.url+jobURL(kidsQueue, flows[p].Children[0].ID)), chromedp.WaitVisible(chromedp.CSS(`#flow-parent`)))
		require.Contains(t, text(t, tab, `#flow-parent`), "("+p+").")
		do(t, tab, chromedp.Navigate(b.url+jobURL(parentsQueue, flows[p].ID)), chromedp.WaitVisible(chromedp.CSS(`#flow-children`)))
		state, err := o.GetState(ctx, b.prefix, parentsQueue, flows[p].ID)
		require.NoError(t, err)
		require.Equal(t, state, text(t, tab, `dl.kv dd`), p)
	}
	require.False(t, evalJS[bool](t, tab, `window.__xss === 1`), "no script from job data ran")
	require.Empty(t, con.errors(), "console errors and uncaught exceptions")
}
