package dashboard_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestSetLimitsRefusesMillisecondsPastADuration: blockMs or
// rateLimit.durationMs past what a time.Duration holds is a 400 that names
// the field and its bound, and nothing changes. Before, the milliseconds
// wrapped when turned into a Duration: 9223372036854775807 was refused as
// "block must not be negative, got -1ms" (a value the user never sent),
// and 20000000000000 ms (634 years) was taken as a block of 49 years.
func TestSetLimitsRefusesMillisecondsPastADuration(t *testing.T) {
	t.Parallel()
	b := setup(t, &dashboard.Options{Auth: testUsers()})
	b.add(t, "q", "w", 1, &drover.JobOptions{JobID: "w1"})
	c := b.as(t, adminToken)
	before, err := statedump.Dump(context.Background(), b.rdb, b.prefix)
	require.NoError(t, err)
	for _, tt := range []struct {
		body rawBody
		want string
	}{
		{`{"blockMs":9223372036854775807}`, "blockMs must be at most 9223372036854, got 9223372036854775807"},
		{`{"blockMs":20000000000000}`, "blockMs must be at most 9223372036854, got 20000000000000"},
		{`{"rateLimit":{"max":5,"durationMs":9223372036854775807}}`, "rateLimit.durationMs must be at most 9223372036854, got 9223372036854775807"},
		{`{"rateLimit":{"max":5,"durationMs":20000000000000}}`, "rateLimit.durationMs must be at most 9223372036854, got 20000000000000"},
	} {
		require.Equal(t, http.StatusBadRequest, c.post("api/queues/q/limits", tt.body, nil), "%s: %s", tt.body, c.lastBody)
		require.Contains(t, string(c.lastBody), tt.want, "%s", tt.body)
	}
	after, err := statedump.Dump(context.Background(), b.rdb, b.prefix)
	require.NoError(t, err)
	require.Empty(t, statedump.Diff(before, after))
}
