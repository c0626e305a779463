package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

// TestCancelSeenActiveJobNoLongerRunning: a cancel sent with from=active
// (the operator confirmed "Cancel the running attempt") for a job whose
// attempt failed meanwhile and went back to waiting (or to delayed, for
// its backoff) is refused with 409 naming where the job is, and the job
// stays queued with its attempts, as a cancel sent with from=waiting for a
// job a worker took is refused. It failed the job for good, without its
// next attempt, which the dialog never said.
func TestCancelSeenActiveJobNoLongerRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleOperator})
	c := b.as(t, "")
	for _, tc := range []struct {
		backoff *drover.Backoff
		state   drover.JobState
	}{{nil, drover.StateWaiting}, {&drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}, drover.StateDelayed}} {
		name := "ca-" + string(tc.state)
		q := b.queue(t, name)
		w, err := drover.NewWorker(b.rdb, name, nil, &drover.WorkerOptions{Prefix: b.prefix})
		require.NoError(t, err)
		t.Cleanup(func() { _ = w.Close(context.Background()) })
		res, err := q.Add(ctx, "send", nil, &drover.JobOptions{Attempts: 3, Backoff: tc.backoff})
		require.NoError(t, err)
		id := res.Job.ID
		job, err := w.NextJob(ctx, "tok-"+id, 0)
		require.NoError(t, err)
		require.Equal(t, id, job.ID)
		require.NoError(t, job.Fail(ctx, "tok-"+id, errors.New("flaky")))
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tc.state, st)

		require.Equal(t, http.StatusConflict, c.post("api/queues/"+name+"/jobs/"+id+"/cancel", map[string]any{"from": "active", "reason": "stop"}, nil), "%s: %s", tc.state, c.lastBody)
		require.Contains(t, string(c.lastBody), "it is "+string(tc.state))
		st, err = q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tc.state, st, "the job keeps its next attempt")
		e := b.audit.last(t)
		require.Equal(t, "cancel-job", e.Action)
		require.Equal(t, "error", e.Outcome)
		require.Contains(t, e.Detail, "seen=active")
	}
}
