package inspect

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keytype"
)

// Failed jobs by error: the same failure repeats with different ids,
// amounts and times in its message ("order 4711: timeout after 30012ms").
// NormalizeError turns such messages into one group key by replacing what
// varies with placeholders, so an operator sees "order <n>: timeout after
// <n>ms" once with its count, and can filter and retry exactly that group
// (Filter.Error, syntax error="...").

var (
	reUUID   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	reHex    = regexp.MustCompile(`(?i)\b(0x)?[0-9a-f]{8,}\b`)
	reQuoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	reNumber = regexp.MustCompile(`\d+(\.\d+)?`)
	reSpace  = regexp.MustCompile(`\s+`)
)

// NormalizeError is the error group of a failed reason: its first line (at
// most ErrorLineMax bytes of it) with uuids, hex ids, quoted values and numbers replaced by <id>, <hex>, <s>
// and <n>, spaces collapsed. A reason whose first line is blank (an error
// thrown with an empty message) is EmptyError, never "": the empty
// Filter.Error selects every job, so the group's filter would have retried
// every failed job instead of its own.
func NormalizeError(reason string) string {
	if s := normalizeLine(reason); s != "" {
		return s
	}
	return EmptyError
}

// EmptyError is the error group of failed reasons whose first line is blank.
const EmptyError = "<empty>"

// ErrorLineMax bounds how much of a failed reason's first line
// NormalizeError reads and a group's Example shows, in bytes; a longer
// line is cut there and ends in "…". A message can be megabytes (a
// response body, a dump): grouping read all of it (3 s for 25 such jobs
// at each dashboard refresh), and the group key, and the filter that
// selects the group, were as long.
const ErrorLineMax = 8 << 10

