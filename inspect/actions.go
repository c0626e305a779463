package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/seam"
)

// Bulk retry defaults.
const (
	// RetryChunkDefault is how many jobs a bulk retry moves per chunk.
	RetryChunkDefault = 100
	// RetryPauseDefault is the pause between two chunks of a bulk retry.
	RetryPauseDefault = 100 * time.Millisecond
	// RetryIDsMax bounds the ids a RetryResult lists.
	RetryIDsMax = 1000
)

// RetryJob runs one job again and returns the state it was retried from.
//
//   - failed or completed: drover.Job.Retry; reset retries it with fresh
//     attempts: AttemptsMade and AttemptsStarted back to 0 (BullMQ's
//     resetAttemptsMade and resetAttemptsStarted), so it has its whole
//     attempt budget and a worker's MaxStartedAttempts counts from 0.
//   - delayed (waiting for backoff, or scheduled): drover.Job.RetryNow, which
//     runs it now; reset as above.
//
// Other states are refused with an error wrapping drover.ErrNotInState.
func (i *Inspector) RetryJob(ctx context.Context, queue, id string, reset bool) (drover.JobState, error) {
	if ctx == nil {
		return "", errNilContext
	}
	return i.retryJob(ctx, queue, id, "", false, reset)
}

// RetryJobFrom is RetryJob for a job expected in the finished state from
// (drover.StateFailed or drover.StateCompleted), or delayed: a job in the
// other finished state is refused with an error wrapping
// drover.ErrNotInState and left where it is. The move itself checks the
// state, so a job that finishes otherwise meanwhile is not run again.
func (i *Inspector) RetryJobFrom(ctx context.Context, queue, id string, from drover.JobState, reset bool) (drover.JobState, error) {
	if ctx == nil {
		return "", errNilContext
	}
	if from != drover.StateFailed && from != drover.StateCompleted {
		return "", fmt.Errorf("%w: retry from %q: want failed or completed", drover.ErrInvalidOption, from)
	}
	return i.retryJob(ctx, queue, id, from, false, reset)
}

// RetryJobIn is RetryJob for a job the caller saw in state seen (failed,
// completed or delayed), say on a page an operator confirmed from: a job
// in any other state now (retried, run or moved by someone else since) is
// refused with an error wrapping drover.ErrNotInState and left where it
// is. The move itself checks the state, so a job that moves between the
// check and the move is not run again either.
func (i *Inspector) RetryJobIn(ctx context.Context, queue, id string, seen drover.JobState, reset bool) (drover.JobState, error) {
	if ctx == nil {
		return "", errNilContext
	}
	if seen != drover.StateFailed && seen != drover.StateCompleted && seen != drover.StateDelayed {
		return "", fmt.Errorf("%w: retry from %q: want failed, completed or delayed", drover.ErrInvalidOption, seen)
	}
	return i.retryJob(ctx, queue, id, seen, true, reset)
}

// retryJob is RetryJob; from, when set, is the one finished state retried,
// and with exact the one state retried, delayed included.
func (i *Inspector) retryJob(ctx context.Context, queue, id string, from drover.JobState, exact, reset bool) (drover.JobState, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return "", err
	}
	state, err := q.GetJobState(ctx, id)
	if err != nil {
		return "", err
	}
	job := q.Job(id)
	opts := &drover.RetryOptions{ResetAttemptsMade: reset, ResetAttemptsStarted: reset}
	switch {
	case state == drover.StateUnknown:
		err = &drover.JobError{Queue: queue, JobID: id, Op: "retry", Err: drover.ErrJobNotFound}
	case exact && state != from, from != "" && state != from && (state == drover.StateFailed || state == drover.StateCompleted):
		err = &drover.JobError{Queue: queue, JobID: id, Op: "retry",
			Err: fmt.Errorf("%w: the job is %s, not %s", drover.ErrNotInState, state, from)}
	case state == drover.StateFailed, state == drover.StateCompleted:
		err = job.Retry(ctx, state, opts)
	case state == drover.StateDelayed:
		err = job.RetryNow(ctx, opts)
	default:
		err = &drover.JobError{Queue: queue, JobID: id, Op: "retry",
			Err: fmt.Errorf("%w: the job is %s; only failed, completed and delayed jobs can be retried", drover.ErrNotInState, state)}
	}
	i.noteConflict(ctx, q, id, "retry", err)
	return state, err
}

