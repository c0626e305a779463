package drover

// The finish side of the worker: writing results in batches, each in the
// script call that also fetches the next jobs for the freed slots, on the
// job goroutines themselves (carriers).

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
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
	// barrier, when not empty, holds results back until that many are
	// waiting, which then go in one batch, in the order of the job ids
	// it lists (seam.FinishBatch: the differential tester's batch
	// finish, whose fetch takes several jobs).
	barrier []string
	writing int // goroutines carrying batches now, ≤ maxWriters
	// parents counts the flow parents in this queue (by id) of the
	// results being written now, for flowCut.
	parents map[string]int
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
	if len(c.barrier) > 0 {
		if len(c.pending) < len(c.barrier) {
			c.mu.Unlock()
			return nil
		}
		slices.SortStableFunc(c.pending, func(a, b *finishItem) int {
			return cmp.Compare(barrierIndex(c.barrier, a), barrierIndex(c.barrier, b))
		})
		c.barrier = nil
	}
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
		items := c.pending[:min(len(c.pending), maxFinish)]
		n := c.flowCut(w, items)
		if n == 0 {
			// The other writer took every result while this one yielded
			// or wrote: a call now would carry nothing (at concurrency 10,
			// one call in seven did; a free slot is the fetcher's to fill).
			// Or the first result waiting is a flow parent's whose child's
			// result the other writer is writing: that writer takes it
			// once its call returned.
			c.writing--
			c.mu.Unlock()
			return nil
		}
		batch := slices.Clone(c.pending[:n])
		c.pending = slices.Delete(c.pending, 0, n)
		c.markParents(w, batch, 1)
		c.mu.Unlock()
		// A batch flowCut ended before a parent's completion fetches
		// nothing: the call with the rest fetches for every slot, after
		// the parent's result, as BullMQ's worker fetches after its
		// batch's last finish (campaign seed 7001850).
		next := w.writeBatch(batch, n == len(items))
		c.mu.Lock()
		c.markParents(w, batch, -1)
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

// barrierIndex is the place of the result's job in the barrier's order (after
// every listed job when it is not listed).
func barrierIndex(order []string, it *finishItem) int {
	if i := slices.Index(order, it.rj.job.ID); i >= 0 {
		return i
	}
	return len(order)
}

// flowCut returns how many of the results waiting, from the first, one
// script call writes now: those before the first completion of a flow
// parent whose child's result came before it, earlier in items or in a
// call another writer has not seen return. Results must reach Redis in the
// order they came, as BullMQ's worker sends its moveToFinished calls one
// by one on one connection: finishJobs looks at every completion's pending
// and failed children before it writes any result of its call, and two
// writers' calls may run in either order, so such a parent was refused as
// still waiting for the child ("has pending dependencies", an attempt
// failed for a child that had completed or had failed it for good). The
// parent's result goes in a call after the child's returned. A child's
// result after its parent's completion shares the call: the script refuses
// that completion (the child is still pending) and stops there, and the
// worker's next call fails the parent and then writes the child's result,
// as BullMQ's calls do (campaign seed 2156), with the batch's one time
// (campaign seed 5000556: a batch cut there had two). A parent is known
// from its child's stored parent only: a child adopted by a flow while it
// ran (a custom id) is not seen. Called with c.mu held.
func (c *carriers) flowCut(w *Worker, items []*finishItem) int {
	var parents map[string]bool
	for i, it := range items {
		if it.rec.Kind == scripts.FinishCompleted && (parents[it.rec.ID] || c.parents[it.rec.ID] > 0) {
			return i
		}
		if id, ok := w.parentHere(it); ok {
			if parents == nil {
				parents = make(map[string]bool)
			}
			parents[id] = true
		}
	}
	return len(items)
}

// parentHere returns the id of the result's flow parent when that parent
// is a job of the worker's queue (only those can share its calls).
func (w *Worker) parentHere(it *finishItem) (string, bool) {
	pk, base := it.rj.stored.parentKey, w.q.k.Base()
	if len(pk) <= len(base) || pk[:len(base)] != base {
		return "", false
	}
	return pk[len(base):], true
}

// markParents adds delta to the count of the parents of batch's results
// being written. Called with c.mu held.
func (c *carriers) markParents(w *Worker, batch []*finishItem, delta int) {
	for _, it := range batch {
		id, ok := w.parentHere(it)
		if !ok {
			continue
		}
		if c.parents == nil {
			c.parents = make(map[string]int)
		}
		c.parents[id] += delta
		if c.parents[id] <= 0 {
			delete(c.parents, id)
		}
	}
}

