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

// TestTimelineOfAParentFailedByItsChild: a flow parent whose
// failParentOnFailure child failed is failed by the next worker that takes
// it, without running (BullMQ's deferred failure), by Node BullMQ or by
// drover. Its last attempt is a failure for good with the child's failure
// as its reason, not "retries exhausted" (it never retried, and had
// attempts left under "attempts": 3) nor "unrecoverable" (the parent threw
// nothing).
func TestTimelineOfAParentFailedByItsChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	type parent struct{ queue, id string }
	var parents []parent
	for _, q := range []string{"node-parents", "drover-parents"} {
		for _, attempts := range []int{1, 3} {
			f, err := o.AddFlow(ctx, b.prefix, bullmqoracle.FlowJob{Name: "assemble", QueueName: q, Opts: map[string]any{"attempts": attempts},
				Children: []bullmqoracle.FlowJob{{Name: "part", QueueName: "parts", Data: map[string]any{"b": bullmqoracle.Fail("part broke")},
					Opts: map[string]any{"failParentOnFailure": true}}}})
			require.NoError(t, err)
			parents = append(parents, parent{q, f.ID})
		}
	}
	for _, q := range []string{"parts", "node-parents"} {
		require.NoError(t, o.StartWorker(ctx, b.prefix, q, bullmqoracle.WorkerOptions{ID: q, Behavior: bullmqoracle.FromData("b")}))
		t.Cleanup(func() { _ = o.StopWorker(context.Background(), q, true) })
	}
	b.startWorker(t, "drover-parents", func(context.Context, *drover.Job) (any, error) { return "ran", nil }, nil)
	c := b.as(t, "")
	for _, p := range parents {
		b.waitState(t, p.queue, p.id, drover.StateFailed)
		var d struct {
			FailedReason string
			Timeline     []struct {
				N       int
				Outcome string
				Error   string
			}
		}
		require.Equal(t, http.StatusOK, c.get("api/queues/"+p.queue+"/jobs/"+p.id, &d))
		require.NotEmpty(t, d.Timeline, p.queue)
		last := d.Timeline[len(d.Timeline)-1]
		require.Equal(t, "failed", last.Outcome, "%s: %+v", p.queue, d.Timeline)
		require.Regexp(t, `^child .*:parts:.* failed$`, last.Error, p.queue)
	}
}
