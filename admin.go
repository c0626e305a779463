package drover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/scripts"
)

// RetryOptions configure Job.Retry. Nil means defaults.
type RetryOptions struct {
	// ResetAttemptsMade sets AttemptsMade back to 0: the job gets its whole
	// attempt budget again ("retry with fresh attempts").
	ResetAttemptsMade bool
	// ResetAttemptsStarted sets AttemptsStarted back to 0: its next attempt
	// is number 1 again, and a worker's MaxStartedAttempts counts from 0.
	// A retry with fresh attempts sets both, as the control room, the CLI
	// and package inspect do; AttemptsMade alone leaves a job that a
	// MaxStartedAttempts worker fails at once when it was started that
	// often before.
	//
	// Either reset leaves a boundary in the job's attempt timeline (an
	// Attempt with Fresh set, see FreshAttempts): the attempts before it
	// stay listed as they were numbered.
	ResetAttemptsStarted bool
	// FinishedBy, when set, retries the job only if it finished at or
	// before this instant, checked in the same script call that moves it.
	// A job that finished later ran again since the caller chose it (someone
	// else retried it, and it failed again): it is refused with
	// ErrNotInState and left as it is. A bulk retry that selected its jobs
	// at time T passes T, so a job never runs twice for one request.
	FinishedBy time.Time
}

// Retry runs a finished job again: state is StateFailed or StateCompleted,
// the state the job must be in. It refuses with ErrNotInState when the job
// is elsewhere, ErrJobLocked when a worker holds it, ErrJobNotFound when
// it is gone.
func (j *Job) Retry(ctx context.Context, state JobState, opts *RetryOptions) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("retry"); err != nil {
		return err
	}
	if state != StateFailed && state != StateCompleted {
		return j.err("retry", optionError("Retry state must be %q or %q, got %q", StateFailed, StateCompleted, state))
	}
	var o RetryOptions
	if opts != nil {
		o = *opts
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	var by int64
	if !o.FinishedBy.IsZero() {
		by = max(o.FinishedBy.UnixMilli(), 1)
	}
	err := scripts.Reprocess(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, string(state), o.ResetAttemptsMade, o.ResetAttemptsStarted, by, j.queue.nowMs())
	if by > 0 && errors.Is(err, ErrNotInState) {
		// Still in state, maybe: then it finished again after the bound,
		// and "it is failed, not failed" would say nothing.
		if now, serr := j.queue.GetJobState(ctx, j.ID); serr == nil && now == state {
			return j.err("retry", fmt.Errorf("%w: it finished again after %s (it ran since it was chosen)", err, o.FinishedBy.UTC().Format(time.RFC3339Nano)))
		}
	}
	return j.stateErr(ctx, "retry", string(state), err)
}

// Promote makes a delayed job ready now. ErrNotInState if it is not delayed.
func (j *Job) Promote(ctx context.Context) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("promote"); err != nil {
		return err
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	return j.stateErr(ctx, "promote", string(StateDelayed), scripts.Promote(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, false, false, 0))
}

// ChangeDelay makes a delayed job due delay from now. ErrNotInState if it is
// not delayed.
func (j *Job) ChangeDelay(ctx context.Context, delay time.Duration) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("change delay of"); err != nil {
		return err
	}
	if delay < 0 {
		return j.err("change delay of", optionError("delay must not be negative, got %s", delay))
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	return j.stateErr(ctx, "change delay of", string(StateDelayed), scripts.ChangeDelay(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, j.queue.nowMs(), delay.Milliseconds()))
}

// ChangePriority gives the job a new priority (0 = none). A waiting job is
// re-queued where the new priority puts it; lifo puts it first among its
// priority.
func (j *Job) ChangePriority(ctx context.Context, priority int, lifo bool) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("change priority of"); err != nil {
		return err
	}
	if priority < 0 || priority > MaxPriority {
		return j.err("change priority of", optionError("priority must be between 0 and %d, got %d", MaxPriority, priority))
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	return j.err("change priority of", scripts.ChangePriority(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, priority, lifo))
}

// RemoveOptions configure Job.Remove. Nil means defaults.
type RemoveOptions struct {
	// KeepChildren deletes the job alone, as BullMQ's
	// remove(id, { removeChildren: false }): its flow children stay in
	// their states and still name it as their parent, and only the job's
	// own lock refuses the call.
	KeepChildren bool
}

