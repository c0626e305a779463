package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
)

// TestUnknownQueues is issue 15 items 5 and 15: a queue name that is no
// queue answers 404 for reads and actions, and nothing is written.
func TestUnknownQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	b.add(t, "real", "x", nil, nil)
	c := b.as(t, "")
	for n := range 300 {
		require.Equal(t, http.StatusNotFound, c.get(fmt.Sprintf("api/queues/random-%d", n), nil))
	}
	for _, path := range []string{"api/queues/nosuch", "api/queues/nosuch/jobs", "api/queues/nosuch/jobs/1", "api/queues/nosuch/stalled",
		"api/queues/nosuch/delayed", "api/queues/nosuch/budgets", "api/queues/nosuch/events"} {
		require.Equal(t, http.StatusNotFound, c.get(path, nil), path)
	}
	for _, path := range []string{"pause", "resume", "clean", "obliterate", "promote", "retry", "jobs/1/retry", "jobs/1/promote", "jobs/1/remove"} {
		require.Equal(t, http.StatusNotFound, c.post("api/queues/nosuch/"+path, map[string]any{}, nil), path)
	}
	require.Equal(t, http.StatusOK, c.get("api/queues/real", nil))
	written, err := b.rdb.Keys(context.Background(), b.prefix+":nosuch:*").Result()
	require.NoError(t, err)
	require.Empty(t, written, "nothing written for an unknown queue")
	var ov struct{ Queues []struct{ Name string } }
	require.Equal(t, http.StatusOK, c.get("api/overview", &ov))
	require.Len(t, ov.Queues, 1, "no phantom queue")
}
