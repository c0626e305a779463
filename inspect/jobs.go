package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/keytype"
	"github.com/seed40057009/drover/internal/scripts"
)

// RetryState is where a job stands in its retry life: the question
// "will this job run again, and when?" answered from its state and counters.
type RetryState string

const (
	// RetryStateWaiting: ready to run, never failed.
	RetryStateWaiting RetryState = "waiting"
	// RetryStateScheduled: delayed, not by a failure's backoff (a delayed
	// add, or a processor that returned drover.Delay or called Node's
	// job.moveToDelayed, even after an earlier failure).
	RetryStateScheduled RetryState = "scheduled"
	// RetryStateActive: a worker runs it now.
	RetryStateActive RetryState = "active"
	// RetryStateRetrying: failed at least once and ready for its next
	// attempt (no backoff, backoff over, or retried by hand).
	RetryStateRetrying RetryState = "retrying"
	// RetryStateBackoff: failed at least once and waits in the delayed set
	// for its next attempt, due at NextRun.
	RetryStateBackoff RetryState = "waiting-for-backoff"
	// RetryStateStalledRecovered: its worker stopped renewing the lock; the
	// stalled checker put it back in wait (StalledCount > 0).
	RetryStateStalledRecovered RetryState = "stalled-recovered"
	// RetryStateFailed: failed for good (budget spent, unrecoverable error,
	// or stalled too often). Only a manual retry runs it again.
	RetryStateFailed RetryState = "failed"
	// RetryStateCompleted: done.
	RetryStateCompleted RetryState = "completed"
	// RetryStateWaitingChildren: a parent waiting for its children.
	RetryStateWaitingChildren RetryState = "waiting-children"
	// RetryStateUnknown: the job is in no state list (being moved, or gone).
	RetryStateUnknown RetryState = "unknown"
)

// ClassifyRetry derives the retry state of job from its queue state.
func ClassifyRetry(state drover.JobState, job *drover.Job) RetryState {
	failedBefore := job.AttemptsMade > 0
	switch state {
	case drover.StateFailed:
		return RetryStateFailed
	case drover.StateCompleted:
		return RetryStateCompleted
	case drover.StateActive:
		return RetryStateActive
	case drover.StateDelayed:
		if delayedByFailure(job) {
			return RetryStateBackoff
		}
		return RetryStateScheduled
	case drover.StateWaiting, drover.StatePrioritized, drover.StatePaused:
		switch {
		case failedBefore && job.FailedReason != "":
			return RetryStateRetrying
		case job.StalledCount > 0:
			return RetryStateStalledRecovered
		case failedBefore:
			return RetryStateRetrying
		}
		return RetryStateWaiting
	case drover.StateWaitingChildren:
		return RetryStateWaitingChildren
	}
	return RetryStateUnknown
}

// Budget is a job's attempts against its attempt budget (opts.attempts).
type Budget struct {
	// Made counts finished attempts (BullMQ's atm).
	Made int `json:"made"`
	// Started counts activations, stalls included (BullMQ's ats).
	Started int `json:"started"`
	// Allowed is opts.attempts, at least 1.
	Allowed int `json:"allowed"`
	// Left is Allowed - Made, at least 0.
	Left int `json:"left"`
	// Used is Made / Allowed.
	Used float64 `json:"used"`
}

// BudgetOf reads job's attempt budget.
func BudgetOf(job *drover.Job) Budget {
	b := Budget{Made: job.AttemptsMade, Started: job.AttemptsStarted, Allowed: max(job.Opts.Attempts, 1)}
	b.Left = max(b.Allowed-b.Made, 0)
	b.Used = float64(b.Made) / float64(b.Allowed)
	return b
}

// JobSummary is one job in a list. The fields it shares with BullMQ's job
// JSON have BullMQ's names and units (see the package doc on JSON).
type JobSummary struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	State      drover.JobState `json:"state"`
	RetryState RetryState      `json:"retryState"`
	Budget     Budget          `json:"budget"`
	// AttemptsMade and AttemptsStarted are BullMQ's counters (atm, ats), as
	// Budget.Made and Budget.Started.
	AttemptsMade    int `json:"attemptsMade"`
	AttemptsStarted int `json:"attemptsStarted"`
	// StalledCount is BullMQ's stalledCounter (stc).
	StalledCount int `json:"stalledCounter"`
	// FailedReason is cut at SummaryReasonMax bytes, ending in "…" (Job
	// has all of it).
	FailedReason string `json:"failedReason,omitempty"`
	// Timestamp is when the job was added (BullMQ's timestamp).
	Timestamp   Instant `json:"timestamp,omitzero"`
	ProcessedOn Instant `json:"processedOn,omitzero"`
	FinishedOn  Instant `json:"finishedOn,omitzero"`
	// NextRun is when a delayed job is due (from its delayed-set score).
	NextRun     Instant `json:"nextRun,omitzero"`
	ProcessedBy string  `json:"processedBy,omitempty"`
	// FailedFor says why a failed job failed for good (FailedUnrecoverable,
	// ...); "" for jobs in other states.
	FailedFor FailedFor `json:"failedFor,omitempty"`
	// Progress is the job's progress as its processor reported it (a number
	// 0..100 or any JSON value), if any.
	Progress json.RawMessage `json:"progress,omitempty"`
}

// FailedFor is why a job failed for good.
type FailedFor string

const (
	// FailedUnrecoverable: the processor said no attempt can succeed
	// (drover.Unrecoverable, BullMQ's UnrecoverableError), whatever
	// attempts were left. A bulk retry leaves these jobs alone unless told
	// otherwise.
	FailedUnrecoverable FailedFor = "unrecoverable"
	// FailedExhausted: every attempt of its budget failed.
	FailedExhausted FailedFor = "attempts-exhausted"
	// FailedStalled: its workers stopped renewing the lock more often than
	// the queue's maxStalledCount allows.
	FailedStalled FailedFor = "stalled-too-often"
	// FailedEarly: it failed for good with attempts left for another reason
	// (a backoff strategy that said stop, a started-attempts cap).
	FailedEarly FailedFor = "stopped-early"
	// FailedCancelled: drover.Queue.CancelJob cancelled its last attempt,
	// or the job before any worker took it.
	FailedCancelled FailedFor = "cancelled"
	// FailedTimedOut: its last attempt ran past its timeout
	// (drover.JobOptions.Timeout, drover.WorkerOptions.JobTimeout).
	FailedTimedOut FailedFor = "timed-out"
	// FailedChild: a flow parent failed because a child of its with
	// failParentOnFailure (drover.FailParent) failed; its own processor
	// did not run for it (failedReason "child <key> failed"). Running it
	// again does not bring the child back: a bulk retry leaves these jobs
	// alone unless told otherwise, as unrecoverable ones.
	FailedChild FailedFor = "child-failed"
)

// Label is FailedFor for people: "failed for good: unrecoverable".
func (f FailedFor) Label() string {
	switch f {
	case FailedUnrecoverable:
		return "failed for good: unrecoverable"
	case FailedExhausted:
		return "failed for good: attempts used up"
	case FailedStalled:
		return "failed for good: stalled too often"
	case FailedEarly:
		return "failed for good before its budget was spent"
	case FailedCancelled:
		return "failed for good: cancelled"
	case FailedTimedOut:
		return "failed for good: timed out"
	case FailedChild:
		return "failed for good: a child failed"
	}
	return "failed for good"
}

