package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestBulkAuditNamesTheJobs: the audit entries of a bulk retry (its dry
// run and its end) and of a clean (dry run and clean) say which jobs, not
// only how many: the dry run's entry had no count at all (jobs 0, no
// "matched"), and no entry named a job. The audit page shows the ids.
func TestBulkAuditNamesTheJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	k := b.prefix + ":pay:"
	now := time.Now().Add(-2 * time.Hour).UnixMilli()
	var failed, done []string
	for n := range 25 {
		id := fmt.Sprintf("f%02d", n)
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "charge", "data", "{}", "opts", `{"attempts":1}`,
			"timestamp", now, "atm", 1, "ats", 1, "failedReason", "card declined", "finishedOn", now+int64(n)).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(now+int64(n)), id)).Err())
		failed = append([]string{id}, failed...) // newest first
		id = fmt.Sprintf("c%02d", n)
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "charge", "data", "{}", "opts", `{}`,
			"timestamp", now, "atm", 1, "ats", 1, "returnvalue", "1", "finishedOn", now+int64(n)).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"completed", redisZ(float64(now+int64(n)), id)).Err())
		done = append(done, id) // oldest first
	}
	require.NoError(t, b.queue(t, "pay").Pause(ctx))
	c := b.as(t, "")
	var dry map[string]any
	require.Equal(t, http.StatusOK, c.post("api/queues/pay/retry", dashboard.RetryJobsRequest{Filter: "reason=declined", DryRun: true}, &dry))
	op := c.bulkRetry("pay", dashboard.RetryJobsRequest{Filter: "reason=declined"})
	require.Equal(t, 25, op.Retried)
	var cleaned map[string]int
	require.Equal(t, http.StatusOK, c.post("api/queues/pay/clean", dashboard.CleanRequest{DryRun: true}, &cleaned))
	require.Equal(t, http.StatusOK, c.post("api/queues/pay/clean", dashboard.CleanRequest{Limit: cleaned["matched"]}, &cleaned))
	require.Equal(t, 25, cleaned["removed"])

	byAction := map[string][]dashboard.AuditEntry{}
	for _, e := range b.audit.all() {
		byAction[e.Action] = append(byAction[e.Action], e)
	}
	require.Len(t, byAction["retry-jobs"], 2)
	dryEntry := byAction["retry-jobs"][0]
	require.Contains(t, dryEntry.Detail, "dryRun=true")
	require.Contains(t, dryEntry.Detail, "matched=25 excluded=0")
	require.Equal(t, failed[:dashboard.AuditJobIDsMax], dryEntry.JobIDs)
	end := byAction["retry-jobs-finished"][0]
	require.Equal(t, 25, end.Jobs)
	require.Equal(t, failed[:dashboard.AuditJobIDsMax], end.JobIDs)
	require.Len(t, byAction["clean"], 2)
	require.Contains(t, byAction["clean"][0].Detail, "matched=25")
	require.Equal(t, done[:dashboard.AuditJobIDsMax], byAction["clean"][0].JobIDs)
	require.Equal(t, done[:dashboard.AuditJobIDsMax], byAction["clean"][1].JobIDs)
	require.Equal(t, 25, byAction["clean"][1].Jobs)

	// The durable log keeps them, and the audit page shows them.
	var page dashboard.AuditPage
	require.Equal(t, http.StatusOK, c.get("api/audit", &page))
	require.Equal(t, "clean", page.Entries[0].Action)
	require.Equal(t, done[:dashboard.AuditJobIDsMax], page.Entries[0].JobIDs)
	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/audit"),
		chromedp.WaitVisible(chromedp.CSS(`#audit [data-job-ids]`)),
	)
	shown := text(t, tab, `#audit tbody tr:first-child [data-job-ids]`)
	require.Equal(t, "jobs "+strings.Join(done[:dashboard.AuditJobIDsMax], ", ")+", …", shown)
}

// TestRefusedBulkActionAuditSaysWhatWasAsked: a bulk retry or clean refused
// for a bad parameter is audited with the parameters sent, so the log
// says what was refused. Its Detail was empty.
func TestRefusedBulkActionAuditSaysWhatWasAsked(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "pay", "x", nil, nil)
	c := b.as(t, "")
	require.Equal(t, http.StatusBadRequest, c.post("api/queues/pay/retry", dashboard.RetryJobsRequest{Filter: "label=charge"}, nil))
	e := b.audit.last(t)
	require.Equal(t, "retry-jobs", e.Action)
	require.Equal(t, "error", e.Outcome)
	require.Contains(t, e.Detail, `filter="label=charge"`)
	require.Equal(t, http.StatusBadRequest, c.post("api/queues/pay/retry", dashboard.RetryJobsRequest{State: drover.StateWaiting}, nil))
	require.Contains(t, b.audit.last(t).Detail, "state=waiting")
	require.Equal(t, http.StatusBadRequest, c.post("api/queues/pay/clean", dashboard.CleanRequest{Grace: "an hour"}, nil))
	e = b.audit.last(t)
	require.Equal(t, "clean", e.Action)
	require.Contains(t, e.Detail, `grace="an hour"`)
}

// TestDrainAuditNamesTheJobs: a drain's audit entry names the first
// AuditJobIDsMax jobs it deleted (waiting first, in the list's order, then
// delayed), as a bulk retry, clean or promote-all does; it gave only the
// count. A job scheduler's next run stays and is named by none.
func TestDrainAuditNamesTheJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	q := b.queue(t, "dr")
	var want []string
	for n := range 22 {
		id := fmt.Sprintf("w%02d", n)
		_, err := q.Add(ctx, "x", nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
		want = append(want, id)
	}
	for n := range 3 {
		_, err := q.Add(ctx, "x", nil, &drover.JobOptions{JobID: fmt.Sprintf("d%d", n), Delay: time.Hour})
		require.NoError(t, err)
	}
	_, err := q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: time.Hour}, nil)
	require.NoError(t, err)
	var res map[string]int
	require.Equal(t, http.StatusOK, b.as(t, "").post("api/queues/dr/drain", dashboard.DrainRequest{Delayed: true}, &res))
	require.Equal(t, 25, res["removed"])
	e := b.audit.last(t)
	require.Equal(t, "drain", e.Action)
	require.Equal(t, 25, e.Jobs)
	// LPUSH order: the newest add is first in wait.
	slices.Reverse(want)
	require.Equal(t, want[:dashboard.AuditJobIDsMax], e.JobIDs)
}
