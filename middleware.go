package drover

// Middleware: code that runs around every add (producer side) and around
// every attempt (worker side). Tracing, metrics, context values, panic
// policies and the WorkerHooks are all built on these two types.

import (
	"context"
	"fmt"
	"time"
)

// AddFunc stores jobs in a queue: what a Queue's AddMiddleware wraps. One
// result per job, in order, when the error is nil.
type AddFunc func(ctx context.Context, jobs []BulkJob) ([]*AddResult, error)

// AddMiddleware runs around every Queue.Add (one job) and Queue.AddBulk
// (all its jobs in one call), before the jobs are validated and encoded.
// It may change the jobs (their Data, their Opts, even add or drop jobs),
// the context, or the results and the error next returns; it may also
// return without calling next. With a nil error it must return one non-nil
// result per job it was given, in order: Add and AddBulk return an error
// otherwise (what next stored stays stored). It must not write through the Opts pointers
// it was given, which belong to the caller: to change options, set Opts to
// a changed copy. jobs is the middleware's own slice.
//
// Set them in QueueOptions.AddMiddleware. The first one is the outermost:
// it runs first and sees the results last.
type AddMiddleware func(ctx context.Context, jobs []BulkJob, next AddFunc) ([]*AddResult, error)

// AddFlowFunc stores flows: what a FlowProducer's FlowMiddleware wraps. One
// tree per flow, in order, when the error is nil.
type AddFlowFunc func(ctx context.Context, flows []FlowJob) ([]*JobNode, error)

// FlowMiddleware runs around every FlowProducer.Add (one flow) and
// FlowProducer.AddBulk (all its flows in one call), before the trees are
// validated and encoded: the flows' counterpart of AddMiddleware, e.g. to
// trace a flow and put its trace context in every job of it. flows is the
// middleware's own slice, but the nodes' Children slices and Opts pointers
// belong to the caller: to change a node, give the middleware's copy of
// its parent a new Children slice holding a changed copy of it.
//
// Set them in FlowProducerOptions.Middleware. The first one is the
// outermost: it runs first and sees the trees last.
type FlowMiddleware func(ctx context.Context, flows []FlowJob, next AddFlowFunc) ([]*JobNode, error)

// WorkerMiddleware runs around each attempt a Worker makes. Either field may
// be nil.
//
// Set them in WorkerOptions.Middleware. The first one is the outermost: its
// Process runs first and its Finished runs last. WorkerOptions.Hooks, when
// set, run as one more middleware, outside all of these.
type WorkerMiddleware struct {
	// Process wraps the processor: call next to run the rest of the chain
	// (the inner middleware, then the processor). It may pass next a
	// context of its own (values, a deadline), time the call, turn a panic
	// into an error (a panic that reaches the worker fails the attempt with
	// its stack), or change the value or error next returned, which the
	// worker then uses to decide the outcome. It must call next at most
	// once, on its own goroutine, before it returns.
	//
	// Process runs only when the processor would: not for a job that
	// fails without running (undecodable, a deferred failure, started
	// more than WorkerOptions.MaxStartedAttempts times).
	Process func(ctx context.Context, job *Job, next ProcessorFunc) (any, error)

	// Finished is called once the worker has written the attempt's
	// outcome to Redis (or knows it never will: then f.Outcome is
	// OutcomeUnknown), for every attempt whose Process ran, and for every
	// attempt that failed without running the processor. ctx is the
	// context this middleware's Process passed to next (the one it
	// received when it did not call next, or when Process is nil), so a
	// span or value it stored there is found again. ctx is the attempt's
	// and ends with it (it may be cancelled already): use it for its
	// values, and detach it (context.WithoutCancel) for any I/O. It runs
	// on the worker's result writer: keep it fast and safe for concurrent
	// use.
	Finished func(ctx context.Context, job *Job, f Finish)

	// FailureTelemetry, when set, is called for an attempt that failed
	// (o says whether the job failed for good or is retried, at once or
	// after a backoff) before the worker writes it. A non-empty result is
	// a trace context the worker stores with the failure, in the job hash
	// field "tm", where BullMQ's telemetry stores the context of its
	// fail, retry or delay span on moveToFailed (package droverotel does
	// the same). Nothing is stored for a job whose Telemetry.OmitContext
	// is set, as in BullMQ. ctx is the one Finished gets. When several
	// middleware return one, the outermost's is stored. It runs on the
	// attempt's goroutine before the write: keep it fast; a panic in it
	// stores nothing.
	FailureTelemetry func(ctx context.Context, job *Job, o Outcome) string
}