// failedForOf tells why a failed job failed for good: from drover's record
// of its last attempt, from the trace a Node worker kept (BullMQ's
// UnrecoverableError names itself on the trace's first line), else from its
// counters.
func failedForOf(job *drover.Job) FailedFor {
	// A job stalled too often is failed by the next worker that takes it
	// (BullMQ's deferred failure) through an unrecoverable error: what
	// failed were its workers, not the job, so it is not "unrecoverable".
	if strings.Contains(job.FailedReason, "stalled more than allowable limit") {
		return FailedStalled
	}
	// BullMQ's deferred failure of a parent whose failParentOnFailure child
	// failed (drover writes the same text).
	if childFailure(job.FailedReason) {
		return FailedChild
	}
	// Nothing fails a job that never started but drover's CancelJob of a
	// queued job (workers fail only what they took).
	if job.AttemptsStarted == 0 && job.ProcessedOn.IsZero() && strings.HasPrefix(job.FailedReason, "cancelled") {
		return FailedCancelled
	}
	if n := len(job.Timeline); n > 0 && job.Timeline[n-1].N >= job.AttemptsStarted {
		switch job.Timeline[n-1].Outcome {
		case drover.OutcomeFailedUnrecoverable:
			return FailedUnrecoverable
		case drover.OutcomeCancelled:
			return FailedCancelled
		case drover.OutcomeTimedOut:
			return FailedTimedOut
		}
	}
	if n := len(job.Stacktrace); n > 0 && strings.HasPrefix(job.Stacktrace[n-1], "UnrecoverableError") {
		return FailedUnrecoverable
	}
	if b := BudgetOf(job); b.Made >= b.Allowed {
		return FailedExhausted
	}
	return FailedEarly
}

// childFailure reports whether reason is BullMQ's deferred failure of a
// flow parent whose failParentOnFailure child failed ("child <key>
// failed"; drover writes the same text): the worker that took the parent
// failed it without running it.
func childFailure(reason string) bool {
	return strings.HasPrefix(reason, "child ") && strings.HasSuffix(reason, " failed")
}

func summarize(state drover.JobState, job *drover.Job, nextRun time.Time) JobSummary {
	s := JobSummary{
		ID: job.ID, Name: job.Name, State: state, RetryState: ClassifyRetry(state, job),
		Budget: BudgetOf(job), AttemptsMade: job.AttemptsMade, AttemptsStarted: job.AttemptsStarted,
		StalledCount: job.StalledCount, FailedReason: job.FailedReason,
		Timestamp: Instant{job.Timestamp}, ProcessedOn: Instant{job.ProcessedOn}, FinishedOn: Instant{job.FinishedOn},
		NextRun: Instant{nextRun}, ProcessedBy: job.ProcessedBy, Progress: job.Progress,
	}
	if state == drover.StateFailed {
		s.FailedFor = failedForOf(job)
	}
	return s
}

// ListOptions select a page of Jobs.
type ListOptions struct {
	// State is the state to list. Required.
	State drover.JobState
	// Filter selects jobs within the state. Zero = all.
	Filter Filter
	// Offset is the position in the state's list to start at. Default 0.
	// Jobs that enter or leave the state before that position shift the
	// page: turn pages with After and Before instead.
	Offset int
	// After, a page's NextCursor, lists the page that starts right after
	// that page's last job, wherever the job is now. Offset is ignored.
	After Cursor
	// Before, a page's PrevCursor, lists the page that ends right before
	// that page's first job. Offset is ignored; at most one of After and
	// Before.
	Before Cursor
	// Limit is the page size. Defaults to PageSizeDefault.
	Limit int
	// Asc lists oldest first (for delayed: soonest due first; for
	// prioritized: the next to run first, by priority then age). Default
	// the other way round.
	Asc bool
}