// Remove deletes the job and its logs, and, as BullMQ's Job.remove does by
// default, its flow children with theirs (each in its own queue), unless
// opts.KeepChildren; a job that is itself a child is detached from its
// parent, which stops waiting for it. ErrJobLocked if a worker holds the
// job or (without KeepChildren) one of the children it waits for.
func (j *Job) Remove(ctx context.Context, opts *RemoveOptions) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("remove"); err != nil {
		return err
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	keep := opts != nil && opts.KeepChildren
	return j.err("remove", scripts.RemoveJob(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, keep))
}

// call is a fresh call token for an admin write (Retry, Promote, RetryNow,
// Remove on one job; each chunk of Drain, Clean, RetryJobs and the bulk
// promotions). go-redis sends a command again when its reply is lost;
// without the token the second run found the job already moved (or gone)
// and the call reported "not in the expected state" or "job not found" for
// a write that was done, and a bulk call's second run moved or removed the
// next chunk too (a clean of 10 removed 20) and counted only that one. With
// it the resend gets the first run's answer (include/once.lua), kept for
// QueueOptions.AddRetryWindow.
func (q *Queue) call() scripts.Call { return scripts.NewCall(q.opts.AddRetryWindow) }

// Job returns a handle on job id for admin calls (Retry, Promote, Remove,
// ...) without reading it.
func (q *Queue) Job(id string) *Job { return &Job{ID: id, queue: q} }

// RetryJobsOptions configure Queue.RetryJobs. Nil means defaults.
type RetryJobsOptions struct {
	// State is StateFailed (default) or StateCompleted.
	State JobState
	// Count is how many jobs one script call moves. Default 1000.
	Count int
	// OlderThan retries only jobs finished at or before this time.
	// Zero = now.
	OlderThan time.Time
	// ResetAttemptsMade gives every retried job its full attempt budget.
	ResetAttemptsMade bool
	// ResetAttemptsStarted sets every retried job's AttemptsStarted back
	// to 0 (see RetryOptions.ResetAttemptsStarted); a retry with fresh
	// attempts sets both. Node BullMQ's retryJobs resets neither.
	ResetAttemptsStarted bool
	// Limit stops after this many jobs in all. 0 = all.
	Limit int
	// Pause waits between chunks, so a bulk retry cannot flood workers.
	Pause time.Duration
	// Progress, if set, is called after each chunk with the total so far.
	Progress func(moved int)
}

// RetryJobs moves finished jobs back to wait in chunks (BullMQ's retryJobs).
// Priorities are ignored, as in BullMQ. It returns how many it moved.
func (q *Queue) RetryJobs(ctx context.Context, opts *RetryJobsOptions) (int, error) {
	var o RetryJobsOptions
	if opts != nil {
		o = *opts
	}
	if o.State == "" {
		o.State = StateFailed
	}
	if o.State != StateFailed && o.State != StateCompleted {
		return 0, optionError("RetryJobsOptions.State must be %q or %q, got %q", StateFailed, StateCompleted, o.State)
	}
	return q.moveJobsToWait(ctx, string(o.State), o.Count, o.OlderThan, o.ResetAttemptsMade, o.ResetAttemptsStarted, o.Limit, o.Pause, o.Progress, nil)
}

// PromoteJobs makes every delayed job ready now, count per script call
// (0 = 1000). It returns how many it moved.
func (q *Queue) PromoteJobs(ctx context.Context, count int) (int, error) {
	return q.moveJobsToWait(ctx, "delayed", count, time.Time{}, false, false, 0, 0, nil, nil)
}

// PromoteEarliest makes at most n delayed jobs ready now, those due first,
// and returns how many it moved: a bulk promotion bounded by what its
// caller was shown (the dashboard's "Run the N delayed jobs"), so jobs
// delayed since are left where they are. n must be positive.
func (q *Queue) PromoteEarliest(ctx context.Context, n int) (int, error) {
	if n <= 0 {
		return 0, optionError("PromoteEarliest needs a positive number of jobs, got %d", n)
	}
	return q.moveJobsToWait(ctx, "delayed", min(n, 1000), time.Time{}, false, false, n, 0, nil, nil)
}

// promoteIDs is PromoteJobs (n 0) or PromoteEarliest (n > 0) calling moved
// with the ids of each chunk it promoted (seam.Promote).
func (q *Queue) promoteIDs(ctx context.Context, n int, moved func(ids []string)) (int, error) {
	if n < 0 {
		return 0, optionError("promote needs a positive number of jobs or 0 (all), got %d", n)
	}
	if n == 0 {
		return q.moveJobsToWait(ctx, "delayed", 0, time.Time{}, false, false, 0, 0, nil, moved)
	}
	return q.moveJobsToWait(ctx, "delayed", min(n, 1000), time.Time{}, false, false, n, 0, nil, moved)
}

