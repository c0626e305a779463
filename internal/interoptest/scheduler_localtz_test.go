package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestInteropCronWithoutTZIsLocalTime: a job scheduler's cron pattern with
// no tz runs in the local time zone of the process that computes its next
// run, as cron-parser does for BullMQ. Node in New York put "0 9 * * *" at
// 14:00 UTC, and a drover worker on the same machine that took the run put
// the next one at 09:00 UTC: the schedule moved by five hours whenever a
// drover worker computed it.
//
// Not parallel: it sets time.Local, as TZ=America/New_York would.
func TestInteropCronWithoutTZIsLocalTime(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	saved := time.Local
	time.Local = ny
	t.Cleanup(func() { time.Local = saved })
	o := bullmqoracle.StartWithOptions(t, redistest.Shared(t).Addr, &bullmqoracle.Options{Env: []string{"TZ=America/New_York"}})
	ctx := context.Background()
	for _, from := range []string{"2026-06-15T10:11:12.345Z", "2026-11-01T05:40:00Z", "2026-03-08T06:10:00Z"} {
		f, err := time.Parse(time.RFC3339Nano, from)
		require.NoError(t, err)
		for _, p := range []string{"0 9 * * *", "30 2 * * *", "0 0 * * MON", "0 * * * *"} {
			want, err := o.CronNext(ctx, p, "", f.UnixMilli(), 3)
			require.NoError(t, err)
			require.Equal(t, want, droverCronNext(t, p, "", f, 3), "%q with no tz from %s", p, from)
		}
	}
}