// JobPage is one page of Jobs.
type JobPage struct {
	Queue string          `json:"queue"`
	State drover.JobState `json:"state"`
	// Total counts the state's jobs, filter or not.
	Total int64        `json:"total"`
	Jobs  []JobSummary `json:"jobs"`
	// Offset is the position of the page's first job read (filtered out
	// or not) in the state's order.
	Offset int `json:"offset"`
	// NextOffset is the Offset of the next page; meaningful when More.
	NextOffset int  `json:"nextOffset"`
	More       bool `json:"more"`
	// Prev says jobs come before this page.
	Prev bool `json:"prev"`
	// NextCursor (set when More) and PrevCursor (set when Prev) turn the
	// page: ListOptions.After and Before. A page that read no job (the
	// jobs after a cursor all left) has no cursor: start again at the
	// first page.
	NextCursor Cursor `json:"nextCursor,omitempty"`
	PrevCursor Cursor `json:"prevCursor,omitempty"`
	// Moved is set when the cursor's job was not where the page before
	// had it: the state changed between the two pages.
	Moved *Moved `json:"moved,omitempty"`
	// Scanned counts the jobs read for this page. A page stops after
	// Options.ScanLimit jobs even when it is not full (a filter matched
	// few, or ids had no job hash left): Truncated.
	Scanned   int  `json:"scanned"`
	Truncated bool `json:"truncated"`
	// Unreadable are the jobs of the scanned range whose hashes do not
	// decode; Jobs has the others.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Jobs lists a page of queue's jobs in one state.
func (i *Inspector) Jobs(ctx context.Context, queue string, opts *ListOptions) (*JobPage, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	o.Limit = cmp.Or(o.Limit, PageSizeDefault)
	if o.Limit < 0 || o.Offset < 0 {
		return nil, fmt.Errorf("%w: ListOptions.Limit and Offset must not be negative, got %d and %d", drover.ErrInvalidOption, o.Limit, o.Offset)
	}
	if o.State == "" {
		return nil, fmt.Errorf("%w: ListOptions.State is required", drover.ErrInvalidOption)
	}
	if o.After != "" && o.Before != "" {
		return nil, fmt.Errorf("%w: ListOptions.After and Before are both set; a page turns one way", drover.ErrInvalidOption)
	}
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	counts, err := q.GetJobCounts(ctx, o.State)
	if err != nil {
		return nil, err
	}
	page := &JobPage{Queue: queue, State: o.State, Total: counts[o.State], Jobs: []JobSummary{}}
	cur := o.After
	if o.Before != "" {
		cur = o.Before
	}
	var at anchor
	if cur != "" {
		if at, err = i.locate(ctx, queue, o.State, o.Asc, cur); err != nil {
			return nil, err
		}
		if cp, _ := cur.parts(); at.gone || at.pos != cp.pos {
			page.Moved = &Moved{ID: cp.id, From: cp.pos, To: at.pos, Gone: at.gone, Approximate: at.approx}
		}
	}
	if o.Before != "" && at.pos > 0 {
		// Read backwards from the job before the cursor's: position p in
		// the state's order is total-1-p in the other.
		s, err := i.scan(ctx, q, &o, at.total-at.pos, !o.Asc)
		if err != nil {
			return nil, err
		}
		slices.Reverse(s.jobs)
		slices.Reverse(s.unreadable)
		page.Jobs, page.Unreadable, page.Scanned, page.Truncated = s.jobs, s.unreadable, s.scanned, s.truncated
		page.Offset = at.total - s.end
		page.NextOffset = at.pos
		page.More = at.pos < at.total
		page.Prev = !s.exhausted && page.Offset > 0
		// Read backwards, the scan's last ids are the page's first.
		first, last := slices.Clone(s.tail), slices.Clone(s.head)
		slices.Reverse(first)
		slices.Reverse(last)
		return page, i.cursors(ctx, page, o.Asc, first, last)
	}
	start := o.Offset
	switch {
	case o.After != "" && at.gone:
		start = at.pos
	case o.After != "":
		start = at.pos + 1
	case o.Before != "":
		start = 0 // nothing comes before the cursor's job any more
	}
	s, err := i.scan(ctx, q, &o, start, o.Asc)
	if err != nil {
		return nil, err
	}
	page.Jobs, page.Unreadable, page.Scanned, page.Truncated = s.jobs, s.unreadable, s.scanned, s.truncated
	page.Offset = start
	page.NextOffset = s.end
	page.More = !s.exhausted && int64(s.end) < page.Total
	page.Prev = start > 0
	return page, i.cursors(ctx, page, o.Asc, s.head, s.tail)
}

// cursors sets the page's cursors from the ids it read at its two ends,
// in the listed order: first starts with the page's first id, last ends
// with its last. A list's cursors also name the jobs around the edge.
func (i *Inspector) cursors(ctx context.Context, page *JobPage, asc bool, first, last []string) error {
	if len(first) == 0 {
		return nil
	}
	firstID, lastID := first[0], last[len(last)-1]
	key, isList, err := stateKey(i.keys(page.Queue), page.State)
	if err != nil {
		return err
	}
	if !isList {
		scores, err := i.edgeScores(ctx, page.Queue, page.State, firstID, lastID)
		if err != nil {
			return err
		}
		if page.Prev {
			page.PrevCursor = cursorOf(page.Offset, scores[0], firstID, nil, nil)
		}
		if page.More {
			page.NextCursor = cursorOf(page.NextOffset-1, scores[1], lastID, nil, nil)
		}
		return nil
	}
	// The jobs listed right outside the page, read with the edge job to
	// check that the list did not shift since the page was read (then the
	// cursor names only the page's own neighbours).
	var outBefore, outAfter []string
	if page.Prev || page.More {
		var beforeCmd, afterCmd *redis.StringSliceCmd
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			if page.Prev {
				beforeCmd = listedRange(ctx, p, key, asc, max(page.Offset-cursorNeighbours, 0), page.Offset)
			}
			if page.More {
				afterCmd = listedRange(ctx, p, key, asc, page.NextOffset-1, page.NextOffset-1+cursorNeighbours)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the jobs next to a page of %s of queue %q: %w", page.State, page.Queue, err)
		}
		if beforeCmd != nil {
			if ids := listed(beforeCmd.Val(), asc); len(ids) > 0 && ids[len(ids)-1] == firstID {
				outBefore = ids[:len(ids)-1]
				slices.Reverse(outBefore) // nearest first
			}
		}
		if afterCmd != nil {
			if ids := listed(afterCmd.Val(), asc); len(ids) > 0 && ids[0] == lastID {
				outAfter = ids[1:]
			}
		}
	}
	if page.Prev {
		page.PrevCursor = cursorOf(page.Offset, "", firstID, outBefore, first[1:])
	}
	if page.More {
		inside := slices.Clone(last[:len(last)-1])
		slices.Reverse(inside) // nearest first
		page.NextCursor = cursorOf(page.NextOffset-1, "", lastID, inside, outAfter)
	}
	return nil
}

// listedRange queues the LRANGE of the listed positions [from, to] of a
// list: from its head when newest first, else from its tail.
func listedRange(ctx context.Context, p redis.Pipeliner, key string, asc bool, from, to int) *redis.StringSliceCmd {
	if asc {
		return p.LRange(ctx, key, int64(-to-1), int64(-from-1))
	}
	return p.LRange(ctx, key, int64(from), int64(to))
}

// listed puts listedRange's answer in the listed order.
func listed(ids []string, asc bool) []string {
	if asc {
		ids = slices.Clone(ids)
		slices.Reverse(ids)
	}
	return ids
}

// scanned is what scan read: the matching jobs, the range [start, end) it
// read in its order, and the ids at its two ends: head the first ones it
// read, tail the last ones (cursorNeighbours+1 each, in its order).
type scanned struct {
	jobs         []JobSummary
	unreadable   []Unreadable
	end, scanned int
	head, tail   []string
	exhausted    bool
	truncated    bool
}

// scan reads the state's ids from position start in the order asc says,
// until o.Limit jobs match o.Filter, the state ends, or it reached the
// scan limit. Without a filter every id read is a job of the page, but for
// ids whose hash is gone (deleted, evicted): a state full of them read
// whole for one page without the limit.
func (i *Inspector) scan(ctx context.Context, q *drover.Queue, o *ListOptions, start int, asc bool) (*scanned, error) {
	s := &scanned{jobs: []JobSummary{}, end: start}
	chunk := o.Limit
	if !o.Filter.IsZero() {
		chunk = 200
	}
	for len(s.jobs) < o.Limit {
		if s.scanned >= i.opts.ScanLimit {
			more, err := holdsMore(ctx, q, o.State, s.end, asc)
			if err != nil {
				return nil, err
			}
			s.truncated, s.exhausted = more, !more
			break
		}
		n := min(chunk, i.opts.ScanLimit-s.scanned)
		ids, err := q.GetJobIDs(ctx, []drover.JobState{o.State}, int64(s.end), int64(s.end+n-1), asc)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			s.exhausted = true
			break
		}
		jobs, err := i.readJobs(ctx, q, o.State, ids, o.Filter.Reason != "")
		if err != nil {
			return nil, err
		}
		used := len(ids)
		for k, id := range ids {
			j := jobs[id]
			if j != nil && j.bad != "" {
				s.unreadable = append(s.unreadable, Unreadable{ID: id, Error: j.bad})
				continue
			}
			if j == nil || !o.Filter.Match(j.job) {
				continue
			}
			s.jobs = append(s.jobs, summarize(o.State, j.job, j.nextRun))
			if len(s.jobs) == o.Limit {
				used = k + 1
				break
			}
		}
		for _, id := range ids[:used] {
			if len(s.head) <= cursorNeighbours {
				s.head = append(s.head, id)
			}
			if len(s.tail) > cursorNeighbours {
				s.tail = s.tail[1:]
			}
			s.tail = append(s.tail, id)
		}
		s.end += used
		s.scanned += used
		if used == len(ids) && len(ids) < n {
			s.exhausted = true
			break
		}
	}
	return s, nil
}

type readJob struct {
	job     *drover.Job
	nextRun time.Time
	// bad is set, and job nil, when the hash does not decode.
	bad string
}

// summaryFields are the job hash fields a JobSummary (and Filter, and
// BudgetOf) needs: lists never read data, return values or logs, however
// big they are.
var summaryFields = []string{"name", "opts", "timestamp", "processedOn", "finishedOn", "atm", "attemptsMade", "ats", "stc", "failedReason", "pb", "progress"}

// failedFields add what tells why a failed job failed for good (FailedFor):
// its stack traces and drover's record of its attempts.
var failedFields = append(slices.Clip(summaryFields), "stacktrace", jobcodec.TimelineField)

// SummaryReasonMax bounds, in bytes, the failed reason of a job in a list
// (a JobSummary, a failure group's scan, a bulk retry's): a longer one is
// cut there, in Redis, and ends in "…"; Job has all of it. A filter on
// the reason (Filter.Reason) reads it whole. It is twice ErrorLineMax, so
// a cut reason still has the error group of the whole one.
const SummaryReasonMax = 2 * ErrorLineMax

// traceMax bounds the last stack trace and the last attempt record a list
// reads: they only tell why a job failed for good (an UnrecoverableError's
// trace starts with its name; an attempt's number and outcome come before
// its error).
const traceMax = 512

// readChunk is how many jobs one read of readJobs takes: a script call
// holds the server while it runs.
const readChunk = 100

// readJobs reads the summary fields of jobs by id, and the due times of
// delayed jobs; a failed job's last stack trace and last attempt too, which
// tell why it failed for good. Long values are cut in Redis
// (scripts.ReadSummaries): a 1 MB payload costs a list, a failure grouping
// or a bulk retry's scan nothing, and a 1 MB failure (held in the reason,
// in each stack trace and in each attempt of the timeline) costs them
// SummaryReasonMax and traceMax twice. With wholeReason the failed
// reason comes whole, for a filter on its text.
func (i *Inspector) readJobs(ctx context.Context, q *drover.Queue, state drover.JobState, ids []string, wholeReason bool) (map[string]*readJob, error) {
	want := summaryFields
	if state == drover.StateFailed {
		want = failedFields
	}
	k := i.keys(q.Name())
	out := make(map[string]*readJob, len(ids))
	for from := 0; from < len(ids); from += readChunk {
		chunk := ids[from:min(from+readChunk, len(ids))]
		read, err := scripts.ReadSummaries(ctx, i.rdb, k, scripts.SummaryCut{
			Reason: SummaryReasonMax, WholeReason: wholeReason, Trace: traceMax, Score: state == drover.StateDelayed,
		}, want, chunk)
		if err != nil {
			return nil, fmt.Errorf("read jobs of queue %q: %w", q.Name(), keytype.Explain(ctx, i.rdb, k, err, chunk...))
		}
		for n, id := range chunk {
			r, err := decodeSummary(id, want, read[n])
			if err != nil {
				return nil, fmt.Errorf("read jobs of queue %q: %w", q.Name(), err)
			}
			if r != nil {
				out[id] = r
			}
		}
	}
	return out, nil
}

