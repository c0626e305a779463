// Package schedule computes the next run of a cron pattern in a time zone
// the way BullMQ's job schedulers do (they use the npm package cron-parser).
//
// Patterns are parsed by github.com/robfig/cron/v3: five fields (minute hour
// day-of-month month day-of-week) or six with seconds first, names for
// months and days, ranges, lists, steps, '?' and the @yearly/@monthly/
// @weekly/@daily/@hourly descriptors. cron-parser's L, W and # extensions and
// robfig's @every are refused with an error.
//
// Next follows cron-parser's rules where plain cron libraries differ, around
// daylight-saving changes of the pattern's time zone:
//
//   - Strictly after: the next run is after the given time, whose
//     milliseconds are dropped first (12:00:00.084 → 12:00:01 for a
//     per-second pattern; 12:00:01.000 → 12:00:02).
//   - Spring forward: a run scheduled in the skipped wall-clock hour runs at
//     the same minute of the hour the clock lands on (02:30 → 03:30), unless
//     the hour field is every hour, where the skipped times simply do not
//     exist.
//   - Fall back: a run scheduled in the repeated wall-clock hour runs once,
//     in the first pass, unless the hour field is every hour, where both
//     passes run.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed cron pattern in a time zone.
type Schedule struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.Descriptor)

// Location is time zone tz (an IANA name; "" is UTC, as cron-parser uses
// when BullMQ passes no tz).
func Location(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	return loc, nil
}

// Parse reads pattern in time zone tz (see Location).
func Parse(pattern, tz string) (*Schedule, error) {
	loc, err := Location(tz)
	if err != nil {
		return nil, err
	}
	p := strings.TrimSpace(pattern)
	if strings.HasPrefix(p, "@every") || strings.HasPrefix(p, "TZ=") || strings.HasPrefix(p, "CRON_TZ=") {
		return nil, fmt.Errorf("cron pattern %q: @every and TZ= prefixes are not cron-parser syntax", pattern)
	}
	s, err := parser.Parse(p)
	if err != nil {
		return nil, fmt.Errorf("cron pattern %q: %w", pattern, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron pattern %q: not a field schedule", pattern)
	}
	c := *spec
	c.Location = loc
	return &Schedule{spec: &c, loc: loc}, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

const (
	starBit  = 1 << 63
	allHours = 1<<24 - 1
)

// ErrNoRun is returned when the pattern has no run within the search
// horizon (robfig/cron looks five years ahead), e.g. "0 0 30 2 *".
var ErrNoRun = errors.New("cron pattern has no run within five years")

// Next is the first run strictly after t (see the package doc for the
// daylight-saving rules).
func (s *Schedule) Next(t time.Time) (time.Time, error) {
	t = t.In(s.loc)
	from := t
	everyHour := s.spec.Hour&allHours == allHours
	for range 1000 {
		cand := s.spec.Next(from)
		if cand.IsZero() {
			return time.Time{}, ErrNoRun
		}
		if everyHour {
			return cand, nil
		}
		skipTo, gapRun := s.transitions(t, from, cand)
		switch {
		case !gapRun.IsZero():
			return gapRun, nil
		case !skipTo.IsZero():
			from = skipTo.Add(-time.Second)
		default:
			return cand, nil
		}
	}
	return time.Time{}, ErrNoRun
}

// transitions looks at the time zone's changes between from and cand. A
// spring-forward gap whose skipped hours are scheduled gives gapRun, a run
// in the hour landed on, if it comes after t and before cand. A fall-back
// whose repeated hour holds cand, entered from before it, gives skipTo, the
// end of the repeated hour.
func (s *Schedule) transitions(t, from, cand time.Time) (skipTo, gapRun time.Time) {
	// Start with the change that began the current zone period: runs in
	// a landing hour continue after the first one.
	end, next := from.ZoneBounds()
	if end.IsZero() {
		end = next
	}
	for ; ; _, end = end.ZoneBounds() {
		if end.IsZero() || end.After(cand) {
			return time.Time{}, time.Time{}
		}
		before := end.Add(-time.Nanosecond)
		_, offBefore := before.Zone()
		_, offAfter := end.Zone()
		shift := time.Duration(offAfter-offBefore) * time.Second
		switch {
		case shift > 0:
			if r, ok := s.gapRun(t, before, end); ok && r.Before(cand) {
				return time.Time{}, r
			}
		case shift < 0:
			repeatEnd := end.Add(-shift)
			if !cand.Before(end) && cand.Before(repeatEnd) && t.Before(end) {
				return repeatEnd, time.Time{}
			}
		}
	}
}

// gapRun is the run cron-parser makes for a spring-forward change at end:
// when an hour skipped on that day is scheduled, the first time of the
// landing hour after t whose minute and second match.
func (s *Schedule) gapRun(t, before, end time.Time) (time.Time, bool) {
	landing := end.Hour()
	first := (before.Hour() + 1) % 24
	if (landing-before.Hour()+24)%24 < 2 || !s.dayMatches(end) {
		return time.Time{}, false
	}
	scheduled := false
	for h := first; h != landing; h = (h + 1) % 24 {
		if s.spec.Hour&(1<<uint(h)) != 0 {
			scheduled = true
			break
		}
	}
	if !scheduled {
		return time.Time{}, false
	}
	for m := end.Minute(); m < 60; m++ {
		if s.spec.Minute&(1<<uint(m)) == 0 {
			continue
		}
		for sec := 0; sec < 60; sec++ {
			if s.spec.Second&(1<<uint(sec)) != 0 {
				r := time.Date(end.Year(), end.Month(), end.Day(), landing, m, sec, 0, s.loc)
				if !r.Before(end) && r.After(t) {
					return r, true
				}
			}
		}
	}
	return time.Time{}, false
}

// dayMatches is cron's day rule: month, then day of month and day of week
// (both must match when either is '*', else either may).
func (s *Schedule) dayMatches(t time.Time) bool {
	if s.spec.Month&(1<<uint(t.Month())) == 0 {
		return false
	}
	dom := s.spec.Dom&(1<<uint(t.Day())) != 0
	dow := s.spec.Dow&(1<<uint(t.Weekday())) != 0
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