func (q *Queue) moveJobsToWait(ctx context.Context, state string, count int, olderThan time.Time, resetMade, resetStarted bool, limit int, pause time.Duration, progress func(int), moved func([]string)) (int, error) {
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	if count == 0 {
		count = 1000
	}
	if count < 0 || limit < 0 || pause < 0 {
		return 0, optionError("count, limit and pause must not be negative, got %d, %d, %s", count, limit, pause)
	}
	cutoff := q.now(ctx)
	if !olderThan.IsZero() {
		cutoff = olderThan
	}
	total := 0
	for {
		n := count
		if limit > 0 {
			n = min(n, limit-total)
			if n == 0 {
				return total, nil
			}
		}
		more, ids, err := scripts.MoveJobsToWait(ctx, q.writes(), q.k, q.call(), state, n, cutoff.UnixMilli(), resetMade, resetStarted, q.nowMs())
		total += len(ids)
		if moved != nil && len(ids) > 0 {
			moved(ids)
		}
		if err != nil {
			return total, fmt.Errorf("move %s jobs of queue %q to wait: %w", state, q.name, err)
		}
		if progress != nil && len(ids) > 0 {
			progress(total)
		}
		if !more {
			return total, nil
		}
		if pause > 0 && !sleepCtx(ctx, pause) {
			return total, ctx.Err()
		}
	}
}

// Clean removes up to limit jobs of state (0 = no limit) that are older than
// grace (finished for completed/failed, waiting since for waiting-children,
// else created or last processed), skipping jobs a worker holds. It returns
// the removed ids; on an error, those removed before it.
func (q *Queue) Clean(ctx context.Context, grace time.Duration, limit int, state JobState) ([]string, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	name, err := cleanArgs(grace, limit, state)
	if err != nil {
		return nil, err
	}
	// Node's Queue.clean calls its script with a window of cleanChunk jobs
	// (BullMQ's: the oldest of a set, the tail of a list), or of limit
	// when smaller, and calls again while a call removes its whole window.
	// drover's windows are the same, but that the last one shrinks to what
	// is left of limit, so limit is never exceeded (Node's may overshoot a
	// limit above 10000).
	//
	// No script call looks at more than cleanCallChunk jobs: a call of
	// 10000 held Redis for about 120 ms (a finished set's, 50 ms). The
	// finished sets and waiting-children are scored by age: their
	// candidates are the score range up to the cut-off, and a call takes
	// the oldest cleanCallChunk of them, the same jobs as a larger call in
	// the same order (cleanScored). The other states' windows are examined
	// in parts, a call each (cleanWindow), which remove exactly what one
	// call over the window removes. A window's last call writes its
	// "cleaned" event with the window's count, so a Node QueueEvents
	// listener sees the events BullMQ's calls write, one per window. (A
	// clean that fails within a window writes none for it.)
	cutoff := q.now(ctx).Add(-grace).UnixMilli()
	removed := []string{}
	scored := state == StateCompleted || state == StateFailed || state == StateWaitingChildren
	for {
		window := cleanChunk
		if limit > 0 && limit-len(removed) < window {
			window = limit - len(removed)
		}
		var ids []string
		var err error
		if scored {
			ids, err = q.cleanScored(ctx, name, cutoff, window)
		} else {
			ids, err = q.cleanWindow(ctx, name, cutoff, window)
		}
		removed = append(removed, ids...)
		if err != nil {
			return removed, fmt.Errorf("clean %s jobs of queue %q (%d removed): %w", state, q.name, len(removed), err)
		}
		if len(ids) < window || (limit > 0 && len(removed) >= limit) {
			return removed, nil
		}
	}
}

// cleanScored removes what one BullMQ clean call over a window of window
// jobs of a state scored by age (completed, failed, waiting-children)
// removes, the oldest first, in calls of at most cleanCallChunk: each
// removes the oldest candidates left, so together they remove the same
// jobs in the same order.
func (q *Queue) cleanScored(ctx context.Context, name string, cutoff int64, window int) ([]string, error) {
	var removed []string
	for {
		left := window - len(removed)
		n := min(cleanCallChunk, left)
		ids, err := scripts.Clean(ctx, q.writes(), q.k, q.call(), name, cutoff, n,
			scripts.WindowPart{Prior: len(removed), Last: n == left})
		removed = append(removed, ids...)
		if err != nil || len(ids) < n || n == left {
			return removed, err
		}
	}
}

