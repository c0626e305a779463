package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestStorm is acceptance 4 (run with 1,000 jobs, see n): jobs that fail together and back off by
// the same minute raise the retry-storm alert in the API and the UI; with a
// 50% jitter the same failures spread over 30 seconds and stay under the
// clustering threshold.
func TestStorm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// 1,000 jobs: ten times the alert's minimum, and few enough that a
	// loaded machine still fails them all within one 5 s window (5,000 took
	// over 5 s once under load and spread the storm over two windows).
	const n = 1000
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})

	// failTogether adds n jobs that all fail on their first attempt and
	// waits until every one is in the delayed set.
	failTogether := func(t *testing.T, queue string, jitter float64) {
		t.Helper()
		b.startWorker(t, queue, func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, errors.New("upstream down")
		}, &drover.WorkerOptions{Concurrency: 200})
		opts := &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Minute, Jitter: jitter}}
		jobs := make([]drover.BulkJob, n)
		for i := range jobs {
			jobs[i] = drover.BulkJob{Name: "sync", Data: map[string]int{"n": i}, Opts: opts}
		}
		_, err := b.queue(t, queue).AddBulk(ctx, jobs)
		require.NoError(t, err)
		testkit.WaitFor(t, 60*time.Second, fmt.Sprintf("%d delayed jobs in %s", n, queue), func() bool {
			c, err := b.queue(t, queue).GetJobCounts(ctx, drover.StateDelayed)
			require.NoError(t, err)
			return c[drover.StateDelayed] == n
		})
	}
	clustering := func(a []inspect.Alert) bool {
		for _, x := range a {
			if x.Kind == inspect.AlertClustering {
				return true
			}
		}
		return false
	}

	t.Run("NoJitterRaisesTheAlert", func(t *testing.T) {
		t.Parallel()
		failTogether(t, "nojitter", 0)
		c := b.as(t, "")
		var qp dashboard.QueuePage
		require.Equal(t, http.StatusOK, c.get("api/queues/nojitter", &qp))
		require.Equal(t, int64(n), qp.Delayed.Count)
		require.GreaterOrEqual(t, qp.Delayed.Clustering, 0.9, "the failures land within one 5s window")
		require.True(t, clustering(qp.Alerts))
		var ov dashboard.Overview
		require.Equal(t, http.StatusOK, c.get("api/overview", &ov))
		require.True(t, clustering(ov.Alerts))

		tab := browser(t)
		do(t, tab,
			chromedp.Navigate(b.url+"#/q/nojitter?state=delayed"),
			chromedp.WaitVisible(chromedp.CSS(`#alerts [data-alert="clustering"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#storm-facts`)),
		)
		require.Contains(t, text(t, tab, `#alerts`), "nojitter: retry storm: ")
		require.Contains(t, text(t, tab, `#storm-facts`), fmt.Sprintf("%d delayed", n))
		require.Contains(t, text(t, tab, `#storm-facts`), "20 of 20 sampled in the peak failed before (retries).")
		screenshot(t, tab, "queue-page-retry-storm.png")
		do(t, tab,
			chromedp.Navigate(b.url+"#/"),
			chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="nojitter"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#alerts [data-alert="clustering"]`)),
		)
	})

	// Jobs added with one delay are due together too, but none failed: the
	// alert says so instead of calling them a retry storm.
	t.Run("ScheduledTogetherIsNoRetryStorm", func(t *testing.T) {
		t.Parallel()
		const queue = "scheduled"
		jobs := make([]drover.BulkJob, 300)
		for i := range jobs {
			jobs[i] = drover.BulkJob{Name: "remind", Data: map[string]int{"n": i}, Opts: &drover.JobOptions{Delay: time.Minute}}
		}
		_, err := b.queue(t, queue).AddBulk(ctx, jobs)
		require.NoError(t, err)
		c := b.as(t, "")
		var qp dashboard.QueuePage
		require.Equal(t, http.StatusOK, c.get("api/queues/"+queue, &qp))
		require.True(t, clustering(qp.Alerts))
		require.Equal(t, 20, qp.Delayed.PeakSampled)
		require.Zero(t, qp.Delayed.PeakRetries)

		tab := browser(t)
		do(t, tab,
			chromedp.Navigate(b.url+"#/q/"+queue+"?state=delayed"),
			chromedp.WaitVisible(chromedp.CSS(`#alerts [data-alert="clustering"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#storm-facts`)),
		)
		alerts := text(t, tab, `#alerts`)
		require.NotContains(t, alerts, "retry storm")
		require.Contains(t, alerts, "a burst of scheduled jobs, not retries")
		require.Contains(t, text(t, tab, `#storm-facts`), "0 of 20 sampled in the peak failed before (retries).")
	})

	t.Run("JitterStaysUnderTheThreshold", func(t *testing.T) {
		t.Parallel()
		failTogether(t, "jitter", 0.5)
		c := b.as(t, "")
		var qp dashboard.QueuePage
		require.Equal(t, http.StatusOK, c.get("api/queues/jitter", &qp))
		require.Equal(t, int64(n), qp.Delayed.Count)
		t.Logf("clustering with jitter: %.3f (peak %d of %d)", qp.Delayed.Clustering, qp.Delayed.PeakCount, qp.Delayed.Considered)
		require.Less(t, qp.Delayed.Clustering, qp.Storm.ClusterShare)
		require.False(t, clustering(qp.Alerts))

		tab := browser(t)
		do(t, tab,
			chromedp.Navigate(b.url+"#/q/jitter?state=delayed"),
			chromedp.WaitVisible(chromedp.CSS(`#storm-facts`)),
		)
		require.Empty(t, text(t, tab, `#alerts [data-alert="clustering"]`))
		require.Contains(t, text(t, tab, `#storm-facts`), fmt.Sprintf("%d delayed", n))
	})
}
