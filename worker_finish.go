package drover

// The finish side of the worker: writing results in batches, each in the
// script call that also fetches the next jobs for the freed slots, on the
// job goroutines themselves (carriers).

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// carriers is the finish side's state: results waiting to be written and
// the job goroutines writing them. There is no finisher goroutine: the job
// goroutine that hands in a result carries it to Redis itself when fewer
// than maxWriters others are writing, taking every result waiting at that
// moment along (group commit), and then goes on to run a job that call
// fetched. At low concurrency a job thus flows from one attempt to the next
// on one goroutine, with no hand-over that wakes another thread (measured
// at concurrency 1: a finisher goroutine and a goroutine per fetched job
// spent a sixth of the worker's CPU in futex wake-ups and stack growth).
type carriers struct {
	mu      sync.Mutex
	pending []*finishItem // handed in, not yet in a batch
	writing int           // goroutines carrying batches now, ≤ maxWriters
	wg      sync.WaitGroup
}

// deliver hands in a job's result. When a writer is free the caller becomes
// it: it writes batches until none is waiting and returns a job to run
// next (nil if the calls fetched none for it). Otherwise it returns nil at
// once; a writer at work takes the result along.
func (w *Worker) deliver(it *finishItem) *runningJob {
	c := &w.carry
	c.mu.Lock()
	c.pending = append(c.pending, it)
	if c.writing >= maxWriters {
		c.mu.Unlock()
		return nil
	}
	c.writing++
	c.wg.Add(1) // before the job's result is written, so before Close's drain returns
	c.mu.Unlock()
	defer c.wg.Done()
	for {
		// Jobs fetched together tend to finish together: yield once so the
		// ones about to hand in their result join this batch, instead of
		// each paying a script call of its own. Not when every job in
		// flight has handed its result in (always so at concurrency 1):
		// there is no one to wait for, and the yield alone cost a quarter of
		// the worker's CPU there.
		c.mu.Lock()
		waiting := len(c.pending)
		c.mu.Unlock()
		if w.jobs.count() > waiting {
			runtime.Gosched()
		}
		c.mu.Lock()
		n := min(len(c.pending), maxFinish)
		batch := slices.Clone(c.pending[:n])
		c.pending = slices.Delete(c.pending, 0, n)
		c.mu.Unlock()
		next := w.writeBatch(batch)
		c.mu.Lock()
		if len(c.pending) > 0 {
			// More results came in while this call ran: write them too,
			// and start every fetched job on a goroutine of its own.
			c.mu.Unlock()
			w.launch(next)
			continue
		}
		c.writing--
		c.mu.Unlock()
		if len(next) == 0 {
			return nil
		}
		w.launch(next[1:])
		return next[0]
	}
}

// waitCarriers waits until no goroutine writes results. Close calls it once
// no job is in flight, when no new writer can start.
func (w *Worker) waitCarriers() { w.carry.wg.Wait() }