// RetryOptions configure RetryJobs. Nil means defaults.
type RetryOptions struct {
	// State is drover.StateFailed (default) or drover.StateCompleted.
	State drover.JobState
	// Filter selects the jobs. Zero = every job of State.
	Filter Filter
	// ResetAttempts retries with fresh attempts: AttemptsMade and
	// AttemptsStarted back to 0, the whole attempt budget back (see
	// drover.RetryOptions.ResetAttemptsStarted).
	ResetAttempts bool
	// IncludeUnrecoverable retries failed jobs that failed for good through
	// an unrecoverable error too (FailedUnrecoverable), and flow parents a
	// child failed (FailedChild). Default false: they are left alone and
	// counted in RetryResult.Excluded, since running them again fails them
	// again (or runs a parent without its child's result).
	IncludeUnrecoverable bool
	// Limit retries at most this many jobs, newest first. 0 = all.
	Limit int
	// ChunkSize is how many jobs move per chunk. Defaults to
	// RetryChunkDefault.
	ChunkSize int
	// Pause waits between chunks so a bulk retry cannot flood the workers
	// (and cause the retry storm it is meant to recover from). Defaults to
	// RetryPauseDefault; negative = no pause.
	Pause time.Duration
	// OlderThan retries only jobs that finished at or before this instant;
	// zero = no bound. A confirmed bulk retry passes the dry run's
	// RetryResult.NewestFinished: jobs that failed after the dry run are
	// left for the next retry, so it moves what was confirmed, not more.
	OlderThan time.Time
	// DryRun only counts and lists the jobs that would be retried.
	DryRun bool
	// Progress, if set, is called after each chunk with the jobs done so far
	// and the total to do.
	Progress func(done, total int)
}

// Validate reports options RetryJobs refuses (drover.ErrInvalidOption): a
// State other than failed or completed, a negative ChunkSize or Limit. A
// caller that runs the retry in the background checks them first, so a
// mistake is answered at once instead of by a failed operation.
func (o *RetryOptions) Validate() error {
	switch {
	case o.State != "" && o.State != drover.StateFailed && o.State != drover.StateCompleted:
		return fmt.Errorf("%w: inspect.RetryOptions.State must be %q or %q, got %q", drover.ErrInvalidOption, drover.StateFailed, drover.StateCompleted, o.State)
	case o.ChunkSize < 0 || o.Limit < 0:
		return fmt.Errorf("%w: inspect.RetryOptions.ChunkSize and Limit must not be negative, got %d and %d", drover.ErrInvalidOption, o.ChunkSize, o.Limit)
	}
	return nil
}

// RetryResult reports a bulk retry.
type RetryResult struct {
	Queue string          `json:"queue"`
	State drover.JobState `json:"state"`
	// Matched counts the jobs selected; Retried those moved; Skipped those
	// that changed meanwhile (removed, retried by someone else, or run again
	// and finished since they were selected: a job is never retried twice
	// for one request).
	Matched int  `json:"matched"`
	Retried int  `json:"retried"`
	Skipped int  `json:"skipped"`
	DryRun  bool `json:"dryRun"`
	// Conflicts counts the skipped jobs a worker still held the lock of
	// (see Inspector.Conflicts).
	Conflicts int `json:"conflicts"`
	// Excluded counts the failed jobs that passed the filter but were left
	// alone because they failed as unrecoverable (see
	// RetryOptions.IncludeUnrecoverable).
	Excluded int `json:"excluded"`
	// ExcludedByChild counts, of Excluded, the flow parents a child failed
	// (FailedChild); the others failed as unrecoverable. A message that
	// called them all unrecoverable gave the parents the wrong reason.
	ExcludedByChild int `json:"excludedByChild"`
	// IDs lists up to RetryIDsMax of the matched ids, newest first.
	IDs []string `json:"ids"`
	// Skips names up to RetrySkipsMax of the skipped jobs, each with why
	// (removed, held by a worker, in another state now, run again since it
	// was selected). A retry by age counts its skipped jobs but cannot
	// name them.
	Skips []SkippedJob `json:"skips"`
	// NewestFinished is when the newest matched job finished (null when
	// none matched). Passed back as RetryOptions.OlderThan (the API's
	// olderThan), the retry takes the matched jobs and none that finished
	// later.
	NewestFinished Instant `json:"newestFinished"`
	// Sample shows the first RetrySampleMax matched jobs, for a
	// confirmation that says what will be retried.
	Sample []JobSummary `json:"sample"`
}

