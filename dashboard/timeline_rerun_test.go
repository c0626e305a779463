package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestTimelineOfACompletedJobRetriedByHand: a job that completed at its
// first try (run by a drover worker, and one run by Node BullMQ) is
// retried by hand from the completed tab. Its page drew that attempt as
// "retries-exhausted": a failure that used the attempts up, for a job that
// never failed (the retry clears the return value and the times, and
// nothing records a first try that completes). With no failed reason and
// no stack trace where every failure leaves one, the attempt completed.
func TestTimelineOfACompletedJobRetriedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.startWorker(t, "q", func(context.Context, *drover.Job) (any, error) { return "ok", nil }, nil)
	mine := b.add(t, "q", "go", nil, nil)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	node, err := o.Add(ctx, b.prefix, "n", "node", nil, nil)
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, b.prefix, "n", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Return("ok")}))
	_, err = o.WaitUntilFinished(ctx, b.prefix, "n", node, 20*time.Second)
	require.NoError(t, err)
	b.waitState(t, "q", mine, drover.StateCompleted)

	c := b.as(t, "")
	for _, j := range []struct{ queue, id string }{{"q", mine}, {"n", node}} {
		// Paused, so the retried job stays where its page reads it.
		require.Equal(t, http.StatusOK, c.post("api/queues/"+j.queue+"/pause", nil, nil), string(c.lastBody))
		require.Equal(t, http.StatusOK, c.post("api/queues/"+j.queue+"/jobs/"+j.id+"/retry", map[string]any{}, nil), string(c.lastBody))
		var d struct {
			State    drover.JobState
			Timeline []struct {
				N       int
				Outcome string
				Error   string
			}
		}
		require.Equal(t, http.StatusOK, c.get("api/queues/"+j.queue+"/jobs/"+j.id, &d))
		require.Contains(t, []drover.JobState{drover.StateWaiting, drover.StatePaused}, d.State, j.queue)
		require.NotEmpty(t, d.Timeline, j.queue)
		last := d.Timeline[len(d.Timeline)-1]
		require.Equal(t, 1, last.N, j.queue)
		require.Equal(t, "completed", last.Outcome, "queue %s: %+v", j.queue, d.Timeline)
		require.Empty(t, last.Error, j.queue)
	}
}
