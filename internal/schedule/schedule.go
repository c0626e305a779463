// Package schedule computes the next run of a cron pattern in a time zone
// the way BullMQ's job schedulers do (they use the npm package cron-parser).
//
// A pattern has five fields (minute hour day-of-month month day-of-week) or
// six with seconds first, or is one of cron-parser's aliases (@yearly,
// @annually, @monthly, @weekly, @daily, @hourly, @minutely, @secondly,
// @weekdays, @weekends). Seconds, minutes, hours and months are parsed by
// github.com/robfig/cron/v3 (numbers, names, ranges, lists, steps, '*' and
// '?'). The two day fields follow cron-parser's rules, read here: day of
// week 0-7 (7 and 0 are Sunday, also in ranges and steps: 5-7, 1/2), names,
// L in day of month (the last day), nL in day of week (the last such
// weekday of the month), n#k (the k-th such weekday, k 1-5), and a day
// matches either field when both are restricted (neither is '*' or '?'),
// else the restricted one. cron-parser's hashed values (H, H(a-b), H/n,
// H(a-b)/n) are drawn at random on every Parse, as cron-parser draws them
// without a seed on every parse (BullMQ's hashSeed is not read). What
// cron-parser refuses is refused with an error: robfig's @every and
// @midnight, W, a value listed twice.
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
	// spec holds the seconds, minutes, hours and months; its day fields
	// are '*', days decides the days.
	spec *cron.SpecSchedule
	days *days
	loc  *time.Location
}

var parser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Parse reads pattern in time zone tz (see Location).
func Parse(pattern, tz string) (*Schedule, error) {
	loc, err := Location(tz)
	if err != nil {
		return nil, err
	}
	p := pattern
	if a, ok := aliases[pattern]; ok {
		p = a
	}
	fields := strings.Fields(p)
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	if len(fields) != 6 {
		return nil, fmt.Errorf("cron pattern %q: want 5 or 6 fields (seconds first) or one of cron-parser's @ aliases, got %d fields", pattern, len(fields))
	}
	if strings.Contains(fields[0], "=") {
		return nil, fmt.Errorf("cron pattern %q: TZ= prefixes are not cron-parser syntax", pattern)
	}
	fields, err = expandHashed(fields, randomDraw)
	if err != nil {
		return nil, fmt.Errorf("cron pattern %q: %w", pattern, err)
	}
	if err := checkListedOnce(fields); err != nil {
		return nil, fmt.Errorf("cron pattern %q: %w", pattern, err)
	}
	d, err := parseDays(fields[3], fields[5])
	if err != nil {
		return nil, fmt.Errorf("cron pattern %q: %w", pattern, err)
	}
	s, err := parser.Parse(strings.Join([]string{fields[0], fields[1], fields[2], "*", fields[4], "*"}, " "))
	if err != nil {
		return nil, fmt.Errorf("cron pattern %q: %w", pattern, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron pattern %q: not a field schedule", pattern)
	}
	c := *spec
	c.Location = loc
	return &Schedule{spec: &c, days: d, loc: loc}, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

const allHours = 1<<24 - 1

// ErrNoRun is returned when the pattern has no run within five years,
// e.g. "0 0 30 2 *".
var ErrNoRun = errors.New("cron pattern has no run within five years")

// Next is the first run strictly after t (see the package doc for the
// daylight-saving rules).
func (s *Schedule) Next(t time.Time) (time.Time, error) {
	t = t.In(s.loc)
	from := t
	horizon := t.AddDate(5, 0, 0)
	everyHour := s.spec.Hour&allHours == allHours
	// Each pass moves on by at least a day or a time-zone change: five
	// years of days bound it.
	for range 4000 {
		cand := s.spec.Next(from)
		if cand.IsZero() || cand.After(horizon) {
			return time.Time{}, ErrNoRun
		}
		if !s.days.match(cand) {
			// The next day's first second is a candidate again.
			y, m, d := cand.Date()
			from = time.Date(y, m, d+1, 0, 0, 0, 0, s.loc).Add(-time.Second)
			continue
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

// dayMatches reports whether the pattern runs on t's day: its month, then
// the day fields (see days.match).
func (s *Schedule) dayMatches(t time.Time) bool {
	return s.spec.Month&(1<<uint(t.Month())) != 0 && s.days.match(t)
}
