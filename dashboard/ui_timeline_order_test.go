package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestUITimelineSaysWhenItsOrderIsAGuess: a job Node BullMQ ran stalled,
// then failed twice. drover has no record of it: its counters say one
// stall and two failures, not in which order, and the timeline draws the
// failures first. The page says the order of those attempts is not known;
// it drew "1 failed, retried; 2 stalled" as fact, the stall that came
// first as the second attempt. A job whose earlier attempts are all
// failures says nothing of the kind.
func TestUITimelineSaysWhenItsOrderIsAGuess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, o, add := nodeWalk(t)
	fails := map[string]any{"b": bullmqoracle.Fail("after a stall")}
	stalled := add("st", "stalls first", fails, map[string]any{"attempts": 2})
	_, err := o.StepTake(ctx, b.prefix, "st")
	require.NoError(t, err)
	require.NoError(t, b.rdb.Del(ctx, b.prefix+":st:"+stalled+":lock").Err())
	for range 2 { // the first check marks the job, the second moves it back
		require.NoError(t, b.rdb.Del(ctx, b.prefix+":st:stalled-check").Err())
		_, err := o.StepCheckStalled(ctx, b.prefix, "st")
		require.NoError(t, err)
	}
	plain := add("st", "fails twice", fails, map[string]any{"attempts": 2})
	require.NoError(t, o.StartWorker(ctx, b.prefix, "st", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.FromData("b")}))
	t.Cleanup(func() { _ = o.StopWorker(context.Background(), "w", true) })
	for _, id := range []string{stalled, plain} {
		_, err := o.WaitUntilFinished(ctx, b.prefix, "st", id, 20*time.Second)
		require.NoError(t, err)
	}
	tab := browser(t)
	outcomes := `[...document.querySelectorAll('#timeline [data-attempt]')].map(g => g.dataset.attempt + ':' + g.dataset.outcome)`
	do(t, tab, chromedp.Navigate(b.url+"#/q/st/job/"+stalled), chromedp.WaitVisible(chromedp.CSS(`#timeline-source`)))
	require.Equal(t, []string{"1:retried", "2:stalled", "3:retries-exhausted"}, evalJS[[]string](t, tab, outcomes))
	require.Contains(t, text(t, tab, `#timeline-source`), "Which of the earlier attempts came first is not known")
	do(t, tab, chromedp.Navigate(b.url+"#/q/st/job/"+plain), chromedp.WaitVisible(chromedp.CSS(`#timeline-source`)))
	require.Equal(t, []string{"1:retried", "2:retries-exhausted"}, evalJS[[]string](t, tab, outcomes))
	require.NotContains(t, text(t, tab, `#timeline-source`), "not known")
}
