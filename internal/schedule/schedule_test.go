package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/schedule"
)

// TestNextAcrossDST checks the next runs around the 2026 daylight-saving
// changes of two time zones (New York: 8 March and 1 November; Paris: 29
// March and 25 October). The expected times are what cron-parser 5.10.3,
// the version BullMQ 6.7.0 installs, returned for the same pattern, zone
// and start (internal/interoptest's TestInteropCronNext re-checks them
// against Node live).
func TestNextAcrossDST(t *testing.T) {
	t.Parallel()

	tests := []struct {
		pattern, tz, from string
		want              []string
	}{
		{"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"}},
		{"30 1 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T06:30:00Z", "2026-03-09T05:30:00Z", "2026-03-10T05:30:00Z", "2026-03-11T05:30:00Z"}},
		{"0 * * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-07T13:00:00Z", "2026-03-07T14:00:00Z", "2026-03-07T15:00:00Z", "2026-03-07T16:00:00Z"}},
		{"0 1-3 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-09T05:00:00Z", "2026-03-09T06:00:00Z"}},
		{"*/30 1-2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		{"0 30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"}},
		{"*/10 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-08T07:10:00Z", "2026-03-08T07:20:00Z", "2026-03-08T07:30:00Z"}},
		{"30 2 * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"}},
		{"30 1 * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T06:30:00Z", "2026-03-09T05:30:00Z", "2026-03-10T05:30:00Z", "2026-03-11T05:30:00Z"}},
		{"0 * * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T09:00:00Z", "2026-03-08T10:00:00Z"}},
		{"0 1-3 * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T05:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T07:00:00Z"}},
		{"*/30 1-2 * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-09T05:00:00Z"}},
		{"0 30 2 * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z", "2026-03-11T06:30:00Z"}},
		{"*/10 2 * * *", "America/New_York", "2026-03-08T06:10:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-08T07:10:00Z", "2026-03-08T07:20:00Z", "2026-03-08T07:30:00Z"}},
		{"30 2 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z", "2026-11-03T07:30:00Z", "2026-11-04T07:30:00Z"}},
		{"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z", "2026-11-04T06:30:00Z"}},
		{"0 * * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-10-31T13:00:00Z", "2026-10-31T14:00:00Z", "2026-10-31T15:00:00Z", "2026-10-31T16:00:00Z"}},
		{"0 1-3 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", "2026-11-02T06:00:00Z"}},
		{"*/30 1-2 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
		{"0 30 2 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z", "2026-11-03T07:30:00Z", "2026-11-04T07:30:00Z"}},
		{"*/10 2 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T07:00:00Z", "2026-11-01T07:10:00Z", "2026-11-01T07:20:00Z", "2026-11-01T07:30:00Z"}},
		{"30 2 * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z", "2026-11-03T07:30:00Z", "2026-11-04T07:30:00Z"}},
		{"30 1 * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z", "2026-11-04T06:30:00Z", "2026-11-05T06:30:00Z"}},
		{"0 * * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", "2026-11-01T09:00:00Z"}},
		{"0 1-3 * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", "2026-11-02T06:00:00Z", "2026-11-02T07:00:00Z"}},
		{"*/30 1-2 * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z", "2026-11-02T06:00:00Z", "2026-11-02T06:30:00Z"}},
		{"0 30 2 * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z", "2026-11-03T07:30:00Z", "2026-11-04T07:30:00Z"}},
		{"*/10 2 * * *", "America/New_York", "2026-11-01T05:40:00Z", []string{"2026-11-01T07:00:00Z", "2026-11-01T07:10:00Z", "2026-11-01T07:20:00Z", "2026-11-01T07:30:00Z"}},
		{"30 2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
		{"30 1 * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-29T00:30:00Z", "2026-03-29T23:30:00Z", "2026-03-30T23:30:00Z", "2026-03-31T23:30:00Z"}},
		{"0 * * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-28T13:00:00Z", "2026-03-28T14:00:00Z", "2026-03-28T15:00:00Z", "2026-03-28T16:00:00Z"}},
		{"0 1-3 * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T23:00:00Z", "2026-03-30T00:00:00Z"}},
		{"*/30 1-2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-29T00:00:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}},
		{"0 30 2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
		{"*/10 2 * * *", "Europe/Paris", "2026-03-28T12:00:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-29T01:10:00Z", "2026-03-29T01:20:00Z", "2026-03-29T01:30:00Z"}},
		{"30 2 * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
		{"30 1 * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T23:30:00Z", "2026-03-30T23:30:00Z", "2026-03-31T23:30:00Z", "2026-04-01T23:30:00Z"}},
		{"0 * * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T03:00:00Z", "2026-03-29T04:00:00Z"}},
		{"0 1-3 * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-29T23:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T01:00:00Z"}},
		{"*/30 1-2 * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-29T23:00:00Z", "2026-03-29T23:30:00Z"}},
		{"0 30 2 * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}},
		{"*/10 2 * * *", "Europe/Paris", "2026-03-29T00:50:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-29T01:10:00Z", "2026-03-29T01:20:00Z", "2026-03-29T01:30:00Z"}},
		{"30 2 * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z"}},
		{"30 1 * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-24T23:30:00Z", "2026-10-26T00:30:00Z", "2026-10-27T00:30:00Z", "2026-10-28T00:30:00Z"}},
		{"0 * * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-24T13:00:00Z", "2026-10-24T14:00:00Z", "2026-10-24T15:00:00Z", "2026-10-24T16:00:00Z"}},
		{"0 1-3 * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-26T00:00:00Z"}},
		{"*/30 1-2 * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-24T23:00:00Z", "2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"}},
		{"0 30 2 * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z"}},
		{"*/10 2 * * *", "Europe/Paris", "2026-10-24T12:00:00Z", []string{"2026-10-25T00:00:00Z", "2026-10-25T00:10:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:30:00Z"}},
		{"30 2 * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z", "2026-10-29T01:30:00Z"}},
		{"30 1 * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-26T00:30:00Z", "2026-10-27T00:30:00Z", "2026-10-28T00:30:00Z", "2026-10-29T00:30:00Z"}},
		{"0 * * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z", "2026-10-25T04:00:00Z"}},
		{"0 1-3 * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-25T02:00:00Z", "2026-10-26T00:00:00Z", "2026-10-26T01:00:00Z", "2026-10-26T02:00:00Z"}},
		{"*/30 1-2 * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-26T00:00:00Z", "2026-10-26T00:30:00Z", "2026-10-26T01:00:00Z", "2026-10-26T01:30:00Z"}},
		{"0 30 2 * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z", "2026-10-29T01:30:00Z"}},
		{"*/10 2 * * *", "Europe/Paris", "2026-10-25T00:40:00Z", []string{"2026-10-25T00:50:00Z", "2026-10-26T01:00:00Z", "2026-10-26T01:10:00Z", "2026-10-26T01:20:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.tz+" "+tt.from, func(t *testing.T) {
			t.Parallel()

			from, err := time.Parse(time.RFC3339, tt.from)
			require.NoError(t, err)
			require.Equal(t, tt.want, nextRuns(t, tt.pattern, tt.tz, from, len(tt.want)))
		})
	}
}