// decodeSummary is the job ReadSummaries read, nil when it has no hash.
func decodeSummary(id string, want []string, read scripts.Summary) (*readJob, error) {
	m := make(map[string]string, len(want))
	for f, v := range read.Values {
		if s, ok := v.(string); ok {
			m[want[f]] = s
		}
	}
	if r, ok := m["failedReason"]; ok && int64(len(r)) < read.ReasonLen {
		m["failedReason"] = r + "…"
	}
	rec, ok, err := jobcodec.DecodeMap(id, m)
	var fe *jobcodec.FieldError
	if errors.As(err, &fe) {
		return &readJob{bad: fe.Error()}, nil
	}
	if err != nil || !ok {
		return nil, err // !ok: removed since it was listed
	}
	r := &readJob{job: &drover.Job{
		ID: id, Name: rec.Name, RawOpts: rec.RawOpts, Opts: drover.JobOptions{Attempts: int(rec.Opts.Attempts)},
		Timestamp: msTime(rec.Timestamp), ProcessedOn: msTime(rec.ProcessedOn), FinishedOn: msTime(rec.FinishedOn),
		AttemptsMade: int(rec.AttemptsMade), AttemptsStarted: int(rec.AttemptsStarted), StalledCount: int(rec.StalledCounter),
		FailedReason: rec.FailedReason, ProcessedBy: rec.ProcessedBy, Progress: rec.Progress,
		Stacktrace: rec.Stacktrace, Timeline: drover.DecodeTimeline(rec.Timeline),
	}}
	if read.Score != "" {
		if sc, err := strconv.ParseFloat(read.Score, 64); err == nil {
			r.nextRun = dueOf(sc)
		}
	}
	return r, nil
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// dueTimes reads the delayed-set due time of each id that is delayed.
func (i *Inspector) dueTimes(ctx context.Context, queue string, ids []string) (map[string]time.Time, error) {
	k := i.keys(queue)
	cmds := make([]*redis.FloatCmd, len(ids))
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, id := range ids {
			cmds[n] = p.ZScore(ctx, k.Delayed(), id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read due times in queue %q: %w", queue, err)
	}
	out := make(map[string]time.Time, len(ids))
	for n, c := range cmds {
		if s, err := c.Result(); err == nil {
			out[ids[n]] = dueOf(s)
		}
	}
	return out, nil
}

// schedulerPending reports whether job id is the pending run of job
// scheduler sched: the run its next time names ("repeat:<id>:<ms>"), as
// the engine's refusals (BullMQ's isJobSchedulerJob) tell it.
func (i *Inspector) schedulerPending(ctx context.Context, queue, id, sched string) (bool, error) {
	next, err := i.rdb.ZScore(ctx, i.keys(queue).Repeat(), sched).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read job scheduler %q of queue %q: %w", sched, queue, err)
	}
	return id == "repeat:"+sched+":"+strconv.FormatInt(int64(next), 10), nil
}

// dueOf turns a delayed-set score into the due time.
func dueOf(score float64) time.Time { return time.UnixMilli(keys.DueOfScore(score)) }

// scoreOf is the lowest delayed-set score of jobs due at t.
func scoreOf(t time.Time) int64 { return keys.DelayedScore(t.UnixMilli(), 0) }

// Attempt is one attempt of a job in its timeline.
type Attempt struct {
	// N is the attempt number (BullMQ's ats at activation).
	N int `json:"n"`
	// Start and End bound the attempt; zero when not known (jobs processed
	// by Node BullMQ keep only their last attempt's times).
	Start Instant `json:"start,omitzero"`
	End   Instant `json:"end,omitzero"`
	// Outcome is the name of a drover.Outcome (drover.Outcome.String), or
	// OutcomeActive for the attempt running now.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	Worker  string `json:"worker,omitempty"`
	// Backoff is the wait chosen before the next attempt (outcomes
	// retry-delayed and delayed), in ms in JSON.
	Backoff time.Duration `json:"-"`
	// NextRun is when the next attempt was due (outcomes retry-delayed and
	// delayed).
	NextRun Instant `json:"nextRun,omitzero"`
	// Unrecoverable marks the failed attempt that ended the job through
	// drover.Unrecoverable or BullMQ's UnrecoverableError (outcome
	// failed-unrecoverable).
	Unrecoverable bool `json:"unrecoverable,omitempty"`
	// Outside marks the entry that is not an attempt: the job failed
	// between attempts or before any (OutcomeFailedUnrun), cancelled or
	// failed by a flow child. N is the slot after the last attempt.
	Outside bool `json:"outside,omitempty"`
	// Recorded says a drover worker wrote this attempt down as it ended.
	// Attempts it did not record (a Node worker ran them, a worker stalled,
	// or a drover worker's first try completed, which it does not record)
	// are rebuilt from the job's counters: their times are unknown.
	Recorded bool `json:"recorded"`
	// Fresh is set on the entry of outcome OutcomeFreshAttempts (Outside,
	// N 0, End the retry's time): what a retry with fresh attempts reset.
	Fresh *FreshAttempts `json:"fresh,omitempty"`
}

// FreshAttempts is what a retry with fresh attempts reset (Attempt.Fresh,
// from drover.FreshAttempts).
type FreshAttempts struct {
	// From is the state the job was retried from.
	From drover.JobState `json:"from"`
	// Made and Started are the job's AttemptsMade and AttemptsStarted
	// before the retry.
	Made    int `json:"made"`
	Started int `json:"started"`
	// ResetMade and ResetStarted say which went back to 0: after
	// ResetStarted the next attempt is #1 again.
	ResetMade    bool `json:"resetMade"`
	ResetStarted bool `json:"resetStarted"`
}

// OutcomeFreshAttempts is the Attempt.Outcome of the boundary a retry with
// fresh attempts left (drover.RetryOptions.ResetAttemptsMade or
// ResetAttemptsStarted: the control room's and the CLI's "fresh attempts").
// No attempt ran there: the entries before it are the earlier runs'
// attempts, numbered as they ran; those after it are numbered from the
// reset counters, from #1 again when AttemptsStarted was reset.
const OutcomeFreshAttempts = "fresh-attempts"

// OutcomeActive is the Attempt.Outcome of the attempt running now.
const OutcomeActive = "active"

// OutcomeFailedUnrun is the Attempt.Outcome of a job that failed without
// any attempt running: cancelled while queued (Queue.CancelJob), or a flow
// parent failed by a child (failParentOnFailure). Its End is when it
// failed, its Error why; it spent no attempt.
const OutcomeFailedUnrun = "failed-unrun"

// Timeline sources.
const (
	// TimelineDrover: recorded attempt by attempt by drover workers.
	TimelineDrover = "drover"
	// TimelineDerived: rebuilt from the job's counters and last times, for
	// jobs only Node BullMQ processed.
	TimelineDerived = "derived"
)

// Lock is an active job's lock.
type Lock struct {
	Held bool `json:"held"`
	// TTL is how long the lock lives unless renewed (ms in JSON).
	TTL time.Duration `json:"-"`
	// Token is the holder's lock token (drover: "<worker id>:<attempt>").
	Token string `json:"token,omitempty"`
}

// JobDetail is everything the retry-state inspector shows about one job.
// The fields it shares with BullMQ's job JSON have BullMQ's names and units
// (see the package doc on JSON).
type JobDetail struct {
	JobSummary
	Queue string          `json:"queue"`
	Data  json.RawMessage `json:"data"`
	// Opts are the options as stored (BullMQ's names, its short ones such
	// as "kl" and "de" included).
	Opts json.RawMessage `json:"opts,omitempty"`
	// Backoff is opts.backoff read (drover's field).
	Backoff  *Backoff `json:"backoff,omitempty"`
	Priority int      `json:"priority"`
	// Delay is the job's delay option (ms in JSON).
	Delay time.Duration `json:"-"`
	// ReturnValue is what the processor returned (BullMQ's returnvalue).
	ReturnValue     json.RawMessage `json:"returnvalue,omitempty"`
	DeferredFailure string          `json:"deferredFailure,omitempty"`
	DeduplicationID string          `json:"deduplicationId,omitempty"`
	// Deduplication says who holds DeduplicationID now (this job, another
	// one, or none) and until when; nil without a DeduplicationID.
	Deduplication *Deduplication `json:"deduplication,omitempty"`
	// RepeatJobKey is the id of the job scheduler that made the job.
	RepeatJobKey string `json:"repeatJobKey,omitempty"`
	// SchedulerPending says the job is its scheduler's pending run, the
	// one the next worker to take it replaces with the run after: it
	// cannot be cancelled or removed (drover.ErrSchedulerJob, as BullMQ
	// refuses), only run now, or stopped by removing its scheduler.
	SchedulerPending bool `json:"schedulerPending,omitempty"`
	// ParentKey is the flow parent's hash key, "<prefix>:<queue>:<id>".
	ParentKey string `json:"parentKey,omitempty"`
	// Stacktrace lists the kept failure traces, oldest first.
	Stacktrace []string `json:"stacktrace"`
	// Timeline lists the attempts, oldest first; TimelineSource says
	// whether drover recorded it or it was derived.
	Timeline       []Attempt `json:"timeline"`
	TimelineSource string    `json:"timelineSource"`
	// TimelineOmitted counts the oldest attempts drover no longer keeps
	// (it keeps the newest drover.TimelineLimit); they come before
	// Timeline[0].
	TimelineOmitted int `json:"timelineOmitted"`
	// Logs are the newest LogLimit log lines, oldest first; LogCount counts
	// all lines.
	Logs     []string `json:"logs"`
	LogCount int64    `json:"logCount"`
	// Lock is set for active jobs.
	Lock *Lock `json:"lock,omitempty"`
	// Parent is the flow parent of a child job.
	Parent *JobRef `json:"parent,omitempty"`
	// Children are a flow parent's children by how they stand; nil for a
	// job that has none.
	Children *Children `json:"children,omitempty"`
}

// LogLimit is how many log lines Job returns.
const LogLimit = 200

// Job reads one job for the retry-state inspector. It returns an error
// wrapping drover.ErrJobNotFound when there is none.
func (i *Inspector) Job(ctx context.Context, queue, id string) (*JobDetail, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	// The hash and the state are two reads: read the state on both sides
	// of the hash, so a job that moves meanwhile is read again, not shown
	// half old and half new (completed with its attempt not counted yet).
	var job *drover.Job
	var state drover.JobState
	for range 5 {
		before, err := i.jobState(ctx, queue, id)
		if err != nil {
			return nil, err
		}
		if job, err = q.GetJob(ctx, id); err != nil {
			return nil, err
		}
		if state, err = i.jobState(ctx, queue, id); err != nil {
			return nil, err
		}
		if state == before {
			break
		}
	}
	var nextRun time.Time
	if state == drover.StateDelayed {
		due, err := i.dueTimes(ctx, queue, []string{id})
		if err != nil {
			return nil, err
		}
		nextRun = due[id]
	}
	logs, logCount, err := q.GetJobLogs(ctx, id, -LogLimit, -1)
	if err != nil {
		return nil, err
	}
	d := &JobDetail{
		JobSummary:      summarize(state, job, nextRun),
		Queue:           queue,
		Data:            job.Data,
		Backoff:         backoffOf(job.Opts.Backoff),
		Priority:        job.Priority,
		Delay:           job.Delay,
		ReturnValue:     job.ReturnValue,
		DeferredFailure: job.DeferredFailure,
		DeduplicationID: job.DeduplicationID,
		RepeatJobKey:    job.JobSchedulerID,
		Stacktrace:      job.Stacktrace,
		Logs:            logs,
		LogCount:        logCount,
	}
	if d.Stacktrace == nil {
		d.Stacktrace = []string{}
	}
	if d.Logs == nil {
		d.Logs = []string{}
	}
	if json.Valid([]byte(job.RawOpts)) {
		d.Opts = json.RawMessage(job.RawOpts)
	}
	if state == drover.StateActive {
		locks, err := i.locks(ctx, queue, []string{id})
		if err != nil {
			return nil, err
		}
		d.Lock = locks[id]
	}
	if job.Parent != nil {
		d.Parent = i.refOf(*job.Parent)
		d.ParentKey = job.Parent.Key()
	}
	if d.Children, err = i.children(ctx, queue, id); err != nil {
		return nil, err
	}
	if job.DeduplicationID != "" {
		if d.Deduplication, err = i.Deduplication(ctx, queue, job.DeduplicationID); err != nil {
			return nil, err
		}
	}
	if job.JobSchedulerID != "" {
		if d.SchedulerPending, err = i.schedulerPending(ctx, queue, id, job.JobSchedulerID); err != nil {
			return nil, err
		}
	}
	d.Timeline, d.TimelineSource, d.TimelineOmitted = timeline(state, job, nextRun)
	if d.Timeline == nil {
		d.Timeline = []Attempt{} // a job that has not run: an empty list, not null
	}
	return d, nil
}

// jobState finds the state of job id in one round trip without scanning
// the wait and paused lists (LPOS is O(n): 25ms each at 1M jobs): the
// sorted sets answer by ZSCORE, the active list is short (one entry per
// running job), and a job that exists and is in none of them can only be
// waiting (in wait, or paused, which BullMQ also reports as waiting). The
// order is BullMQ's getState order.
func (i *Inspector) jobState(ctx context.Context, queue, id string) (drover.JobState, error) {
	k := i.keys(queue)
	var completed, failed, delayed, prioritized, children *redis.FloatCmd
	var active *redis.IntCmd
	var exists *redis.IntCmd
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		completed = p.ZScore(ctx, k.Completed(), id)
		failed = p.ZScore(ctx, k.Failed(), id)
		delayed = p.ZScore(ctx, k.Delayed(), id)
		prioritized = p.ZScore(ctx, k.Prioritized(), id)
		active = p.LPos(ctx, k.Active(), id, redis.LPosArgs{})
		children = p.ZScore(ctx, k.WaitingChildren(), id)
		exists = p.Exists(ctx, k.Job(id))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("get state of job %q in queue %q: %w", id, queue, err)
	}
	in := func(c interface{ Err() error }) bool { return c.Err() == nil }
	switch {
	case in(completed):
		return drover.StateCompleted, nil
	case in(failed):
		return drover.StateFailed, nil
	case in(delayed):
		return drover.StateDelayed, nil
	case in(prioritized):
		return drover.StatePrioritized, nil
	case in(active):
		return drover.StateActive, nil
	case in(children):
		return drover.StateWaitingChildren, nil
	case exists.Val() > 0:
		return drover.StateWaiting, nil
	}
	return drover.StateUnknown, nil
}

