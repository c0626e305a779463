package dashboard_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIScreenshots fills a few queues the way a busy day does and takes
// the README's screenshots: overview, queue, a job with a long history,
// failures by error. They go to $DROVER_SCREENSHOTS (the README's are made
// with DROVER_SCREENSHOTS=../docs/screenshots), else to the artifacts dir.
func TestUIScreenshots(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	b.startWorker(t, "payments", func(ctx context.Context, job *drover.Job) (any, error) {
		var n int
		_ = job.DecodeData(&n)
		switch job.Name {
		case "charge":
			if n%4 == 0 {
				return nil, fmt.Errorf("gateway timeout after %dms (order %d)", 30000+n, 4000+n)
			}
			if n%4 == 1 {
				return nil, drover.Unrecoverable(fmt.Errorf("card declined: insufficient funds (order %d)", 4000+n))
			}
			return map[string]any{"charged": 1999 + n}, nil
		case "refund":
			return nil, fmt.Errorf("refund api returned 503 for order %d", 4000+n)
		case "reconcile":
			return nil, fmt.Errorf("ledger mismatch on batch %d", job.AttemptsStarted)
		}
		return "ok", nil
	}, &drover.WorkerOptions{Name: "payments-worker-1", Concurrency: 8})
	b.startWorker(t, "emails", func(ctx context.Context, job *drover.Job) (any, error) {
		return "sent", nil
	}, &drover.WorkerOptions{Name: "mailer-1"})
	var last string
	for n := range 24 {
		last = b.add(t, "payments", "charge", n, &drover.JobOptions{Attempts: 1})
	}
	for n := range 5 {
		b.add(t, "payments", "refund", n, &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}})
	}
	long := b.add(t, "payments", "reconcile", 0, &drover.JobOptions{Attempts: 30})
	for n := range 40 {
		b.add(t, "emails", "welcome", n, nil)
	}
	for n := range 30 {
		b.add(t, "emails", "digest", n, &drover.JobOptions{Delay: time.Duration(5+n%7) * time.Minute})
	}
	// A flow: a settlement waiting for two of its three receipts.
	flows, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = flows.Close() })
	later := &drover.JobOptions{Delay: 10 * time.Minute}
	settle, err := flows.Add(context.Background(), drover.FlowJob{Name: "settle-batch", QueueName: "payments", Opts: &drover.JobOptions{JobID: "settle-2026-12-02"},
		Children: []drover.FlowJob{{Name: "receipt", QueueName: "emails", Data: 1}, {Name: "receipt", QueueName: "emails", Data: 2, Opts: later}, {Name: "receipt", QueueName: "emails", Data: 3, Opts: later}}})
	require.NoError(t, err)
	b.waitState(t, "payments", long, drover.StateFailed)
	b.waitState(t, "payments", last, drover.StateCompleted)
	b.waitState(t, "emails", settle.Children[0].Job.ID, drover.StateCompleted)

	dir := os.Getenv("DROVER_SCREENSHOTS")
	if dir == "" {
		dir = artifactsDir(t)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	tab := browser(t)
	shot := func(name string) {
		t.Helper()
		do(t, tab, chromedp.Sleep(300*time.Millisecond))
		png, err := chromedp.Run(step(t, tab), chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	}
	do(t, tab, chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="payments"]`)))
	shot("overview.png")
	do(t, tab, chromedp.Navigate(b.url+"#/q/emails?state=delayed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)))
	shot("queue.png")
	do(t, tab, chromedp.Navigate(b.url+"#/q/emails?state=completed"), chromedp.WaitVisible(chromedp.CSS(`#throughput-chart rect`)))
	shot("throughput.png")
	do(t, tab, chromedp.Navigate(b.url+"#/q/payments?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#failure-groups tr[data-group]`)))
	shot("failures-by-error.png")
	do(t, tab, chromedp.Navigate(b.url+"#/q/payments/job/"+long), chromedp.WaitVisible(chromedp.CSS(`#timeline-fold`)))
	shot("job-long-history.png")
	// The bulk retry's confirmation: the filter typed (applied or not),
	// the count and a sample.
	do(t, tab, chromedp.Navigate(b.url+"#/q/payments?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=reason]`), "gateway timeout"), chromedp.Click(chromedp.CSS(`#bulk-retry`)),
		chromedp.WaitVisible(chromedp.CSS(`#retry-preview`)))
	// The viewport: a full-page shot would draw the fixed backdrop over
	// its first screen only.
	png, err := chromedp.Run(step(t, tab), chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bulk-retry.png"), png, 0o644))
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-confirm="no"]`)), chromedp.WaitNotPresent(chromedp.CSS(`.modal`)))
	do(t, tab, chromedp.Navigate(b.url+"#/q/payments/job/"+settle.Job.ID), chromedp.WaitVisible(chromedp.CSS(`#flow-waiting`)))
	shot("flow.png")
	// Workers: connections named as Node BullMQ's workers name theirs
	// (drover's join the list once they name theirs the same way).
	for k, name := range []string{"node-payments-1", "node-payments-2", "node-mailer"} {
		queue := "payments"
		if k == 2 {
			queue = "emails"
		}
		c := redis.NewClient(&redis.Options{Addr: b.rdb.Options().Addr, PoolSize: 1,
			ClientName: b.prefix + ":" + base64.StdEncoding.EncodeToString([]byte(queue)) + ":w:" + name})
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Ping(context.Background()).Err())
		if k != 0 {
			go func() { _ = c.BZPopMin(context.Background(), 10*time.Second, b.prefix+":screenshot-marker").Err() }()
		}
	}
	do(t, tab, chromedp.Navigate(b.url+"#/workers"), chromedp.WaitVisible(chromedp.CSS(`#workers [data-state="idle"]`)))
	shot("workers.png")
}