// cleanWindow removes what one BullMQ clean call over a window of window
// jobs of state (a list's or a set's) removes, in calls that each examine
// at most cleanCallChunk of them, and returns the removed ids in BullMQ's
// order. A list's window is walked from its head end down to the tail,
// so a call's removals leave the unexamined rest where it was (counted
// from the tail); a set's from its lowest rank up, each call starting
// after the members kept so far. Jobs that move meanwhile (taken by a
// worker, added) move the window as they would move BullMQ's next call's.
func (q *Queue) cleanWindow(ctx context.Context, name string, cutoff int64, window int) ([]string, error) {
	var removed []string
	list := name == "wait" || name == "paused" || name == "active"
	at, left := 0, window // a set's next rank; the jobs left to examine
	if list {
		at = window // a list's next entry, counted from the tail
	}
	for left > 0 {
		n := min(cleanCallChunk, left)
		examined, rest, ids, err := scripts.CleanPart(ctx, q.writes(), q.k, q.call(), name, cutoff, n, at,
			scripts.WindowPart{Prior: len(removed), Last: n == left})
		removed = append(removed, ids...)
		if err != nil {
			return removed, err
		}
		if list {
			at, left = rest, rest
			continue
		}
		at += examined - len(ids)
		left -= n
		if examined < n {
			left = 0 // the set ended
		}
	}
	return removed, nil
}

// cleanChunk is the window of jobs one BullMQ clean call looks at, Node's
// figure.
const cleanChunk = 10000

// cleanCallChunk is the most jobs one of Clean's script calls looks at, a
// few ms of Redis's time.
const cleanCallChunk = 1000

// CleanCandidates lists the jobs Clean(ctx, grace, limit, state) would
// remove now, oldest first, at most limit and at most 10,000 (one BullMQ
// clean call's window; limit 0 means that cap): a preview to confirm a
// clean with. It runs Clean's own script with its writes left out, so the
// rules are the same ones (the window of jobs a call looks at, the age
// fields, locked active jobs and a scheduler's pending iteration left
// alone); nothing is removed and no event is written. Like the clean, it
// reads the window in script calls that examine at most 1,000 jobs each,
// so a preview holds Redis for milliseconds at a time; jobs that move
// between two of them (taken by a worker, added) may be listed or left
// out as by a preview read a moment earlier or later, and are listed once.
func (q *Queue) CleanCandidates(ctx context.Context, grace time.Duration, limit int, state JobState) ([]string, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	name, err := cleanArgs(grace, limit, state)
	if err != nil {
		return nil, err
	}
	if limit == 0 || limit > cleanChunk {
		limit = cleanChunk
	}
	cutoff := q.now(ctx).Add(-grace).UnixMilli()
	ids, err := q.cleanPreview(ctx, name, cutoff, limit)
	if err != nil {
		return nil, fmt.Errorf("list the %s jobs a clean of queue %q would remove: %w", state, q.name, err)
	}
	if state == StateWaiting || state == StatePaused || state == StateActive {
		slices.Reverse(ids) // the script walks a list's window head to tail; the tail is the oldest
	}
	return ids, nil
}