// writeBatch writes a batch of results, fetching the next jobs for the
// freed slots in the same script call, and returns those jobs, counted in
// flight but not started (the caller starts them).
func (w *Worker) writeBatch(batch []*finishItem) []*runningJob {
	// The finished jobs' slots, and free ones taken here, go to the jobs
	// this call fetches.
	reserved, fetch := 0, 0
	if !w.closing.Load() && !w.noFetchOnFinish && w.gate.held() == nil {
		reserved = w.jobs.take(max(w.fetchBatch()-len(batch), 0))
		fetch = min(len(batch)+reserved, w.fetchBatch())
	}
	recs := make([]scripts.FinishRecord, len(batch))
	done := make([]*runningJob, len(batch))
	for i, it := range batch {
		recs[i], done[i] = it.rec, it.rj
	}
	var codes []error
	var f scripts.Fetch
	ctx := context.Background() // results must land even while closing
	args := w.fetchArgs(fetch)
	for attempt := 1; ; attempt++ {
		var err error
		codes, f, err = scripts.FinishJobs(ctx, w.q.rdb, w.q.k, args, w.metricsPoints(), recs)
		if err == nil {
			break
		}
		w.log.Warn("write job results failed", slog.Int(logkey.Count, len(batch)), slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		select {
		case <-w.forceFinish:
			w.log.Error("giving up writing job results; the stalled checker will recover these jobs", slog.Int(logkey.Count, len(batch)))
			for _, it := range batch {
				w.finished(it.rj, Finish{Err: it.err, Took: it.took})
			}
			w.jobs.finish(done, reserved, nil)
			return nil
		case <-time.After(retryDelay(attempt)):
		}
	}
	w.failRefusedCompletions(batch, codes)
	for _, rj := range done {
		rj.written.Store(true)
	}
	newDelayed := false
	for i, it := range batch {
		job := it.rj.job
		if codes[i] != nil {
			w.log.LogAttrs(context.Background(), slog.LevelWarn, "job result not written: the worker no longer owns the job",
				append(w.jobAttrs(job), slog.String(logkey.Outcome, it.outcome.String()), slog.Any(logkey.Error, codes[i]))...)
			w.finished(it.rj, Finish{Err: it.err, Took: it.took})
			continue
		}
		w.logFinished(it)
		w.finished(it.rj, Finish{Outcome: it.outcome, Err: it.err, Took: it.took})
		if it.outcome == OutcomeRetryDelayed || it.outcome == OutcomeDelayed {
			w.setNextDelayed(it.rec.Due)
			newDelayed = true
		}
	}
	next := w.prepare(f.Jobs, args.Token)
	w.jobs.finish(done, reserved, next)
	w.noteRateLimit(f.RateLimitTTL)
	if newDelayed && !w.closing.Load() {
		w.wake() // the fetcher may sleep past the new delayed job's due time
	}
	return next
}

// refusedCompletion is the error an attempt fails with when the finish
// script refused its completion: the job became a flow parent while it ran
// and a child is pending or failed. Its text is BullMQ's, so a job's
// failedReason reads the same whichever worker ran it.
type refusedCompletion struct {
	jobID string
	cause error // ErrPendingDependencies or ErrFailedChildren
}

func (e *refusedCompletion) Error() string {
	if errors.Is(e.cause, ErrFailedChildren) {
		return "Cannot complete job " + e.jobID + " because it has at least one failed child. moveToFinished"
	}
	return "Job " + e.jobID + " has pending dependencies. moveToFinished"
}

func (e *refusedCompletion) Unwrap() error { return e.cause }

// failRefusedCompletions writes, as failures, the completions the finish
// script refused (codes -4/-9; the jobs are still active and locked), the
// way BullMQ's worker fails an attempt whose moveToFinished was refused:
// pending children make an ordinary error (retried per the job's attempts),
// a failed child an unrecoverable one. batch and codes are updated in place
// with the new outcomes. Jobs whose failure cannot be written stay active
// for the stalled checker.
func (w *Worker) failRefusedCompletions(batch []*finishItem, codes []error) {
	var idx []int
	for i, err := range codes {
		if errors.Is(err, ErrPendingDependencies) || errors.Is(err, ErrFailedChildren) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	recs := make([]scripts.FinishRecord, len(idx))
	for k, i := range idx {
		it := batch[i]
		var err error = &refusedCompletion{jobID: it.rj.job.ID, cause: codes[i]}
		if errors.Is(err, ErrFailedChildren) {
			err = Unrecoverable(err)
		}
		batch[i] = w.outcome(context.Background(), it.rj, nil, err, it.took)
		recs[k] = batch[i].rec
	}
	ctx := context.Background() // results must land even while closing
	for attempt := 1; ; attempt++ {
		again, _, err := scripts.FinishJobs(ctx, w.q.rdb, w.q.k, w.fetchArgs(0), w.metricsPoints(), recs)
		if err == nil {
			for k, i := range idx {
				codes[i] = again[k]
			}
			return
		}
		w.log.Warn("write refused completions as failures failed", slog.Int(logkey.Count, len(recs)),
			slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		select {
		case <-w.forceFinish:
			return
		case <-time.After(retryDelay(attempt)):
		}
	}
}

// metricsPoints is the data points finishJobs keeps in BullMQ's metrics
// (WorkerOptions.Metrics), 0 when the worker keeps none.
func (w *Worker) metricsPoints() int {
	if w.opts.Metrics == nil {
		return 0
	}
	return w.opts.Metrics.MaxDataPoints
}
