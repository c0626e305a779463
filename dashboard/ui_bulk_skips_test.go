package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIBulkRetrySaysWhyItSkipped: a bulk retry that skips a job a worker
// still holds says so, and names the job with the refusal, in the API's
// operation and on the page. The page said "1 skipped (they changed
// meanwhile)", which was not why, and named no job; the operation had no
// conflict count.
func TestUIBulkRetrySaysWhyItSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	k := b.prefix + ":pay:"
	at := time.Now().Add(-time.Hour).UnixMilli()
	for n := range 3 {
		id := fmt.Sprintf("j%d", n)
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "charge", "data", "{}", "opts", `{"attempts":1}`,
			"timestamp", at, "atm", 1, "ats", 1, "failedReason", "card declined", "finishedOn", at+int64(n)).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(at+int64(n)), id)).Err())
	}
	require.NoError(t, b.rdb.Set(ctx, k+"j1:lock", "a-worker-token", time.Minute).Err())
	require.NoError(t, b.queue(t, "pay").Pause(ctx))

	tab := browser(t)
	do(t, tab,
		chromedp.Navigate(b.url+"#/q/pay?state=failed"),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="j2"]`)),
		chromedp.Click(chromedp.CSS(`#bulk-retry`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal #retry-preview`)),
	)
	// The preview says what its count means while jobs move.
	require.Contains(t, text(t, tab, `.modal #retry-preview`), "Jobs that fail after this count are left for the next retry, and a job that changes before its turn (retried, removed, run again) is skipped.")
	do(t, tab,
		chromedp.Click(chromedp.CSS(`.modal [data-confirm="yes"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#operations [data-operation][data-status="done"] [data-skip="j1"]`)),
	)
	line := text(t, tab, `#operations [data-operation]`)
	require.Contains(t, line, "done: retried 2, 1 skipped (1 held by a worker) of 3")
	require.NotContains(t, line, "changed meanwhile")
	require.Equal(t, "j1: job is locked by a worker", text(t, tab, `#operations [data-skip="j1"]`))

	c := b.as(t, "")
	var ops struct{ Operations []dashboard.Operation }
	require.Equal(t, 200, c.get("api/operations", &ops))
	require.Len(t, ops.Operations, 1)
	op := ops.Operations[0]
	require.Equal(t, 1, op.Conflicts)
	require.Len(t, op.Skips, 1)
	require.Equal(t, "j1", op.Skips[0].ID)
	// It has ended: a cancel now is refused, and audited as refused (it
	// was a 200 and a cancel "ok" in the log).
	require.Equal(t, http.StatusConflict, c.post("api/operations/"+op.ID+"/cancel", nil, nil))
	require.Contains(t, string(c.lastBody), "has already ended (done): nothing to cancel")
	last := b.audit.last(t)
	require.Equal(t, "cancel-operation", last.Action)
	require.Equal(t, "error", last.Outcome)
	st, err := b.queue(t, "pay").GetJobState(ctx, "j1")
	require.NoError(t, err)
	require.Equal(t, drover.StateFailed, st, "left as it was")
}

// TestBulkRetryAuditNamesTheSkippedJobs: the end entry of a bulk retry
// that skipped a job says which one and why, and does not list it among
// the jobs it retried. It listed every job the retry selected (j2, j1,
// j0) beside "retried 2", so the log said j1, held by a worker, was
// retried.
func TestBulkRetryAuditNamesTheSkippedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	k := b.prefix + ":pay:"
	at := time.Now().Add(-time.Hour).UnixMilli()
	for n := range 3 {
		id := fmt.Sprintf("j%d", n)
		require.NoError(t, b.rdb.HSet(ctx, k+id, "name", "charge", "data", "{}", "opts", `{"attempts":1}`,
			"timestamp", at, "atm", 1, "ats", 1, "failedReason", "card declined", "finishedOn", at+int64(n)).Err())
		require.NoError(t, b.rdb.ZAdd(ctx, k+"failed", redisZ(float64(at+int64(n)), id)).Err())
	}
	require.NoError(t, b.rdb.Set(ctx, k+"j1:lock", "a-worker-token", time.Minute).Err())
	require.NoError(t, b.queue(t, "pay").Pause(ctx))
	op := b.as(t, operatorToken).bulkRetry("pay", dashboard.RetryJobsRequest{})
	require.Equal(t, 2, op.Retried)
	require.Equal(t, 1, op.Skipped)
	var page dashboard.AuditPage
	require.Equal(t, http.StatusOK, b.as(t, adminToken).get("api/audit", &page))
	var end *dashboard.AuditEntry
	for i, e := range page.Entries {
		if e.Action == "retry-jobs-finished" {
			end = &page.Entries[i]
			break
		}
	}
	require.NotNil(t, end, "the retry's end entry")
	require.Equal(t, "otto", end.User)
	require.Equal(t, 2, end.Jobs)
	require.Equal(t, []string{"j2", "j0"}, end.JobIDs, "the jobs retried")
	require.Contains(t, end.Detail, "skipped j1 (job is locked by a worker)")
}
