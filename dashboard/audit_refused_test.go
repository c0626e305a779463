package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestObliterateRefusedAuditsNoJobs: an obliterate refused because a job
// runs changes nothing, and its audit entry says so: 0 jobs, outcome
// error, with the count it found in its detail. The entry said "jobs: 3"
// (every job of the queue) beside the error, as if they had gone.
func TestObliterateRefusedAuditsNoJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.holdJob(t, "busy", nil)
	b.add(t, "busy", "a", nil, nil)
	b.add(t, "busy", "b", nil, nil)
	c := b.as(t, "")
	require.Equal(t, http.StatusConflict, c.post("api/queues/busy/obliterate", dashboard.ObliterateRequest{}, nil), string(c.lastBody))
	e := b.audit.last(t)
	require.Equal(t, "obliterate", e.Action)
	require.Equal(t, "error", e.Outcome)
	require.Equal(t, 0, e.Jobs, "nothing was removed")
	require.Contains(t, e.Detail, "found=3")
	// Allowed, it says how many went.
	require.Equal(t, http.StatusOK, c.post("api/queues/busy/obliterate", dashboard.ObliterateRequest{Force: true}, nil), string(c.lastBody))
	e = b.audit.last(t)
	require.Equal(t, "ok", e.Outcome)
	require.Equal(t, 3, e.Jobs)
}