// SkippedJob is a job a bulk retry selected and left as it was.
type SkippedJob struct {
	ID string `json:"id"`
	// Reason is the refusal's own words ("job is locked by a worker",
	// "job not in the expected state: it is waiting, not failed").
	Reason string `json:"reason"`
}

// RetrySkipsMax bounds RetryResult.Skips.
const RetrySkipsMax = 20

// RetrySampleMax bounds RetryResult.Sample.
const RetrySampleMax = 5

// RetryJobs retries queue's failed (or completed) jobs in paced chunks.
// Without a filter (and with IncludeUnrecoverable, or for completed jobs) it
// moves jobs by age with drover.Queue.RetryJobs (one script call per chunk);
// else it selects the jobs first, then retries them one by one with
// drover.Job.Retry, chunk by chunk, each only if it still has the
// finishedOn it was selected with (RetryOptions.FinishedBy): a job that ran
// again meanwhile is skipped, never retried twice. Cancelling ctx stops it
// between jobs; the result says how far it got.
func (i *Inspector) RetryJobs(ctx context.Context, queue string, opts *RetryOptions) (*RetryResult, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	var o RetryOptions
	if opts != nil {
		o = *opts
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.State = cmp.Or(o.State, drover.StateFailed)
	o.ChunkSize = cmp.Or(o.ChunkSize, RetryChunkDefault)
	o.Pause = cmp.Or(o.Pause, RetryPauseDefault)
	o.Pause = max(o.Pause, 0)
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	res := &RetryResult{Queue: queue, State: o.State, DryRun: o.DryRun, IDs: []string{}, Sample: []JobSummary{}, Skips: []SkippedJob{}}
	progress := func(done, total int) {
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}

	// Unrecoverable failures are told apart job by job: leaving them out
	// needs the selecting path. So does a limit: the by-age move takes the
	// oldest jobs, and a limit takes the newest, the ones a dry run lists.
	excludeUnrecoverable := o.State == drover.StateFailed && !o.IncludeUnrecoverable
	if o.Filter.IsZero() && !excludeUnrecoverable && o.Limit == 0 {
		// The finished sets are scored by finishedOn: the jobs finished by
		// the bound are a score range, newest first.
		set := i.finishedSet(queue, o.State)
		upTo := "+inf"
		if !o.OlderThan.IsZero() {
			upTo = strconv.FormatInt(o.OlderThan.UnixMilli(), 10)
		}
		n, err := i.rdb.ZCount(ctx, set, "-inf", upTo).Result()
		if err != nil {
			return nil, fmt.Errorf("count %s jobs of queue %q: %w", o.State, queue, err)
		}
		res.Matched = int(n)
		if res.Matched > 0 {
			res.IDs, err = i.rdb.ZRevRangeByScore(ctx, set, &redis.ZRangeBy{Max: upTo, Min: "-inf", Count: int64(min(res.Matched, RetryIDsMax))}).Result()
			if err != nil {
				return nil, fmt.Errorf("list %s jobs of queue %q: %w", o.State, queue, err)
			}
			if err := i.sample(ctx, q, o.State, res); err != nil {
				return nil, err
			}
		}
		if o.DryRun || res.Matched == 0 {
			return res, nil
		}
		res.Retried, err = q.RetryJobs(ctx, &drover.RetryJobsOptions{
			State: o.State, Count: o.ChunkSize, OlderThan: o.OlderThan, ResetAttemptsMade: o.ResetAttempts, ResetAttemptsStarted: o.ResetAttempts,
			Pause: o.Pause, Progress: func(moved int) { progress(moved, max(res.Matched, moved)) },
		})
		if err == nil {
			// Counted but not moved: they left the state meanwhile (someone
			// retried or removed them), or failed again after the bound.
			res.Skipped = max(res.Matched-res.Retried, 0)
		}
		return res, err
	}

	chosen, excluded, err := i.matching(ctx, q, o.State, o.Filter, o.OlderThan, o.Limit, excludeUnrecoverable)
	if err != nil {
		return nil, err
	}
	res.ExcludedByChild = excluded.byChild
	ids := make([]string, len(chosen))
	for k, c := range chosen {
		ids[k] = c.id
	}
	res.Matched, res.Excluded = len(ids), excluded.all
	// Appended to the empty list res starts with: no match is [] in JSON,
	// as the by-age path answers, not null.
	res.IDs = append(res.IDs, ids[:min(len(ids), RetryIDsMax)]...)
	if err := i.sample(ctx, q, o.State, res); err != nil {
		return nil, err
	}
	if o.DryRun {
		return res, nil
	}
	for from := 0; from < len(chosen); from += o.ChunkSize {
		if from > 0 && o.Pause > 0 {
			if err := sleep(ctx, o.Pause); err != nil {
				return res, err
			}
		}
		for _, c := range chosen[from:min(from+o.ChunkSize, len(chosen))] {
			// Moved only if it is the failure selected: a job someone else
			// retried meanwhile that failed again (a later finishedOn) is
			// skipped, or one request ran it twice, and a confirmed retry
			// ran a job that failed after its preview.
			id := c.id
			err := q.Job(id).Retry(ctx, o.State, &drover.RetryOptions{ResetAttemptsMade: o.ResetAttempts, ResetAttemptsStarted: o.ResetAttempts, FinishedBy: c.finished})
			switch {
			case err == nil:
				res.Retried++
			case drover.IsRefusal(err):
				res.Skipped++
				if len(res.Skips) < RetrySkipsMax {
					why := err
					var je *drover.JobError
					if errors.As(err, &je) {
						why = je.Err // the job and queue are said already
					}
					res.Skips = append(res.Skips, SkippedJob{ID: id, Reason: why.Error()})
				}
				if errors.Is(err, drover.ErrJobLocked) {
					res.Conflicts++
					i.noteConflict(ctx, q, id, "bulk-retry", err)
				}
			default:
				return res, err
			}
		}
		progress(res.Retried+res.Skipped, len(ids))
	}
	return res, nil
}

// CountMatching counts queue's jobs in state that pass filter, reading the
// whole state (a filtered Jobs page stops after Options.ScanLimit jobs).
func (i *Inspector) CountMatching(ctx context.Context, queue string, state drover.JobState, filter Filter) (int, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, err
	}
	chosen, _, err := i.matching(ctx, q, state, filter, time.Time{}, 0, false)
	return len(chosen), err
}