// waitCarriers waits until no goroutine writes results. Close calls it once
// no job is in flight, when no new writer can start.
func (w *Worker) waitCarriers() { w.carry.wg.Wait() }

// writeBatch writes a batch of results, fetching the next jobs for the
// freed slots in the same script call when mayFetch, and returns those
// jobs, counted in flight but not started (the caller starts them).
func (w *Worker) writeBatch(batch []*finishItem, mayFetch bool) []*runningJob {
	// The finished jobs' slots, and free ones taken here, go to the jobs
	// this call fetches.
	reserved, fetch := 0, 0
	// A write that moves a job back for ErrRateLimited runs alone: no fetch
	// (the fetcher's, or another write's) may be on its way to Redis while
	// it moves the job back, or until the limit is noted, or that fetch
	// would take the job again at once. Other writes share the gate.
	rateLimited := hasOutcome(batch, OutcomeRateLimited)
	if rateLimited {
		w.limitGate.Lock()
		defer w.limitGate.Unlock()
	} else {
		w.limitGate.RLock()
	}
	// A paused worker fetches nothing; a write that does fetch counts
	// itself on its way until its jobs are in flight, for Pause to wait.
	fetching := mayFetch && !w.closing.Load() && !w.noFetchOnFinish && w.gate.held() == nil && !rateLimited &&
		w.rateLimitWait() == 0 && w.pauser.enter()
	if fetching {
		reserved = w.jobs.take(max(w.fetchBatch()-len(batch), 0))
		fetch = min(len(batch)+reserved, w.fetchBatch())
	}
	recs := make([]*scripts.FinishRecord, len(batch))
	done := make([]*runningJob, len(batch))
	for i, it := range batch {
		recs[i], done[i] = &it.rec, it.rj
	}
	failed := msgWriteFailed
	if len(recs) == 0 {
		failed = msgFetchFailed // a call with no result only takes jobs
	}
	// One time for the batch, in every call that writes it (a refused
	// completion's follow-up too): its finished jobs share one finishedOn.
	now := w.q.nowMs()
	codes, next, rateLimitTTL, ok := w.writeResults(recs, fetch, now, failed)
	if ok {
		// Refused completions fail next, in a call that fetches for their
		// slots (the first fetched none for them), under the same gate.
		more, ttl := w.failRefusedCompletions(batch, codes, fetch-len(next), now)
		next = append(next, more...)
		rateLimitTTL = max(rateLimitTTL, ttl)
	}
	if !rateLimited {
		w.limitGate.RUnlock()
	}
	if !ok {
		w.log.Error("giving up writing job results; the stalled checker will recover these jobs", slog.Int(logkey.Count, len(batch)))
		for _, it := range batch {
			w.finished(it.rj, Finish{Err: it.err, Took: it.took})
		}
		w.jobs.finish(done, reserved, nil)
		if fetching {
			w.pauser.leave()
		}
		return nil
	}
	if rateLimited {
		// As BullMQ's worker after a RateLimitError: no fetch until the
		// limiter key expires, whatever the worker's own options. The
		// script read the key's remaining time in the step that moved the
		// job back; noted before the gate opens, so every later fetch sees it.
		w.noteRateLimit(rateLimitTTL)
	}
	for _, rj := range done {
		rj.written.Store(true)
	}
	newDelayed := false
	for i, it := range batch {
		job := it.rj.job
		if codes[i] != nil {
			w.log.LogAttrs(context.Background(), slog.LevelWarn, msgNotOwned,
				append(w.jobAttrs(job), slog.String(logkey.Outcome, it.outcome.String()), slog.Any(logkey.Error, codes[i]))...)
			w.finished(it.rj, Finish{Err: it.err, Took: it.took})
			continue
		}
		w.logFinished(context.Background(), it)
		if run := it.rj.stored.schedulerRun; run != nil {
			w.checkAdvanced(run)
		}
		w.finished(it.rj, Finish{Outcome: it.outcome, Err: it.err, Took: it.took})
		if it.outcome == OutcomeRetryDelayed || it.outcome == OutcomeDelayed {
			w.setNextDelayed(it.rec.Due)
			newDelayed = true
		}
	}
	w.jobs.finish(done, reserved, next)
	w.keeper.arrived(next)
	if fetching {
		w.pauser.leave()
	}
	w.noteRateLimit(rateLimitTTL)
	if newDelayed && !w.closing.Load() && !w.IsPaused() {
		if w.beforeFinishWake != nil {
			w.beforeFinishWake()
		}
		w.wake() // the fetcher may sleep past the new delayed job's due time
	}
	return next
}