// cleanPreview lists what one BullMQ clean call over a window of window
// jobs of state would remove now, in the script's order, in dry-run calls
// that each examine at most cleanCallChunk of them. A dry run removes
// nothing, so each call starts where the last one's examined jobs end: a
// set's next rank (scored by age or not), a list's rest of the window
// counted from the tail (cleanWindow's positions, less the removals).
func (q *Queue) cleanPreview(ctx context.Context, name string, cutoff int64, window int) ([]string, error) {
	list := name == "wait" || name == "paused" || name == "active"
	at, left := 0, window
	if list {
		at = window
	}
	ids := []string{}
	seen := map[string]bool{}
	for left > 0 {
		n := min(cleanCallChunk, left)
		examined, rest, page, err := scripts.CleanPreviewPart(ctx, q.writes(), q.k, name, cutoff, n, at)
		if err != nil {
			return nil, err
		}
		for _, id := range page {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if list {
			at, left = rest, rest
			continue
		}
		at += examined
		left -= n
		if examined < n {
			left = 0 // the set, or its candidates, ended
		}
	}
	return ids, nil
}

// cleanArgs checks Clean's arguments and returns the script's name for
// state (BullMQ's: "wait" for waiting).
func cleanArgs(grace time.Duration, limit int, state JobState) (string, error) {
	if grace < 0 || limit < 0 {
		return "", optionError("Clean grace and limit must not be negative, got %s and %d", grace, limit)
	}
	switch state {
	case StateWaiting:
		return "wait", nil
	case StateCompleted, StateFailed, StateDelayed, StatePrioritized, StateActive, StatePaused, StateWaitingChildren:
		return string(state), nil
	}
	return "", optionError("Clean cannot clean state %q", state)
}

// IsRefusal reports whether err is one of the typed refusals of the job
// admin calls: missing job, job locked by a worker, job not in that state.
func IsRefusal(err error) bool {
	return errors.Is(err, ErrJobNotFound) || errors.Is(err, ErrJobLocked) || errors.Is(err, ErrNotInState)
}

// SetGlobalConcurrency caps how many jobs of the queue run at once across all
// workers, drover's and Node's (BullMQ's meta "concurrency").
func (q *Queue) SetGlobalConcurrency(ctx context.Context, n int) error {
	if n < 1 {
		return optionError("global concurrency must be at least 1, got %d", n)
	}
	if err := q.check(ctx); err != nil {
		return err
	}
	return q.writes().Do(ctx, "hset", q.k.Meta(), "concurrency", n).Err()
}

// RemoveGlobalConcurrency lifts SetGlobalConcurrency's cap.
func (q *Queue) RemoveGlobalConcurrency(ctx context.Context) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	return q.writes().Do(ctx, "hdel", q.k.Meta(), "concurrency").Err()
}

// SetGlobalRateLimit lets all workers together activate at most max jobs per
// window (BullMQ's meta "max" and "duration").
func (q *Queue) SetGlobalRateLimit(ctx context.Context, max int, window time.Duration) error {
	if max < 1 || window < time.Millisecond {
		return optionError("global rate limit needs max >= 1 and window >= 1ms, got %d per %s", max, window)
	}
	if err := q.check(ctx); err != nil {
		return err
	}
	return q.writes().Do(ctx, "hset", q.k.Meta(), "max", max, "duration", window.Milliseconds()).Err()
}

// RemoveGlobalRateLimit lifts SetGlobalRateLimit's limit.
func (q *Queue) RemoveGlobalRateLimit(ctx context.Context) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	return q.writes().Do(ctx, "hdel", q.k.Meta(), "max", "duration").Err()
}

// GetGlobalConcurrency reads the queue's cap on jobs running at once across
// all workers (BullMQ's getGlobalConcurrency). set is false when there is
// none. A cap of 0 is reported as set: Node BullMQ's setGlobalConcurrency
// stores it, and it stops every worker from taking jobs.
func (q *Queue) GetGlobalConcurrency(ctx context.Context) (n int, set bool, err error) {
	if err := q.check(ctx); err != nil {
		return 0, false, err
	}
	v, err := callWithin(ctx, q, func(ctx context.Context) (string, error) {
		return q.rdb.HGet(ctx, q.k.Meta(), "concurrency").Result()
	})
	if errors.Is(err, redis.Nil) || (err == nil && v == "") {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("get global concurrency of queue %q: %w", q.name, err)
	}
	n, err = strconv.Atoi(v)
	if err != nil {
		return 0, false, fmt.Errorf("get global concurrency of queue %q: meta field concurrency is %q, not an integer", q.name, v)
	}
	return n, true, nil
}

// GetGlobalRateLimit reads the limit all workers of the queue share (BullMQ's
// getGlobalRateLimit): at most Max activations per Duration. It returns nil
// when there is none and, as BullMQ's does, when only one of the two meta
// fields (max, duration) is set. A worker's own WorkerOptions.Limiter is
// not stored and does not show here.
func (q *Queue) GetGlobalRateLimit(ctx context.Context) (*RateLimit, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	vals, err := callWithin(ctx, q, func(ctx context.Context) ([]any, error) {
		return q.rdb.HMGet(ctx, q.k.Meta(), "max", "duration").Result()
	})
	if err != nil {
		return nil, fmt.Errorf("get global rate limit of queue %q: %w", q.name, err)
	}
	var n [2]int64
	for i, field := range []string{"max", "duration"} {
		s, _ := vals[i].(string)
		if s == "" {
			return nil, nil
		}
		if n[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, fmt.Errorf("get global rate limit of queue %q: meta field %s is %q, not an integer", q.name, field, s)
		}
	}
	return &RateLimit{Max: int(n[0]), Duration: time.Duration(n[1]) * time.Millisecond}, nil
}