// JobRef names a job of a flow.
type JobRef struct {
	Queue string `json:"queue"`
	ID    string `json:"id"`
	// Prefix is set when it is not the inspector's: the job is out of the
	// dashboard's reach.
	Prefix string `json:"prefix,omitempty"`
	// QueueKey is "<prefix>:<queue>", as in BullMQ's parent {id, queueKey}.
	QueueKey string `json:"queueKey"`
}

func (i *Inspector) refOf(r drover.JobRef) *JobRef {
	out := &JobRef{Queue: r.Queue, ID: r.ID, QueueKey: strings.TrimSuffix(r.Key(), ":"+r.ID)}
	if r.Prefix != i.opts.Prefix {
		out.Prefix = r.Prefix
	}
	return out
}

// ChildrenShown bounds the pending and failed children a JobDetail names.
const ChildrenShown = 20

// Children are a flow parent's children by how they stand (BullMQ's
// dependency counts), naming up to ChildrenShown of each: pending, failed,
// completed and failed-but-ignored.
type Children struct {
	Pending   int64 `json:"pending"`
	Completed int64 `json:"completed"`
	// Failed children failed the parent (failParentOnFailure); Ignored
	// ones failed without (ignoreDependencyOnFailure, continueParentOnFailure).
	Failed  int64    `json:"failed"`
	Ignored int64    `json:"ignored"`
	Waiting []JobRef `json:"waitingFor"`
	Failing []JobRef `json:"failedChildren"`
	// Done names completed children; IgnoredRefs those whose failure the
	// parent ignored. The page of a finished flow's parent named none of
	// its children.
	Done        []JobRef `json:"completedChildren"`
	IgnoredRefs []JobRef `json:"ignoredChildren"`
}