// refusedCompletion is the error an attempt fails with when the finish
// script refused its completion: the job became a flow parent while it ran
// and a child is pending or failed; or the one Job.MoveToWaitingChildren
// returns for a failed child. Its text is BullMQ's, so a job's
// failedReason reads the same whichever worker ran it.
type refusedCompletion struct {
	jobID string
	cause error // ErrPendingDependencies or ErrFailedChildren
	// command is the BullMQ script the text names; "" = moveToFinished.
	command string
}

func (e *refusedCompletion) Error() string {
	command := cmp.Or(e.command, "moveToFinished")
	if errors.Is(e.cause, ErrFailedChildren) {
		return "Cannot complete job " + e.jobID + " because it has at least one failed child. " + command
	}
	return "Job " + e.jobID + " has pending dependencies. " + command
}

func (e *refusedCompletion) Unwrap() error { return e.cause }

// failRefusedCompletions writes, as failures, the completions the finish
// script refused (codes -4/-9; the jobs are still active and locked), the
// way BullMQ's worker fails an attempt whose moveToFinished was refused:
// pending children make an ordinary error (retried per the job's attempts),
// a failed child an unrecoverable one. The script stops at the first
// refused completion (the records after it come back ErrNotReached,
// untouched), so the next call carries that job's failure and then the
// results after it, in the batch's order: BullMQ's calls, one job at a
// time, fail the refused job before they finish the later ones. A refusal
// in that call stops it the same way, and so on; a call with a refusal
// fetches nothing, the last call fetches for every slot. batch and codes are
// updated in place with the new outcomes and codes. Jobs whose failure
// cannot be written stay active for the stalled checker. The calls fetch
// up to free jobs in all and return them, with the limiter's remaining
// time when the last fetched none. The calls take now as their time, the
// batch's first call's, so the batch's finished jobs share one finishedOn
// (campaign seed 5000556: a count trim kept by that time). The common path
// (no refusal) costs one scan of codes.
func (w *Worker) failRefusedCompletions(batch []*finishItem, codes []error, free int, now int64) (next []*runningJob, rateLimitTTL int64) {
	for {
		var idx []int
		for i, err := range codes {
			switch {
			case errors.Is(err, ErrPendingDependencies) || errors.Is(err, ErrFailedChildren):
				it := batch[i]
				var err error = &refusedCompletion{jobID: it.rj.job.ID, cause: codes[i]}
				if errors.Is(err, ErrFailedChildren) {
					err = Unrecoverable(err)
				}
				batch[i] = w.outcome(context.Background(), it.rj, nil, err, it.took)
				idx = append(idx, i)
			case errors.Is(err, scripts.ErrNotReached):
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return next, rateLimitTTL
		}
		recs := make([]*scripts.FinishRecord, len(idx))
		for k, i := range idx {
			recs[k] = &batch[i].rec
		}
		// A call with a refused completion fetches nothing (finishJobs'
		// refused): the last call fetches for every slot, as BullMQ's
		// worker fetches after the refused job's failure and the later
		// jobs' finishes. free is what the calls may fetch in all.
		fetch := max(free-len(next), 0)
		again, more, ttl, ok := w.writeResults(recs, fetch, now, "write refused completions as failures failed")
		if !ok {
			// Close gave up: the jobs stay active for the stalled
			// checker, their codes what the last call answered.
			return next, rateLimitTTL
		}
		next = append(next, more...)
		rateLimitTTL = ttl
		for k, i := range idx {
			codes[i] = again[k]
		}
	}
}

// settledCallTTL is how long a call settled after its reply was lost stays
// marked settled in Redis, so that a copy of it still on its way (held up by
// a paused server or a stalled network) does nothing when it arrives.
const settledCallTTL = 10 * time.Minute

// mayHaveRun reports whether a script call that failed with err may have
// run in Redis: its reply was lost (a reset connection, a read timeout). A
// send that never left (a dial error, a closed client) or an error Redis
// answered with did not run it.
func mayHaveRun(err error) bool {
	return !isRedisReply(err) && !isDialError(err) && !errors.Is(err, redis.ErrClosed)
}

// writeResults writes recs with finishJobs, fetching up to fetch jobs in
// the same calls, and returns each record's code and the fetched jobs
// (counted nowhere yet). It retries until Redis has every record, or gives
// up (ok false) when Close stops waiting (forceFinish). Each call is sent
// once: when its reply is lost, the call is settled (scripts.SettleCall)
// instead of sent again, which would find the jobs it finished gone (and
// report their results as not written) and fetch more jobs while the
// first run's sat in active with nobody running them; the jobs it fetched
// are taken over and the records it did not write are sent under a new
// token.
//
// now is the first call's time (its jobs' finishedOn); a call sent after a
// lost reply takes its own.
func (w *Worker) writeResults(recs []*scripts.FinishRecord, fetch int, now int64, failed string) (codes []error, next []*runningJob, rateLimitTTL int64, ok bool) {
	// Results must land even while closing: only Close giving up
	// (forceCtx) ends a write, bounded even when Redis does not answer.
	ctx := w.forceCtx
	// todo: the indexes of the records not written yet; nil for all of them
	// (the first call). The usual write is one call that answers: its codes
	// and jobs are returned as they came, with no copy (each allocation is
	// a share of the worker's CPU per job at concurrency 1).
	var todo []int
	type taken struct {
		jobs  []scripts.Fetched
		token string
	}
	var fetched []taken
	args := w.fetchArgs(fetch)
	args.Now = now
	send := recs
	for attempt := 1; ; attempt++ {
		// Sent inline, not through bounded.Call: a goroutine per call (the
		// hot path: one a job at concurrency 1) cost about 40 us of CPU
		// per job and 15-20 % of the rate at c1. So a write in flight to a
		// Redis that stopped answering returns when the client's read
		// timeout ends it (go-redis's default is 3 s; the tests' clients
		// read with 15 s, hence about 13 s in
		// TestWorkerCloseWhileRedisIsPaused), and Close's give-up
		// (forceCtx) stops its retries. A client without timeouts would
		// never end it: loopCall bounds its writes by forceCtx instead.
		type finished struct {
			codes []error
			fetch scripts.Fetch
		}
		callArgs, callRecs := args, send // an abandoned call keeps these
		r, err := loopCall(w, ctx, func(ctx context.Context) (finished, error) {
			c, f, err := scripts.FinishJobsRefs(ctx, w.q.rdb, w.q.k, callArgs, w.metricsPoints(), callRecs)
			return finished{c, f}, err
		})
		c, f := r.codes, r.fetch
		if err == nil {
			if todo == nil {
				return c, w.prepare(f.Jobs, args.Token), f.RateLimitTTL, true
			}
			for k, i := range todo {
				codes[i] = c[k]
			}
			fetched = append(fetched, taken{f.Jobs, args.Token})
			rateLimitTTL = f.RateLimitTTL
			break
		}
		w.log.Warn(failed, slog.Int(logkey.Count, len(send)), slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		if mayHaveRun(err) {
			st, ok := w.settleCall(args.Token, send)
			if !ok {
				return nil, nil, 0, false
			}
			fetched = append(fetched, taken{st.Jobs, args.Token})
			fetch -= len(st.Jobs)
			if todo == nil {
				codes = make([]error, len(recs))
				todo = make([]int, len(recs))
				for i := range todo {
					todo[i] = i
				}
			}
			var left []int
			for k, i := range todo {
				if st.Resend[k] {
					left = append(left, i)
				} else {
					codes[i] = st.Codes[k]
				}
			}
			if len(left) == 0 {
				break
			}
			todo, send = left, make([]*scripts.FinishRecord, len(left))
			for k, i := range left {
				send[k] = recs[i]
			}
			args = w.fetchArgs(max(fetch, 0)) // a new call: the settled one must not run again
		}
		select {
		case <-w.forceFinish:
			return nil, nil, 0, false
		case <-time.After(retryDelay(attempt)):
		}
	}
	for _, t := range fetched {
		next = append(next, w.prepare(t.jobs, t.token)...)
	}
	return codes, next, rateLimitTTL, true
}

// settleCall learns what the call with lock token base token did, whose
// reply was lost (scripts.SettleCall), retrying until Redis answers; ok is
// false when Close stops waiting first.
func (w *Worker) settleCall(token string, refs []*scripts.FinishRecord) (st scripts.Settled, ok bool) {
	recs := make([]scripts.FinishRecord, len(refs))
	for i, r := range refs {
		recs[i] = *r
	}
	for attempt := 1; ; attempt++ {
		st, err := bounded.Call(w.forceCtx, func(ctx context.Context) (scripts.Settled, error) {
			return scripts.SettleCall(ctx, w.q.rdb, w.q.k, token, settledCallTTL, recs)
		})
		if err == nil {
			w.log.Info("settled a call whose reply was lost", slog.Int(logkey.Count, len(recs)),
				slog.Int(logkey.Jobs, len(st.Jobs)), slog.String(logkey.Token, token))
			return st, true
		}
		w.log.Warn(msgSettleFailed, slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		select {
		case <-w.forceFinish:
			return scripts.Settled{}, false
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

// hasOutcome reports whether an item of batch ended with o.
func hasOutcome(batch []*finishItem, o Outcome) bool {
	for _, it := range batch {
		if it.outcome == o {
			return true
		}
	}
	return false
}