// Finish is how an attempt ended, as WorkerMiddleware.Finished sees it.
type Finish struct {
	// Outcome is what the worker wrote. OutcomeUnknown means nothing was
	// written: the worker lost the job's lock (the job belongs to another
	// worker or to the stalled checker now), or gave up writing when Close
	// could not reach Redis. An attempt whose processor moved its job to
	// waiting-children (Job.MoveToWaitingChildren) writes nothing more
	// either, but has its own outcome: OutcomeWaitingChildren, with Err
	// ErrWaitingChildren.
	Outcome Outcome
	// Err is the error the attempt failed with: the processor's (after
	// middleware), or the reason the job failed without running, or why
	// nothing was written (wrapping ErrLockLost). nil when it completed.
	Err error
	// Took is how long the attempt ran, from its fetch until the processor
	// (and the middleware around it) returned.
	Took time.Duration
}

// chain builds the worker's processing chain once: hooks outermost, then
// the middleware in order, then the processor. Layer i records the context
// it received in the attempt's mwCtx[i] (and the processor's in
// mwCtx[len]), so Finished can be handed the context its Process passed on.
func chain(proc Processor, mws []WorkerMiddleware) ProcessorFunc {
	n := len(mws)
	h := ProcessorFunc(func(ctx context.Context, job *Job) (any, error) {
		if rj := job.run; rj != nil && rj.mwCtx != nil {
			rj.mwCtx[n] = ctx
		}
		return proc.Process(ctx, job)
	})
	if n == 0 {
		if f, ok := proc.(ProcessorFunc); ok {
			return f // called directly: two frames fewer under it (see begin)
		}
		return proc.Process
	}
	for i := n - 1; i >= 0; i-- {
		next, process := h, mws[i].Process
		h = func(ctx context.Context, job *Job) (any, error) {
			if rj := job.run; rj != nil && rj.mwCtx != nil {
				rj.mwCtx[i] = ctx
			}
			if process == nil {
				return next(ctx, job)
			}
			return process(ctx, job, next)
		}
	}
	return h
}

// middleware is the worker's list: the hooks' middleware, then the options'.
func (o *WorkerOptions) middleware() []WorkerMiddleware {
	var mws []WorkerMiddleware
	if h := o.Hooks; h != nil && (h.JobStarted != nil || h.JobFinished != nil) {
		mws = append(mws, h.middleware())
	}
	return append(mws, o.Middleware...)
}

// middleware is the JobStarted and JobFinished hooks as a middleware, with
// their old meaning: JobStarted just before the processor runs, JobFinished
// once an outcome is written (never for an attempt whose result was not).
func (h *WorkerHooks) middleware() WorkerMiddleware {
	var m WorkerMiddleware
	if started := h.JobStarted; started != nil {
		m.Process = func(ctx context.Context, job *Job, next ProcessorFunc) (any, error) {
			started(job)
			return next(ctx, job)
		}
	}
	if finished := h.JobFinished; finished != nil {
		m.Finished = func(_ context.Context, job *Job, f Finish) {
			if f.Outcome != OutcomeUnknown {
				finished(job, f.Outcome, f.Took, f.Err)
			}
		}
	}
	return m
}

// finished calls every middleware's Finished for one attempt, innermost
// first. The contexts are handed on as they are, cancelled or about to be
// (run cancels the attempt's when the processor returns): detaching each
// here would cost an allocation per Finished per attempt that most Finished
// (spans, counters) never need; one that does I/O detaches its own.
func (w *Worker) finished(rj *runningJob, f Finish) {
	if len(w.mws) == 0 {
		return
	}
	for i := len(w.mws) - 1; i >= 0; i-- {
		fn := w.mws[i].Finished
		if fn == nil {
			continue
		}
		if c, ok := rj.mwContext(i); ok {
			fn(c, rj.job, f)
		}
	}
	// The slots share one array with the batch's other attempts (giveSlots):
	// let go of this attempt's contexts now, not when the last of them ends.
	clear(rj.mwCtx)
}

// mwContext is the context middleware i's Finished gets: the one its
// Process passed to next, or received; ok is false when an outer
// middleware did not call next, so this one never ran.
func (rj *runningJob) mwContext(i int) (c context.Context, ok bool) {
	c = rj.ctx
	if rj.mwCtx != nil {
		switch {
		case rj.mwCtx[i+1] != nil:
			c = rj.mwCtx[i+1]
		case rj.mwCtx[i] != nil:
			c = rj.mwCtx[i]
		case rj.ran:
			return nil, false
		}
	}
	return c, true
}