// errorLine is reason's first line, cut at ErrorLineMax.
func errorLine(reason string) string {
	s := firstLine(reason)
	if len(s) <= ErrorLineMax {
		return s
	}
	cut := ErrorLineMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func normalizeLine(reason string) string {
	s := errorLine(reason)
	s = reUUID.ReplaceAllString(s, "<id>")
	s = reQuoted.ReplaceAllString(s, "<s>")
	s = reHex.ReplaceAllStringFunc(s, func(m string) string {
		if !strings.ContainsAny(m, "0123456789") { // a word, not an id
			return m
		}
		if strings.Trim(m, "0123456789") == "" { // a number: <n> below
			return m
		}
		return "<hex>"
	})
	s = reNumber.ReplaceAllString(s, "<n>")
	return strings.TrimSpace(reSpace.ReplaceAllString(s, " "))
}

// FailureGroup is one error group of a queue's failed jobs.
type FailureGroup struct {
	// Error is the group key (NormalizeError); Example the first line of
	// one reason as it was (cut as the key is), from the newest job of the
	// group.
	Error   string `json:"error"`
	Example string `json:"example"`
	Count   int    `json:"count"`
	// Unrecoverable counts the group's jobs that failed as unrecoverable.
	Unrecoverable int `json:"unrecoverable"`
	// FirstSeen and LastSeen are the group's oldest and newest finishedOn.
	FirstSeen Instant `json:"firstSeen,omitzero"`
	LastSeen  Instant `json:"lastSeen,omitzero"`
	// Filter selects the group in Jobs and RetryJobs (ParseFilter syntax):
	// its error, and for a report over a window (FailureGroupsSince) that
	// window, so it selects the jobs Count counts.
	Filter string `json:"filter"`
}

// FailureReport is GET /api/queues/{queue}/failures.
type FailureReport struct {
	Queue string `json:"queue"`
	// Since is the window's start when the report covers only the jobs
	// that failed since then (FailureGroupsSince).
	Since Instant `json:"since,omitzero"`
	// Scanned counts the failed jobs read; Truncated says there were more
	// than Options.ScanLimit (the newest were read).
	Scanned   int            `json:"scanned"`
	Truncated bool           `json:"truncated"`
	Groups    []FailureGroup `json:"groups"`
}

// FailureGroups groups queue's failed jobs by error, biggest group first.
// It reads up to Options.ScanLimit of the newest failed jobs.
func (i *Inspector) FailureGroups(ctx context.Context, queue string) (*FailureReport, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	return i.FailureGroupsSince(ctx, queue, time.Time{})
}

// FailureGroupsWithin is FailureGroupsSince over the last d ("what broke in
// the last hour?"), measured back from Redis's time, the clock finishedOn is
// written by: on a host whose clock is off, a window from the host's clock
// would take in jobs that failed before it, or leave out ones in it. A d of
// 0 or less means all.
func (i *Inspector) FailureGroupsWithin(ctx context.Context, queue string, d time.Duration) (*FailureReport, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	var since time.Time
	if d > 0 {
		since = i.now(ctx).Add(-d)
	}
	return i.FailureGroupsSince(ctx, queue, since)
}

// FailureGroupsSince is FailureGroups over the jobs that failed at since or
// later ("what broke in the last hour?"); a zero since means all. The
// failed set is ordered by finish time, so it reads only those jobs.
func (i *Inspector) FailureGroupsSince(ctx context.Context, queue string, since time.Time) (*FailureReport, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	// To the ms, finishedOn's unit: the groups' filters name the window
	// in it, and must select the jobs counted here.
	since = since.Truncate(time.Millisecond)
	rep := &FailureReport{Queue: queue, Since: Instant{since}, Groups: []FailureGroup{}}
	byKey := map[string]*FailureGroup{}
	rep.Scanned, rep.Truncated, err = i.scanJobs(ctx, q, drover.StateFailed, false, i.opts.ScanLimit, false, func(j *drover.Job) bool {
		if !since.IsZero() && j.FinishedOn.Before(since) {
			return false // newest first: the rest failed earlier still
		}
		key := NormalizeError(j.FailedReason)
		g := byKey[key]
		if g == nil {
			g = &FailureGroup{Error: key, Example: errorLine(j.FailedReason), FirstSeen: Instant{j.FinishedOn}, LastSeen: Instant{j.FinishedOn},
				Filter: Filter{Error: key, FinishedSince: since}.String()}
			byKey[key] = g
		}
		g.Count++
		if failedForOf(j) == FailedUnrecoverable {
			g.Unrecoverable++
		}
		if j.FinishedOn.Before(g.FirstSeen.Time) {
			g.FirstSeen = Instant{j.FinishedOn}
		}
		if j.FinishedOn.After(g.LastSeen.Time) {
			g.LastSeen, g.Example = Instant{j.FinishedOn}, errorLine(j.FailedReason)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, g := range byKey {
		rep.Groups = append(rep.Groups, *g)
	}
	sort.Slice(rep.Groups, func(a, b int) bool {
		ga, gb := rep.Groups[a], rep.Groups[b]
		if ga.Count != gb.Count {
			return ga.Count > gb.Count
		}
		return ga.LastSeen.After(gb.LastSeen.Time)
	})
	return rep, nil
}

// JobMatch is one queue holding a job id (FindJob).
type JobMatch struct {
	Queue string          `json:"queue"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	State drover.JobState `json:"state"`
}

// FindJob looks for job id in every queue under the prefix.
//
// A queue whose keys another program overwrote with another kind of value
// (Redis's WRONGTYPE) does not end the search: FindJob returns the matches
// in the queues it could read and a *SkippedQueuesError naming each queue
// it could not, so one damaged queue does not hide a job in the others.
// Any other error (Redis unreachable, a closed client) ends the search and
// comes alone.
func (i *Inspector) FindJob(ctx context.Context, id string) ([]JobMatch, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	names, err := i.Queues(ctx)
	if err != nil {
		return nil, err
	}
	// One pipeline of EXISTS finds the queues with a key under that id;
	// only those are read (a prefix with thousands of queues costs one
	// round trip, not thousands).
	exists := make([]*redis.IntCmd, len(names))
	if len(names) > 0 {
		if _, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k, name := range names {
				exists[k] = p.Exists(ctx, i.keys(name).Job(id))
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("inspect: find job %q: %w", id, err)
		}
	}
	out := []JobMatch{}
	var skipped []SkippedQueue
	for k, name := range names {
		if exists[k].Val() == 0 {
			continue
		}
		m, found, err := i.findJobIn(ctx, name, id)
		if _, wrongType := errors.AsType[*keytype.Error](err); wrongType {
			skipped = append(skipped, SkippedQueue{Queue: name, Error: err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, m)
		}
	}
	if len(skipped) > 0 {
		return out, &SkippedQueuesError{Skipped: skipped}
	}
	return out, nil
}

// findJobIn reads job id's name and state in one queue; found is false
// when the queue holds no job of that id.
func (i *Inspector) findJobIn(ctx context.Context, queue, id string) (m JobMatch, found bool, err error) {
	q, err := i.Queue(queue)
	if err != nil {
		return m, false, err
	}
	jobs, err := q.GetJobsByID(ctx, []string{id})
	if err != nil || len(jobs) == 0 {
		return m, false, err
	}
	st, err := q.GetJobState(ctx, id)
	if err != nil {
		return m, false, keytype.Explain(ctx, i.rdb, i.keys(queue), err, id)
	}
	return JobMatch{Queue: queue, ID: id, Name: jobs[0].Name, State: st}, true, nil
}

// SkippedQueue is a queue a search across queues could not read, with why.
type SkippedQueue struct {
	Queue string `json:"queue"`
	Error string `json:"error"`
}

// SkippedQueuesError is returned beside the results of a search across
// queues (FindJob) when some queues could not be read because a key holds
// another kind of value than BullMQ keeps there. The results returned with
// it are those of the other queues and are complete for them.
type SkippedQueuesError struct {
	Skipped []SkippedQueue
}

func (e *SkippedQueuesError) Error() string {
	parts := make([]string, len(e.Skipped))
	for k, s := range e.Skipped {
		parts[k] = fmt.Sprintf("queue %q: %s", s.Queue, s.Error)
	}
	return fmt.Sprintf("%d queue(s) could not be read: %s", len(e.Skipped), strings.Join(parts, "; "))
}