// sample fills res.Sample from the first of res.IDs, and
// res.NewestFinished from the first (newest) of them.
func (i *Inspector) sample(ctx context.Context, q *drover.Queue, state drover.JobState, res *RetryResult) error {
	ids := res.IDs[:min(len(res.IDs), RetrySampleMax)]
	if len(ids) == 0 {
		return nil
	}
	jobs, err := i.readJobs(ctx, q, state, ids, false)
	if err != nil {
		return err
	}
	for _, id := range ids {
		r := jobs[id]
		if r == nil || r.job == nil {
			continue
		}
		j := r.job
		res.Sample = append(res.Sample, summarize(state, j, time.Time{}))
		if j.FinishedOn.After(res.NewestFinished.Time) {
			res.NewestFinished = InstantOf(j.FinishedOn)
		}
	}
	return nil
}

// chosenJob is a job a bulk retry selected, with the finishedOn it had then.
type chosenJob struct {
	id       string
	finished time.Time
}

// matching lists state's jobs that pass filter, newest first, reading the
// whole state in chunks. With excludeUnrecoverable it leaves out jobs that
// failed as unrecoverable and counts them.
// excludedJobs counts the jobs matching left out as unrecoverable: all,
// and byChild of them flow parents a child failed.
type excludedJobs struct{ all, byChild int }