// children reads job id's flow children in one round trip: nil when it has
// none.
func (i *Inspector) children(ctx context.Context, queue, id string) (*Children, error) {
	k := i.keys(queue)
	var pending, failed, completed, ignored *redis.IntCmd
	var someFailed *redis.StringSliceCmd
	var someWaiting, someDone, someIgnored *redis.ScanCmd
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		pending = p.SCard(ctx, k.Dependencies(id))
		completed = p.HLen(ctx, k.Processed(id))
		ignored = p.HLen(ctx, k.IgnoredFailures(id))
		failed = p.ZCard(ctx, k.Unsuccessful(id))
		// The first scan step, not SRANDMEMBER: a random draw named other
		// children at each refresh of the job page, and a child link the
		// user was on went away. A step reads about its COUNT members (a
		// small set all of them) in the set's own order, the same from one
		// read to the next.
		someWaiting = p.SScan(ctx, k.Dependencies(id), 0, "", ChildrenShown)
		someFailed = p.ZRange(ctx, k.Unsuccessful(id), 0, ChildrenShown-1)
		// HSCAN with values (NOVALUES needs Redis 7.4): a small hash in
		// one step, whole; a big one about COUNT fields.
		someDone = p.HScan(ctx, k.Processed(id), 0, "", ChildrenShown)
		someIgnored = p.HScan(ctx, k.IgnoredFailures(id), 0, "", ChildrenShown)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the flow children of job %q in queue %q: %w", id, queue, err)
	}
	c := &Children{Pending: pending.Val(), Completed: completed.Val(), Ignored: ignored.Val(), Failed: failed.Val()}
	if c.Pending+c.Completed+c.Ignored+c.Failed == 0 {
		return nil, nil
	}
	refs := func(keys []string) []JobRef {
		out := []JobRef{}
		for _, key := range keys {
			if r, err := drover.ParseJobKey(key); err == nil {
				out = append(out, *i.refOf(r))
			}
		}
		return out
	}
	first := func(scan *redis.ScanCmd) []string {
		keys, _ := scan.Val()
		slices.Sort(keys)
		return keys[:min(len(keys), ChildrenShown)]
	}
	fields := func(scan *redis.ScanCmd) []string {
		pairs, _ := scan.Val()
		var keys []string
		for n := 0; n+1 < len(pairs); n += 2 {
			keys = append(keys, pairs[n])
		}
		slices.Sort(keys)
		return keys[:min(len(keys), ChildrenShown)]
	}
	c.Waiting, c.Failing = refs(first(someWaiting)), refs(someFailed.Val())
	c.Done, c.IgnoredRefs = refs(fields(someDone)), refs(fields(someIgnored))
	return c, nil
}

