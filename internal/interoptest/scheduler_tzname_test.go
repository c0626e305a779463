package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// Time zone spellings BullMQ 6.7 accepts beside the IANA names as the tz
// database spells them (cron-parser hands tz to luxon): any letter case,
// "utc"/"gmt", "local"/"system", and fixed offsets "UTC+3", "utc-05:30".
var nodeZoneSpellings = []string{"utc", "Gmt", "europe/paris", "AMERICA/NEW_YORK", "america/argentina/buenos_aires",
	"UTC+3", "utc-05:30", "UTC-0:30", "UTC+14", "system", "Local"}

// TestInteropCronZoneSpellings: drover computes a cron pattern's runs in
// every time zone spelling Node accepts as Node does. drover refused all
// but the exact IANA names ("unknown time zone europe/paris"), so a
// drover worker taking a run of a Node scheduler with such a tz could not
// create the next run: the scheduler stopped.
func TestInteropCronZoneSpellings(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	from := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	for _, tz := range nodeZoneSpellings {
		for _, p := range []string{"30 2 * * *", "0 */5 * * * *", "0 9 * * 1"} {
			want, err := b.oracle.CronNext(ctx, p, tz, from.UnixMilli(), 4)
			require.NoError(t, err, "Node: %q in %q", p, tz)
			got := make([]int64, 0, len(want))
			cur := from
			for range want {
				next, err := drover.NextRun(p, tz, cur)
				require.NoError(t, err, "drover: %q in %q", p, tz)
				got = append(got, next.UnixMilli())
				cur = next
			}
			require.Equal(t, want, got, "%q in %q", p, tz)
		}
	}
}

// TestInteropJobSchedulerZoneSpelling: a Node scheduler whose tz is
// spelled in lower case goes on under a drover worker as under a Node
// worker: same runs, same Redis state.
func TestInteropJobSchedulerZoneSpelling(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	kind := schedulerKind{"CronLowerCaseZone",
		map[string]any{"pattern": "* * * * * *", "tz": "europe/paris", "limit": 50, "immediately": true},
		drover.RepeatOptions{Pattern: "* * * * * *", TZ: "europe/paris", Limit: 50, Immediately: true}}
	node := setup(t)
	drv := node.sibling(t)
	want := runScheduler(t, node, kind, nodeImpl, nodeImpl, 3)
	got := runScheduler(t, drv, kind, nodeImpl, droverImpl, 3)
	requireSameState(t, want, got)
}
