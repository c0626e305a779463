package dashboard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestUIAttemptsPastTheBudget: a job retried after its attempts ran out,
// keeping them (Retry (keep attempts), BullMQ's job.retry()), fails again
// with more attempts made than allowed. Its page and the failed list say
// how many past the budget; they read "2 of 1 used" and "2 / 1", a
// miscount to an operator.
func TestUIAttemptsPastTheBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "mail", func(context.Context, *drover.Job) (any, error) { return nil, errors.New("smtp down") }, nil)
	id := b.add(t, "mail", "send", nil, nil)
	b.waitState(t, "mail", id, drover.StateFailed)
	job, err := b.queue(t, "mail").GetJob(ctx, id)
	require.NoError(t, err)
	require.NoError(t, job.Retry(ctx, drover.StateFailed, nil))
	b.waitState(t, "mail", id, drover.StateFailed)
	job, err = b.queue(t, "mail").GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, job.AttemptsMade)

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail/job/"+id), chromedp.WaitVisible(chromedp.CSS(`#attempts`)))
	require.Equal(t, "2 made: 1 more than the 1 allowed (run again after they ran out); failed for good: attempts used up", text(t, tab, `#attempts`))
	do(t, tab, chromedp.Navigate(b.url+"#/q/mail?state=failed"), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="`+id+`"]`)))
	require.Equal(t, "2 / 1 (+1)", text(t, tab, `#jobs tr[data-job="`+id+`"] td.num`))
}
