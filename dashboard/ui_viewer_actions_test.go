package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUIViewerSeesNoCancelOfABulkRetry: a viewer who opens a queue page
// while an operator's bulk retry runs sees its progress, without a Cancel
// button: the viewer may not cancel it (the API answers 403). The page
// offered the button to every role, and a viewer's click ended in
// "viewer may not cancel-operation".
func TestUIViewerSeesNoCancelOfABulkRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	k := b.prefix + ":slow:"
	at := time.Now().Add(-time.Hour).UnixMilli()
	pipe := b.rdb.Pipeline()
	const n = 3000 // 30 chunks with a pause between: 3 s at least
	for i := range n {
		id := fmt.Sprintf("j%d", i)
		pipe.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", `{"attempts":1}`, "timestamp", at, "atm", 1, "ats", 1, "failedReason", "down", "finishedOn", at+int64(i))
		pipe.ZAdd(ctx, k+"failed", redisZ(float64(at+int64(i)), id))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, b.queue(t, "slow").Pause(ctx))
	var op dashboard.Operation
	otto := b.as(t, operatorToken)
	require.Equal(t, http.StatusAccepted, otto.post("api/queues/slow/retry", dashboard.RetryJobsRequest{}, &op), string(otto.lastBody))
	t.Cleanup(func() { otto.post("api/operations/"+op.ID+"/cancel", nil, nil) })

	tab := browser(t)
	do(t, tab, chromedp.Navigate(b.url+"#/q/slow?state=failed"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), viewerToken),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-operation="`+op.ID+`"]`)))
	require.Equal(t, "running", evalJS[string](t, tab, `document.querySelector('[data-operation]').dataset.status`))
	require.Equal(t, 0, evalJS[int](t, tab, `document.querySelectorAll('[data-operation] button').length`), "a Cancel the viewer may not use")
}