func TestNextStrictlyAfter(t *testing.T) {
	t.Parallel()

	s, err := schedule.Parse("*/1 * * * * *", "")
	require.NoError(t, err)
	for _, tt := range []struct{ from, want int64 }{
		{1796113174084, 1796113175000}, // milliseconds dropped, then the next second
		{1796113175000, 1796113176000}, // exactly on a run: the next one
	} {
		got, err := s.Next(time.UnixMilli(tt.from))
		require.NoError(t, err)
		require.Equal(t, tt.want, got.UnixMilli())
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct{ name, pattern, tz string }{
		{"BadField", "61 * * * *", ""},
		{"TooFewFields", "* * *", ""},
		{"Every", "@every 5m", ""},
		{"Midnight", "@midnight", ""}, // robfig's, not cron-parser's
		{"TZPrefix", "TZ=UTC 0 0 * * *", ""},
		{"HashedRangeInverted", "H(30-10) 0 * * *", ""},
		{"HashedRangeOutside", "0 H(70-80) * * *", ""},
		{"NearestWeekday", "0 0 15W * *", ""},
		{"StandaloneL", "0 0 * * L", ""},
		{"ListedTwice", "0 0 * * 0,7", ""},
		{"MinuteListedTwice", "0,0 * * * *", ""},
		{"HourListedTwice", "0 1-5,3 * * *", ""},
		{"MonthListedTwice", "0 0 1 jan,1 *", ""},
		{"NthWithRange", "0 0 * * 1-2#2", ""},
		{"UnknownZone", "0 * * * *", "Mars/Olympus"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := schedule.Parse(tt.pattern, tt.tz)
			require.Error(t, err)
		})
	}
}

