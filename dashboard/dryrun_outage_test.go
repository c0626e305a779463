package dashboard_test

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestDryRunWhileRedisIsPaused: a bulk retry's or a clean's dry run that
// Redis does not answer in time says so and that nothing changed, and is
// audited as an error. It answered "outcome unknown: ... the action may or
// may not have happened; check before repeating it" and was audited as
// unknown, for a preview that cannot change anything.
func TestDryRunWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	srv, url, audit, _ := pausableAdmin(t)
	c := (&testBundle{url: url}).as(t, "")
	c.hc.Timeout = 14 * time.Second
	require.NoError(t, srv.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = srv.Signal(syscall.SIGCONT) })
	for _, tc := range []struct {
		path string
		body any
	}{
		{"api/queues/q/retry", dashboard.RetryJobsRequest{DryRun: true}},
		{"api/queues/q/clean", dashboard.CleanRequest{DryRun: true}},
	} {
		require.Equal(t, http.StatusServiceUnavailable, c.post(tc.path, tc.body, nil), tc.path)
		var body struct{ Error, Outcome string }
		require.NoError(t, json.Unmarshal(c.lastBody, &body), "%s", c.lastBody)
		require.Empty(t, body.Outcome, tc.path)
		require.Contains(t, body.Error, "this was a dry run, so nothing changed", tc.path)
	}
	testkit.WaitFor(t, 5*time.Second, "both audit entries", func() bool { return len(audit.all()) == 2 })
	for _, e := range audit.all() {
		require.Equal(t, "error", e.Outcome, e.Action)
		require.Contains(t, e.Error, "dry run", e.Action)
	}
}