func (i *Inspector) matching(ctx context.Context, q *drover.Queue, state drover.JobState, filter Filter, olderThan time.Time, limit int, excludeUnrecoverable bool) ([]chosenJob, excludedJobs, error) {
	var out []chosenJob
	var excluded excludedJobs
	_, _, err := i.scanJobs(ctx, q, state, false, 0, filter.Reason != "", func(j *drover.Job) bool {
		if !filter.Match(j) || (!olderThan.IsZero() && j.FinishedOn.After(olderThan)) {
			return true
		}
		if f := failedForOf(j); excludeUnrecoverable && retryExcluded(f) {
			excluded.all++
			if f == FailedChild {
				excluded.byChild++
			}
			return true
		}
		out = append(out, chosenJob{id: j.ID, finished: j.FinishedOn})
		return limit <= 0 || len(out) < limit
	})
	if err != nil {
		return nil, excludedJobs{}, err
	}
	return out, excluded, nil
}

// jobChunk is how many jobs a scan of a whole state reads per round trip.
const jobChunk = 500

// finishedSet is the key of queue's completed or failed set (state), whose
// scores are the jobs' finishedOn.
func (i *Inspector) finishedSet(queue string, state drover.JobState) string {
	if state == drover.StateFailed {
		return i.keys(queue).Failed()
	}
	return i.keys(queue).Completed()
}

// scanJobs reads state's jobs newest first (oldest first with asc),
// jobChunk at a time, and calls fn with each until fn returns false; with
// max > 0 it reads at most max ids. It returns how many ids it read and
// whether it stopped at max with more jobs possibly left (its last chunk was
// full). It reads the fields a summary needs (readJobs), never job data;
// with wholeReason the whole failed reason.
func (i *Inspector) scanJobs(ctx context.Context, q *drover.Queue, state drover.JobState, asc bool, max int, wholeReason bool, fn func(*drover.Job) bool) (scanned int, truncated bool, err error) {
	for pos := 0; max <= 0 || scanned < max; pos += jobChunk {
		n := jobChunk
		if max > 0 {
			n = min(n, max-scanned)
		}
		ids, err := q.GetJobIDs(ctx, []drover.JobState{state}, int64(pos), int64(pos+n-1), asc)
		if err != nil {
			return scanned, false, err
		}
		jobs, err := i.readJobs(ctx, q, state, ids, wholeReason)
		if err != nil {
			return scanned, false, err
		}
		scanned += len(ids)
		for _, id := range ids {
			j := jobs[id]
			if j == nil || j.job == nil {
				continue // gone since it was listed, or does not decode: it matches nothing
			}
			if !fn(j.job) {
				return scanned, false, nil
			}
		}
		if len(ids) < n {
			return scanned, false, nil
		}
	}
	more, err := holdsMore(ctx, q, state, scanned, asc)
	return scanned, more, err
}

// holdsMore reports whether state holds a job at position pos (in the
// order asc says): whether a read that stopped at a scan limit left jobs
// out. A state holding exactly the limit was read whole, and a report
// that said Truncated then promised jobs that do not exist.
func holdsMore(ctx context.Context, q *drover.Queue, state drover.JobState, pos int, asc bool) (bool, error) {
	ids, err := q.GetJobIDs(ctx, []drover.JobState{state}, int64(pos), int64(pos), asc)
	return len(ids) > 0, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PromoteJob runs a delayed job now, keeping its attempts.
func (i *Inspector) PromoteJob(ctx context.Context, queue, id string) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.Job(id).Promote(ctx)
}

// ChangePriority gives job id of queue a new priority (0 = none;
// drover.Job.ChangePriority): a waiting or prioritized job is re-queued
// where it puts it, lifo first among its priority.
func (i *Inspector) ChangePriority(ctx context.Context, queue, id string, priority int, lifo bool) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.Job(id).ChangePriority(ctx, priority, lifo)
}

// ChangeDelay makes delayed job id of queue due delay from now
// (drover.Job.ChangeDelay): drover.ErrNotInState if it is not delayed.
func (i *Inspector) ChangeDelay(ctx context.Context, queue, id string, delay time.Duration) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.Job(id).ChangeDelay(ctx, delay)
}