// TestNextDayRules checks cron-parser's day rules, with the runs
// cron-parser 5.10.3 gave from 2026-01-30T10:11:12Z in UTC
// (TestInteropCronNext re-checks such patterns against Node live).
func TestNextDayRules(t *testing.T) {
	t.Parallel()

	from := time.Date(2026, 1, 30, 10, 11, 12, 0, time.UTC)
	for _, tt := range []struct {
		pattern string
		want    []string
	}{
		{"0 0 * * 7", []string{"2026-02-01T00:00:00Z", "2026-02-08T00:00:00Z", "2026-02-15T00:00:00Z"}},    // 7 is Sunday
		{"0 0 * * 1/2", []string{"2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z", "2026-02-04T00:00:00Z"}},  // 1-7/2 reaches 7: Sunday too
		{"0 0 L * *", []string{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"}},    // the last day
		{"0 0 * * 5L", []string{"2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z", "2026-04-24T00:00:00Z"}},   // the last Friday
		{"0 0 * * 1#2", []string{"2026-02-09T00:00:00Z", "2026-03-09T00:00:00Z", "2026-04-13T00:00:00Z"}},  // the second Monday
		{"0 0 1,15 * 1", []string{"2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z", "2026-02-09T00:00:00Z"}}, // either day field
		{"@weekends", []string{"2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-07T00:00:00Z"}},    // cron-parser's alias
	} {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.want, nextRuns(t, tt.pattern, "UTC", from, len(tt.want)))
		})
	}
}

// nextRuns is the first n runs of pattern in tz after from, in UTC RFC 3339.
func nextRuns(t *testing.T, pattern, tz string, from time.Time, n int) []string {
	t.Helper()
	s, err := schedule.Parse(pattern, tz)
	require.NoError(t, err)
	var got []string
	for range n {
		from, err = s.Next(from)
		require.NoError(t, err)
		got = append(got, from.UTC().Format(time.RFC3339))
	}
	return got
}

// TestParseHashed: cron-parser's H draws a value of the field (or of a
// range), H/n every n-th value from a drawn offset; a drover worker taking
// a Node scheduler's run whose pattern uses it must make the next run
// (before, Parse refused H and the scheduler stopped).
func TestParseHashed(t *testing.T) {
	t.Parallel()

	from := time.Date(2026, 1, 30, 10, 11, 12, 0, time.UTC)
	for range 50 {
		s, err := schedule.Parse("H H(2-4) * * THU", "")
		require.NoError(t, err)
		next, err := s.Next(from)
		require.NoError(t, err)
		require.Equal(t, time.Thursday, next.Weekday())
		require.Contains(t, []int{2, 3, 4}, next.Hour())
		require.Zero(t, next.Second())

		s, err = schedule.Parse("H/15 * * * *", "")
		require.NoError(t, err)
		a, err := s.Next(from)
		require.NoError(t, err)
		b, err := s.Next(a)
		require.NoError(t, err)
		require.Equal(t, 15*time.Minute, b.Sub(a), "every 15 minutes from a drawn offset")
	}
	for _, f := range [][]string{{"H", "0", "0", "*", "*", "*"}, {"0", "H/20", "0", "*", "*", "*"}, {"0", "0", "H(2-4)/2", "*", "*", "*"}} {
		for _, draw := range []float64{0, 0.5, 0.999} {
			got, err := schedule.ExpandHashed(f, func() float64 { return draw })
			require.NoError(t, err)
			t.Logf("%v at %v: %v", f, draw, got)
		}
	}
	got, err := schedule.ExpandHashed([]string{"H", "H/20", "H(2-4)/2", "H(1-3)", "*", "H"}, func() float64 { return 0.5 })
	require.NoError(t, err)
	require.Equal(t, []string{"30", "10,30,50", "3", "2", "*", "4"}, got)
}