// locks reads the lock of each job id.
func (i *Inspector) locks(ctx context.Context, queue string, ids []string) (map[string]*Lock, error) {
	k := i.keys(queue)
	ttls := make([]*redis.DurationCmd, len(ids))
	tokens := make([]*redis.StringCmd, len(ids))
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, id := range ids {
			ttls[n] = p.PTTL(ctx, k.Lock(id))
			tokens[n] = p.Get(ctx, k.Lock(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read job locks in queue %q: %w", queue, err)
	}
	out := make(map[string]*Lock, len(ids))
	for n, id := range ids {
		l := &Lock{}
		if tok, err := tokens[n].Result(); err == nil {
			l.Held, l.Token = true, tok
			if ttl := ttls[n].Val(); ttl > 0 {
				l.TTL = ttl
			}
		}
		out[id] = l
	}
	return out, nil
}

// timeline builds the attempt timeline: drover's record when there is one,
// with the attempts it could not record filled in (stalls, the running
// attempt), else one derived from the counters. It also returns how many of
// the oldest attempts drover no longer keeps.
func timeline(state drover.JobState, job *drover.Job, nextRun time.Time) ([]Attempt, string, int) {
	if slices.ContainsFunc(job.Timeline, isFresh) {
		return runs(state, job, nextRun)
	}
	if len(job.Timeline) > 0 {
		out, omitted := fromRecorded(state, job, len(job.Timeline) >= drover.TimelineLimit)
		return failedOutside(state, job, out), TimelineDrover, omitted
	}
	return failedOutside(state, job, derived(state, job, nextRun)), TimelineDerived, 0
}

func isFresh(a drover.Attempt) bool { return a.Fresh != nil }

// runs builds the timeline of a job retried with fresh attempts: each run
// between two boundaries as timeline builds a job's, from the counters
// the boundary kept (the last run from the job's own), its attempts
// numbered as they ran, and a boundary entry (OutcomeFreshAttempts)
// between runs. A run whose attempts no drover worker recorded is derived
// from its counters, as a job without a record is; the source is
// TimelineDerived when no run has a record.
func runs(state drover.JobState, job *drover.Job, nextRun time.Time) ([]Attempt, string, int) {
	var out []Attempt
	omitted := 0
	rest := job.Timeline
	// base is how many activations before this run its numbers continue
	// from: 0 after a reset of AttemptsStarted.
	base, stalledBefore := 0, 0
	for first := true; ; first = false {
		run := *job
		st, next := state, nextRun
		end := slices.IndexFunc(rest, isFresh)
		var f *drover.FreshAttempts
		var at time.Time
		if end >= 0 {
			f, at = rest[end].Fresh, rest[end].End
			st, next = f.From, time.Time{}
			run.AttemptsMade, run.AttemptsStarted, run.StalledCount = f.Made, f.Started, f.Stalled
			run.Stacktrace = job.Stacktrace[:min(f.Traces, len(job.Stacktrace))]
			// Not known for an earlier run: the job's are the last run's.
			// Its failure's message is its newest trace's first line.
			run.FailedReason, run.ProcessedOn, run.FinishedOn, run.ProcessedBy = "", time.Time{}, time.Time{}, ""
			if n := len(run.Stacktrace); n > 0 && f.From == drover.StateFailed {
				run.FailedReason = firstLine(run.Stacktrace[n-1])
			}
			run.Timeline = rest[:end]
		} else {
			run.Timeline = rest
		}
		run.AttemptsStarted = max(run.AttemptsStarted-base, 0)
		run.StalledCount = max(run.StalledCount-stalledBefore, 0)
		if base > 0 {
			run.Timeline = slices.Clone(run.Timeline)
			for k := range run.Timeline {
				run.Timeline[k].N -= base
			}
		}
		var part []Attempt
		if len(run.Timeline) > 0 {
			var om int
			// Only the first run can have lost attempts to the limit.
			part, om = fromRecorded(st, &run, first && len(job.Timeline) >= drover.TimelineLimit)
			if first {
				omitted = om
			}
		} else {
			part = derived(st, &run, next)
		}
		part = failedOutside(st, &run, part)
		for k := range part {
			part[k].N += base
		}
		out = append(out, part...)
		if f == nil {
			// Boundaries alone are no record of attempts.
			src := TimelineDerived
			if slices.ContainsFunc(job.Timeline, func(a drover.Attempt) bool { return a.Fresh == nil }) {
				src = TimelineDrover
			}
			return out, src, omitted
		}
		out = append(out, Attempt{End: Instant{at}, Outcome: OutcomeFreshAttempts, Outside: true,
			Fresh: &FreshAttempts{From: f.From, Made: f.Made, Started: f.Started, ResetMade: f.ResetMade, ResetStarted: f.ResetStarted}})
		base = f.Started
		if f.ResetStarted {
			base = 0
		}
		stalledBefore = f.Stalled
		rest = rest[end+1:]
	}
}

// failedOutside ends the timeline of a failed job whose last attempt did not
// fail it: it failed while queued (cancelled, or a flow parent failed by a
// child) or as its worker stalled too often. Without this entry the
// timeline of a failed job ended with "retry-delayed", or showed nothing.
func failedOutside(state drover.JobState, job *drover.Job, out []Attempt) []Attempt {
	if state != drover.StateFailed {
		return out
	}
	n := 0
	if k := len(out); k > 0 {
		var last drover.Outcome
		if last.UnmarshalText([]byte(out[k-1].Outcome)) == nil && last.Failed() {
			return out
		}
		n = out[k-1].N
	}
	a := Attempt{N: n + 1, End: Instant{job.FinishedOn}, Outcome: OutcomeFailedUnrun, Error: job.FailedReason, Outside: true}
	if job.AttemptsStarted > 0 {
		// It ran before: the failure came between attempts or ended a
		// stalled one; no attempt of its own.
		a.Outcome = drover.OutcomeFailed.String()
	}
	return append(out, a)
}

// fromRecorded builds the timeline from drover's record; full says the
// record is as long as drover keeps (drover.TimelineLimit), so attempts
// before it may have been dropped.
func fromRecorded(state drover.JobState, job *drover.Job, full bool) ([]Attempt, int) {
	var out []Attempt
	stalls := job.StalledCount
	// gap adds the activations numbered [from, to) that wrote no outcome:
	// the worker stopped renewing the lock (a stall), or a Node worker ran
	// them.
	gap := func(from, to int) {
		for n := from; n < to; n++ {
			outcome := drover.OutcomeUnknown.String()
			if stalls > 0 {
				outcome = drover.OutcomeStalled.String()
				stalls--
			}
			out = append(out, Attempt{N: n, Outcome: outcome})
		}
	}
	// drover keeps the newest attempts only: the attempts before a full
	// record were dropped, unless stalls explain them; before a shorter
	// one, no drover worker ran them (a Node worker did, or they stalled).
	first := job.Timeline[0].N
	omitted := 0
	if first > 1 && (!full || first-1 <= job.StalledCount) {
		gap(1, first)
	} else if first > 1 {
		omitted = first - 1
	}
	last := first - 1
	for _, a := range job.Timeline {
		gap(last+1, a.N)
		rec := Attempt{
			N: a.N, Start: Instant{a.Start}, End: Instant{a.End}, Outcome: a.Outcome.String(), Error: a.Error,
			Worker: a.Worker, Backoff: a.Backoff, NextRun: Instant{a.NextRun},
			Unrecoverable: a.Outcome == drover.OutcomeFailedUnrecoverable, Recorded: true,
		}
		if rec.Unrecoverable && childFailure(a.Error) {
			// A parent failed by its child (the worker refuses to run it
			// through an unrecoverable error): the parent threw nothing.
			rec.Outcome, rec.Unrecoverable = drover.OutcomeFailed.String(), false
		}
		out = append(out, rec)
		last = max(last, a.N)
	}
	current := job.AttemptsStarted
	switch {
	case state == drover.StateActive && current > last:
		gap(last+1, current)
		out = append(out, Attempt{N: current, Start: Instant{job.ProcessedOn}, Outcome: OutcomeActive, Worker: job.ProcessedBy})
	case state == drover.StateCompleted && current > last:
		// A completion after the record's last attempt that wrote no
		// record of its own (stalls before it are filled in by gap).
		gap(last+1, current)
		out = append(out, Attempt{N: current, Start: Instant{job.ProcessedOn}, End: Instant{job.FinishedOn}, Outcome: drover.OutcomeCompleted.String(), Worker: job.ProcessedBy})
	case state == drover.StateFailed && current > last && job.AttemptsMade > spentIn(job.Timeline):
		// A failure after the record's last attempt that wrote no record of
		// its own (a Node worker's): the job's last activation failed it,
		// as derived reads a job with no record. Else the timeline ended
		// with an "unknown" attempt and, after it, a failure between
		// attempts that never was.
		gap(last+1, current)
		a := Attempt{N: current, Start: Instant{job.ProcessedOn}, End: Instant{job.FinishedOn}, Outcome: drover.OutcomeFailed.String(), Error: job.FailedReason, Worker: job.ProcessedBy}
		switch {
		case failedForOf(job) == FailedUnrecoverable:
			a.Outcome, a.Unrecoverable = drover.OutcomeFailedUnrecoverable.String(), true
		case job.AttemptsMade >= max(job.Opts.Attempts, 1):
			a.Outcome = drover.OutcomeRetriesExhausted.String()
		}
		out = append(out, a)
	default:
		gap(last+1, current+1)
	}
	return out, omitted
}

// spentIn counts the recorded attempts that spent one of the job's
// attempts (AttemptsMade counts them): those that completed, failed or
// were retried, not those that moved the job without spending one.
func spentIn(record []drover.Attempt) int {
	n := 0
	for _, a := range record {
		if a.Outcome == drover.OutcomeCompleted || a.Outcome.Failed() || a.Outcome.Retried() {
			n++
		}
	}
	return n
}

// delayedByFailure reports whether a delayed job waits for the backoff of
// its last run's failure, rather than for a delay its last run asked for
// (drover.Delay, Node's job.moveToDelayed with DelayedError), which keeps
// the failed reason of an earlier run: both look alike but for the
// counters and the delay. A run that failed counts in AttemptsMade, one
// that moved its job does not: when failures and stalls account for every
// run, the last one failed. Else the delay tells: a failure waits at most
// its built-in backoff's nominal delay (jitter only shortens it), and
// without one it goes straight back to wait, not to the delayed set. A
// custom strategy's delays are not known here: taken as a backoff.
func delayedByFailure(job *drover.Job) bool {
	if job.AttemptsMade == 0 || job.FailedReason == "" {
		return false
	}
	if job.AttemptsStarted-job.AttemptsMade-job.StalledCount <= 0 {
		return true
	}
	if job.AttemptsMade >= max(job.Opts.Attempts, 1) {
		return false // that failure failed the job for good: a run since moved it
	}
	b := job.Opts.Backoff
	if b != nil && b.Type != drover.BackoffFixed && b.Type != drover.BackoffExponential {
		return true
	}
	nominal := nominalBackoff(b, job.AttemptsMade)
	return nominal > 0 && job.Delay <= nominal
}

// derived rebuilds the timeline of a job drover has no record of: a Node
// worker ran it, or a drover worker completed it on its first activation
// (drover records attempts from the first failure or stall on). Activations
// are AttemptsStarted: AttemptsMade of them ended with an outcome, and
// StalledCount stalled. Only the last attempt's times are known; stalls are
// drawn before the last attempt, failures before them.
func derived(state drover.JobState, job *drover.Job, nextRun time.Time) []Attempt {
	made := job.AttemptsMade
	var out []Attempt
	// Failure messages, newest last: the stack traces start with them.
	errs := make([]string, len(job.Stacktrace))
	for n, s := range job.Stacktrace {
		errs[n] = firstLine(s)
	}
	// The newest trace is the last attempt's unless that attempt completed
	// (a completion leaves no trace): then it is attempt made-1's.
	newest := made
	if state == drover.StateCompleted {
		newest = made - 1
	}
	// A retry with fresh attempts (the bulk retry's, Node's
	// resetAttemptsMade) set AttemptsMade back to 0 and kept the stack
	// traces, one per failure: traces beyond the failures AttemptsMade
	// accounts for are failures from before the reset. They were
	// activations too, and were drawn as "unknown" moves.
	counted := made
	if state == drover.StateCompleted {
		counted = made - 1
	}
	moved := job.AttemptsStarted - made - job.StalledCount
	if state == drover.StateActive {
		moved--
	}
	reset := min(max(len(errs)-max(counted, 0), 0), max(moved, 0))
	moved -= reset
	seq := 0
	// failure is the outcome of the n-th failure that was not the last
	// attempt: the n-th of opts.attempts or a later one used the budget up
	// (the job failed for good and ran again when retried by hand, which
	// the page says); else it was retried, after its backoff if any.
	failure := func(n int) (string, time.Duration) {
		if n >= max(job.Opts.Attempts, 1) {
			return drover.OutcomeRetriesExhausted.String(), 0
		}
		// A failure the job's backoff delays went to the delayed set, not
		// straight back to wait: say so, with the delay its option gives.
		if wait := nominalBackoff(job.Opts.Backoff, n); wait > 0 {
			return drover.OutcomeRetryDelayed.String(), wait
		}
		return drover.OutcomeRetried.String(), 0
	}
	for n := 1; n <= reset; n++ {
		// Their places in the budget are taken as one run of it from the
		// first: exact for one reset.
		seq++
		a := Attempt{N: seq, Error: errs[n-1]}
		a.Outcome, a.Backoff = failure(n)
		if strings.HasPrefix(a.Error, "UnrecoverableError") {
			a.Outcome, a.Backoff, a.Unrecoverable = drover.OutcomeFailedUnrecoverable.String(), 0, true
		}
		out = append(out, a)
	}
	for n := 1; n < made; n++ {
		seq++
		a := Attempt{N: seq}
		a.Outcome, a.Backoff = failure(n)
		if k := len(errs) - 1 - (newest - n); k >= 0 && k < len(errs) {
			a.Error = errs[k]
		}
		// BullMQ's UnrecoverableError names itself on its trace's first
		// line (as failedForOf reads the last one): that failure failed the
		// job for good, whatever its attempts, and a retry by hand ran it
		// again.
		if strings.HasPrefix(a.Error, "UnrecoverableError") {
			a.Outcome, a.Backoff, a.Unrecoverable = drover.OutcomeFailedUnrecoverable.String(), 0, true
		}
		out = append(out, a)
	}
	for range job.StalledCount {
		seq++
		out = append(out, Attempt{N: seq, Outcome: drover.OutcomeStalled.String()})
	}
	// Activations that neither failed, completed nor stalled: the processor
	// moved its job (to delayed, to waiting-children) or it went back to
	// wait unspent (rate limited). When none failed, the newest one put the
	// job where it is; which ones came before is not known.
	// A delayed job its last run moved after a failure (delayedByFailure):
	// that failure came before the run that put the job where it is. Its
	// times are not known (the job's are the last run's).
	movedLast := state == drover.StateDelayed && made > 0 && moved > 0 && !delayedByFailure(job)
	if movedLast {
		seq++
		a := Attempt{N: seq, Error: job.FailedReason} // the newest failure's
		a.Outcome, a.Backoff = failure(made)
		out = append(out, a)
	}
	for k := 1; k <= moved; k++ {
		seq++
		a := Attempt{N: seq, Outcome: drover.OutcomeUnknown.String()}
		if k == moved && (made == 0 || movedLast) {
			switch state {
			case drover.StateDelayed:
				a.Outcome, a.Backoff, a.NextRun = drover.OutcomeDelayed.String(), job.Delay, Instant{nextRun}
			case drover.StateWaitingChildren:
				a.Outcome = drover.OutcomeWaitingChildren.String()
			case drover.StateWaiting, drover.StatePrioritized, drover.StatePaused:
				a.Outcome = drover.OutcomeRequeued.String()
			}
			if a.Outcome != drover.OutcomeUnknown.String() {
				a.Start, a.Worker = Instant{job.ProcessedOn}, job.ProcessedBy
			}
		}
		out = append(out, a)
	}
	if made > 0 && !movedLast {
		seq++
		a := Attempt{N: seq}
		if len(errs) > 0 {
			a.Error = errs[len(errs)-1]
		}
		switch state {
		case drover.StateCompleted:
			a.Outcome, a.Error = drover.OutcomeCompleted.String(), ""
		case drover.StateFailed:
			a.Outcome, a.Error = drover.OutcomeFailed.String(), job.FailedReason
			switch {
			case failedForOf(job) == FailedChild:
				// Failed by its child when a worker took it, without
				// running: no retry was used up (a parent of one attempt
				// was drawn "retries exhausted").
			case failedForOf(job) == FailedUnrecoverable:
				a.Outcome, a.Unrecoverable = drover.OutcomeFailedUnrecoverable.String(), true
			case made >= job.Opts.Attempts: // as finishJobs.lua decides on retries-exhausted
				a.Outcome = drover.OutcomeRetriesExhausted.String()
			}
		case drover.StateDelayed:
			a.Outcome, a.Error, a.NextRun = drover.OutcomeRetryDelayed.String(), job.FailedReason, Instant{nextRun}
			a.Backoff = job.Delay
		default:
			a.Outcome, a.Error = drover.OutcomeRetried.String(), job.FailedReason
			trace := ""
			if len(errs) > 0 {
				trace = errs[len(errs)-1]
			}
			if a.Error == "" {
				a.Error = trace // a retry by hand clears the failed reason
			}
			// A failure that used the attempts up, or an unrecoverable one,
			// failed the job for good: it is back only because it was
			// retried by hand (keeping its attempts), which the page says.
			switch {
			case a.Error == "" && keepsTraces(job):
				// No failure on record: no failed reason, and not one trace
				// where every failure leaves one. The attempt completed, and
				// the job was retried by hand from completed (which clears
				// the return value and the times): it was drawn as a failure
				// that used the attempts up.
				a.Outcome = drover.OutcomeCompleted.String()
			case a.Error == "":
				a.Outcome = drover.OutcomeUnknown.String()
			case strings.HasPrefix(trace, "UnrecoverableError"):
				a.Outcome, a.Unrecoverable = drover.OutcomeFailedUnrecoverable.String(), true
			case made >= max(job.Opts.Attempts, 1):
				a.Outcome = drover.OutcomeRetriesExhausted.String()
			}
		}
		if state != drover.StateActive {
			a.Start, a.End, a.Worker = Instant{job.ProcessedOn}, Instant{job.FinishedOn}, job.ProcessedBy
		}
		out = append(out, a)
	}
	if state == drover.StateActive {
		out = append(out, Attempt{N: max(job.AttemptsStarted, seq+1), Start: Instant{job.ProcessedOn}, Outcome: OutcomeActive, Worker: job.ProcessedBy})
	}
	return out
}

// nominalBackoff is the delay a built-in backoff option gives after the
// attemptsMade-th failure, without jitter (a jittered delay was drawn from
// the last share of it): 0 for no backoff, and for a custom strategy, whose
// delays only the worker that ran it knew.
func nominalBackoff(b *drover.Backoff, attemptsMade int) time.Duration {
	if b == nil || (b.Type != drover.BackoffFixed && b.Type != drover.BackoffExponential) {
		return 0
	}
	nominal := *b
	nominal.Jitter = 0
	d, err := drover.ComputeBackoff(&nominal, attemptsMade, nil, nil, nil, nil)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

// formatScore renders a delayed-set score bound for ZCOUNT.
func formatScore(s int64) string { return strconv.FormatInt(s, 10) }

// keepsTraces reports whether every failure of job leaves a stack trace:
// its stored opts do not say stackTraceLimit 0 (keep none).
func keepsTraces(job *drover.Job) bool {
	var o struct {
		StackTraceLimit *float64 `json:"stackTraceLimit"`
	}
	if job.RawOpts != "" && json.Unmarshal([]byte(job.RawOpts), &o) != nil {
		return false
	}
	return o.StackTraceLimit == nil || *o.StackTraceLimit != 0
}