// PromoteAll runs every delayed job of queue now and returns how many.
func (i *Inspector) PromoteAll(ctx context.Context, queue string) (int, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, err
	}
	return q.PromoteJobs(ctx, 0)
}

// PromoteUpTo runs at most n delayed jobs of queue now, those due first,
// and returns how many it promoted and how many stay delayed: an operator
// who confirmed "run these N jobs" gets no more than N, whatever was
// delayed since the count they saw.
func (i *Inspector) PromoteUpTo(ctx context.Context, queue string, n int) (promoted int, left int64, err error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, 0, err
	}
	if promoted, err = q.PromoteEarliest(ctx, n); err != nil {
		return promoted, 0, err
	}
	counts, err := q.GetJobCounts(ctx, drover.StateDelayed)
	if err != nil {
		return promoted, 0, err
	}
	return promoted, counts[drover.StateDelayed], nil
}

// PromoteNamed is PromoteAll (n 0) or PromoteUpTo (n > 0) that also names
// the first max jobs it promoted (due first), for an audit entry; left is
// how many stay delayed when n > 0 (0 when n is 0).
func (i *Inspector) PromoteNamed(ctx context.Context, queue string, n, max int) (promoted int, ids []string, left int64, err error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, nil, 0, err
	}
	promoted, err = seam.Promote(ctx, q, n, func(moved []string) {
		ids = append(ids, moved[:min(len(moved), max-len(ids))]...)
	})
	if err != nil || n == 0 {
		return promoted, ids, 0, err
	}
	counts, err := q.GetJobCounts(ctx, drover.StateDelayed)
	if err != nil {
		return promoted, ids, 0, err
	}
	return promoted, ids, counts[drover.StateDelayed], nil
}

// RemoveJob deletes a job and its logs, unless a worker holds it.
func (i *Inspector) RemoveJob(ctx context.Context, queue, id string) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.Job(id).Remove(ctx, nil)
}

// Drain deletes the jobs of queue that wait to run: waiting, paused and
// prioritized, and delayed too when delayed (Queue.Drain). Active and
// finished jobs, parents waiting for their children and a job scheduler's
// next run stay. It returns how many it deleted.
func (i *Inspector) Drain(ctx context.Context, queue string, delayed bool) (int, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, err
	}
	return q.Drain(ctx, delayed)
}

// DrainNamed is Drain that also names the first max jobs it deleted, for
// an audit entry.
func (i *Inspector) DrainNamed(ctx context.Context, queue string, delayed bool, max int) (int, []string, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, nil, err
	}
	return seam.Drain(ctx, q, delayed, max)
}

// Pause stops workers from taking queue's jobs.
func (i *Inspector) Pause(ctx context.Context, queue string) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.Pause(ctx)
}

// Resume undoes Pause.
func (i *Inspector) Resume(ctx context.Context, queue string) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.Resume(ctx)
}

// CleanGraceDefault is the grace period `drover clean` and the dashboard's
// clean action use unless told otherwise: jobs of the last hour stay.
const CleanGraceDefault = time.Hour

// CleanPreviewCap bounds a CleanCandidates preview asked for with limit 0:
// the first 10000 candidates are listed (Clean itself then removes all of
// them), so a caller that got this many can say "10000 or more".
const CleanPreviewCap = 10000

// CleanCandidates lists the jobs Clean(ctx, queue, state, grace, limit)
// would remove now, oldest first, at most limit (0 = 10000): drover.Queue.CleanCandidates, which runs Clean's own
// script without its writes, so the count a confirmation shows is the
// count the clean removes. The window matters: a limited clean looks at
// the limit first jobs only (the oldest of a set, the tail of a list), and
// removes none of them that are younger than grace even when older jobs
// come later; a job scheduler's pending iteration and an active job a
// worker holds are never candidates.
func (i *Inspector) CleanCandidates(ctx context.Context, queue string, state drover.JobState, grace time.Duration, limit int) ([]string, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	return q.CleanCandidates(ctx, grace, limit, state)
}