// failureTelemetry is the trace context to store with the failed attempt
// of rj (outcome o): the outermost middleware's non-empty
// FailureTelemetry, or "" (none asked, or the job omits its context).
func (w *Worker) failureTelemetry(rj *runningJob, o Outcome) (md string) {
	if t := rj.job.Opts.Telemetry; t != nil && t.OmitContext {
		return ""
	}
	for i := range w.mws {
		fn := w.mws[i].FailureTelemetry
		if fn == nil {
			continue
		}
		if c, ok := rj.mwContext(i); ok {
			if md = callFailureTelemetry(c, fn, rj.job, o); md != "" {
				return md
			}
		}
	}
	return ""
}

// callFailureTelemetry calls fn, a panic in it giving "": it runs outside
// the processor's recover, and tracing must not take the worker down.
func callFailureTelemetry(ctx context.Context, fn func(context.Context, *Job, Outcome) string, job *Job, o Outcome) (md string) {
	defer func() {
		if recover() != nil {
			md = ""
		}
	}()
	return fn(ctx, job, o)
}

// giveSlots gives each attempt of a fetched batch its middleware context
// slots (runningJob.mwCtx), all from one allocation.
func (w *Worker) giveSlots(batch []*runningJob) {
	n := len(w.mws) + 1
	if n == 1 {
		return
	}
	all := make([]context.Context, n*len(batch))
	for i, rj := range batch {
		rj.mwCtx = all[i*n : (i+1)*n : (i+1)*n]
	}
}

// addChains builds the queue's add chains once: one that ends in a single
// add (Add), one that ends in a bulk add (AddBulk).
func (q *Queue) addChains() {
	one := AddFunc(func(ctx context.Context, jobs []BulkJob) ([]*AddResult, error) {
		if len(jobs) != 1 {
			return q.addBulk(ctx, jobs)
		}
		r, err := q.addOne(ctx, &jobs[0])
		if err != nil {
			return nil, err
		}
		return []*AddResult{r}, nil
	})
	bulk := AddFunc(q.addBulk)
	for i := len(q.opts.AddMiddleware) - 1; i >= 0; i-- {
		mw, nextOne, nextBulk := q.opts.AddMiddleware[i], one, bulk
		one = func(ctx context.Context, jobs []BulkJob) ([]*AddResult, error) { return mw(ctx, jobs, nextOne) }
		bulk = func(ctx context.Context, jobs []BulkJob) ([]*AddResult, error) { return mw(ctx, jobs, nextBulk) }
	}
	q.addOneChain, q.addBulkChain = one, bulk
}

// addThrough runs Add's chain for one job.
func (q *Queue) addThrough(ctx context.Context, bj BulkJob) (*AddResult, error) {
	res, err := q.addOneChain(ctx, []BulkJob{bj})
	if err != nil {
		return nil, err
	}
	if err := chainResults("AddMiddleware", res, 1, "result", "job"); err != nil {
		return nil, fmt.Errorf("add job %q to queue %q: %w", bj.Name, q.name, err)
	}
	return res[0], nil
}

// addBulkThrough runs AddBulk's chain; jobs is the chain's own copy.
func (q *Queue) addBulkThrough(ctx context.Context, jobs []BulkJob) ([]*AddResult, error) {
	n := len(jobs)
	res, err := q.addBulkChain(ctx, jobs)
	if err != nil {
		return res, err
	}
	if err := chainResults("AddMiddleware", res, n, "result", "job"); err != nil {
		return nil, fmt.Errorf("add %s to queue %q: %w", count(n, "job"), q.name, err)
	}
	return res, nil
}

// chainResults checks what a middleware chain (mw names its type) returned
// with a nil error for n items: one non-nil result per item, in order, as
// Add, AddBulk and FlowProducer.Add/AddBulk promise their callers. Without
// it a dropped or extra result put every later one against the wrong item,
// and a nil one read as stored. The items the chain stored stay stored.
func chainResults[T any](mw string, res []*T, n int, result, item string) error {
	if len(res) != n {
		return fmt.Errorf("%s returned %s for %s", mw, count(len(res), result), count(n, item))
	}
	for i, r := range res {
		if r == nil {
			return fmt.Errorf("%s returned a nil %s for %s %d of %d", mw, result, item, i, n)
		}
	}
	return nil
}

// count is "1 job", "2 jobs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