// Clean removes up to limit of queue's jobs in state that are older than
// grace (finished for completed and failed), skipping jobs a worker holds,
// and returns their ids. limit 0 means no limit.
func (i *Inspector) Clean(ctx context.Context, queue string, state drover.JobState, grace time.Duration, limit int) ([]string, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	return q.Clean(ctx, grace, limit, state)
}

// Obliterate deletes queue and all its jobs. Without force it refuses while
// jobs are active (drover.ErrActiveJobs), and says so before anything
// changes: Queue.Obliterate, as BullMQ's, pauses the queue before it finds
// the active jobs, which left an operator's refused obliterate with a
// paused queue. (A job a worker takes between the two reads still meets
// that path.)
func (i *Inspector) Obliterate(ctx context.Context, queue string, force bool) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	if !force {
		n, err := i.rdb.LLen(ctx, i.keys(queue).Active()).Result()
		if err != nil {
			return fmt.Errorf("obliterate queue %q: count its active jobs: %w", queue, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: queue %q has %d active jobs: obliterate refused, nothing changed", drover.ErrActiveJobs, queue, n)
		}
	}
	return q.Obliterate(ctx, &drover.ObliterateOptions{Force: force})
}

// Events returns a reader of queue's events stream after lastID: "" = the
// events written after this call (the position is fixed now, not at the
// first read), "0" = the whole stream.
func (i *Inspector) Events(ctx context.Context, queue, lastID string) (*drover.QueueEvents, error) {
	if _, err := i.existing(ctx, queue); err != nil {
		return nil, err
	}
	if lastID == "" {
		last, err := i.rdb.XRevRangeN(ctx, i.keys(queue).Events(), "+", "-", 1).Result()
		if err != nil {
			return nil, fmt.Errorf("read events of queue %q: %w", queue, err)
		}
		lastID = "0-0"
		if len(last) > 0 {
			lastID = last[0].ID
		}
	}
	return drover.NewQueueEvents(i.rdb, queue, &drover.QueueEventsOptions{Prefix: i.opts.Prefix, LastEventID: lastID, Logger: i.opts.Logger})
}

// CancelJob cancels job id (drover.Queue.CancelJob, whose errors it
// returns): a job not running yet fails for good at once; the drover worker
// running a running one cancels its attempt. The job fails for good with
// "cancelled: <reason>", or, running, is retried per its attempts when retry
// is set.
func (i *Inspector) CancelJob(ctx context.Context, queue, id, reason string, retry bool) error {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.CancelJob(ctx, id, reason, &drover.CancelOptions{Retry: retry})
}

// CancelJobIn is CancelJob for a job seen in state seen. A job seen not
// running yet (waiting, paused, prioritized or delayed) is cancelled only
// if it still is not: a job a worker took since is refused with
// drover.ErrNotInState naming it active, and its attempt goes on
// (drover.CancelOptions.NotRunning), so a "cancel this queued job" does not
// stop a running attempt. A job seen active is cancelled only if a worker
// still runs it (drover.CancelOptions.Running): one whose attempt failed
// meanwhile and went back to waiting or delayed is refused with
// drover.ErrNotInState naming its state, and keeps its next attempt, so a
// "cancel this running attempt" does not fail a queued job for good.
func (i *Inspector) CancelJobIn(ctx context.Context, queue, id string, seen drover.JobState, reason string, retry bool) error {
	if ctx == nil {
		return errNilContext
	}
	var notRunning bool
	switch seen {
	case drover.StateActive:
		// Running below.
	case drover.StateWaiting, drover.StatePaused, drover.StatePrioritized, drover.StateDelayed:
		notRunning = true
	default:
		return fmt.Errorf("%w: cancel from %q: want active, waiting, paused, prioritized or delayed", drover.ErrInvalidOption, seen)
	}
	q, err := i.existing(ctx, queue)
	if err != nil {
		return err
	}
	return q.CancelJob(ctx, id, reason, &drover.CancelOptions{Retry: retry, NotRunning: notRunning, Running: !notRunning})
}

// retryExcluded reports whether a bulk retry leaves a job that failed for
// good for this reason alone unless told otherwise
// (RetryOptions.IncludeUnrecoverable).
func retryExcluded(f FailedFor) bool { return f == FailedUnrecoverable || f == FailedChild }
