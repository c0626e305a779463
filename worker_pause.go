package drover

// Pausing one worker (BullMQ's worker.pause/resume): the queue stays as it
// is, only this worker stops taking jobs.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/seed40057009/drover/internal/logkey"
)

// WorkerPauseOptions configure Worker.Pause. Nil means defaults.
type WorkerPauseOptions struct {
	// DoNotWaitActive makes Pause return as soon as the worker takes no
	// more jobs, without waiting for the jobs it runs (BullMQ's
	// doNotWaitActive). They still run to their end and their results are
	// written.
	DoNotWaitActive bool
}

// pauser is a worker's pause state and the fetch calls on their way to
// Redis, which a Pause waits out: a call that decided to fetch before the
// pause may still take jobs, and Pause returns only once those jobs are
// counted in flight, so that it can wait for them too.
//
// The fetcher and the result writers call enter before a call that may
// fetch and leave once the jobs it took are in flight. enter and leave
// cost at most two atomic operations each when the worker is not paused:
// they are on the path of every fetch.
type pauser struct {
	paused  atomic.Bool  // read by enter, the stalled checker, IsPaused
	fetches atomic.Int64 // fetch calls entered and not left

	mu       sync.Mutex
	resumeCh chan struct{} // non-nil while paused; Resume closes it
	idle     chan struct{} // non-nil while a Pause waits for fetches; closed when none is left
}

// enter reports whether a fetch may be sent; when true, the caller calls
// leave once the jobs it took are in flight (or it took none).
//
// The order of the atomics is what makes Pause safe without a lock here:
// enter counts itself before it reads paused, and Pause sets paused before
// it reads the count. Either Pause sees this call counted (and waits for
// its leave), or this call sees paused (and fetches nothing).
func (p *pauser) enter() bool {
	p.fetches.Add(1)
	if p.paused.Load() {
		p.leave()
		return false
	}
	return true
}

// leave ends a fetch that enter let through.
func (p *pauser) leave() {
	if p.fetches.Add(-1) == 0 && p.paused.Load() {
		p.mu.Lock()
		if p.idle != nil && p.fetches.Load() == 0 {
			close(p.idle)
			p.idle = nil
		}
		p.mu.Unlock()
	}
}

// pauseLocked marks the worker paused and returns a channel closed once no
// fetch that began before is on its way, and whether this call paused it
// (false: it was paused already). p.mu is held.
func (p *pauser) pauseLocked() (fetchesDone <-chan struct{}, changed bool) {
	if p.resumeCh == nil {
		p.resumeCh = make(chan struct{})
		p.paused.Store(true)
		changed = true
	}
	if p.fetches.Load() == 0 {
		return closedChan, changed
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	return p.idle, changed
}

// resumeLocked clears the pause; false when the worker was not paused.
// p.mu is held.
func (p *pauser) resumeLocked() bool {
	if p.resumeCh == nil {
		return false
	}
	p.paused.Store(false)
	close(p.resumeCh)
	p.resumeCh = nil
	return true
}

// resumed is closed by the next Resume; nil when the worker is not paused.
func (p *pauser) resumed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumeCh
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Pause stops this worker taking jobs; the queue and its other workers,
// Node's or drover's, go on as before (Queue.Pause pauses the queue for
// all of them). It is BullMQ's worker.pause.
//
// When Pause returns nil, the worker moves no more jobs to active until
// Resume: a fetch call already on its way to Redis when Pause was called
// has returned (Pause waits for it, and the jobs it took count as running),
// and a wait for new jobs in progress was ended, so the worker does not
// consume the queue's marker while paused and a job added meanwhile wakes
// the other workers. Unless opts.DoNotWaitActive is set, Pause then waits
// until the jobs the worker runs have finished and their results are
// written, as BullMQ's pause does; the writes fetch no next job.
//
// While the worker is paused, the locks of the jobs it still runs are
// renewed, and, as BullMQ's paused worker, it runs no stalled-job check
// (the other workers of the queue do; Resume runs one at once). Close
// works as on a running worker.
//
// When ctx ends first, Pause returns ctx's error (wrapped) and the worker
// stays paused; a fetch that was on its way may then still hand over its
// jobs, and running jobs go on.
//
// Pause before Start makes the worker start paused: it takes no job until
// Resume. Pausing a paused worker returns nil at once, without waiting for
// fetches or jobs (BullMQ's pause does the same): only the Pause that
// paused it waits. Pause after Close has begun returns an error wrapping
// ErrClosed.
func (w *Worker) Pause(ctx context.Context, opts *WorkerPauseOptions) error {
	if w == nil || w.q == nil {
		return errZeroValue("Worker", "NewWorker")
	}
	if ctx == nil {
		return errNilContext
	}
	// Under the pauser's lock, which Close takes to mark the worker
	// closing: a wake-up Pause writes lands before Close deletes the wake
	// key, never after it.
	w.pauser.mu.Lock()
	if w.closing.Load() {
		w.pauser.mu.Unlock()
		return fmt.Errorf("pause worker for queue %q: %w", w.q.name, ErrClosed)
	}
	if w.pauser.resumeCh != nil {
		// Paused already: as BullMQ's pause, which looks at its paused
		// flag first, return at once, even while the first Pause still
		// waits for the worker's jobs.
		w.pauser.mu.Unlock()
		return nil
	}
	fetchesDone, changed := w.pauser.pauseLocked()
	if w.started.Load() {
		w.interruptWait(ctx)
	}
	w.pauser.mu.Unlock()
	if changed {
		w.log.InfoContext(ctx, "worker paused", slog.Bool(logkey.DoNotWaitActive, opts != nil && opts.DoNotWaitActive))
	}
	select {
	case <-fetchesDone:
	case <-ctx.Done():
		return fmt.Errorf("pause worker for queue %q: wait for fetches on their way: %w", w.q.name, context.Cause(ctx))
	}
	if opts != nil && opts.DoNotWaitActive {
		return nil
	}
	if !w.jobs.drain(ctx) {
		return fmt.Errorf("pause worker for queue %q: wait for %d active jobs: %w", w.q.name, w.jobs.count(), context.Cause(ctx))
	}
	return nil
}

// Resume lets a paused worker take jobs again, at once: the fetcher looks
// for jobs as soon as it is called, and the stalled-job check runs. It is
// BullMQ's worker.resume, except that on a worker never started it does not
// start it: it only undoes a Pause made before Start.
//
// Resuming a worker that is not paused does nothing. Resume after Close has
// begun returns an error wrapping ErrClosed.
func (w *Worker) Resume() error {
	if w == nil || w.q == nil {
		return errZeroValue("Worker", "NewWorker")
	}
	w.pauser.mu.Lock()
	if w.closing.Load() {
		w.pauser.mu.Unlock()
		return fmt.Errorf("resume worker for queue %q: %w", w.q.name, ErrClosed)
	}
	changed := w.pauser.resumeLocked()
	w.pauser.mu.Unlock()
	if changed {
		w.log.Info("worker resumed")
		w.checker.wake()
	}
	return nil
}

// IsPaused reports whether Pause was called and Resume not since (BullMQ's
// isPaused). A paused worker may still be finishing jobs: see IsRunning.
func (w *Worker) IsPaused() bool { return w != nil && w.pauser.paused.Load() }

// IsRunning reports whether the worker processes jobs: it was started, and
// it either takes jobs (not paused, not closing) or still runs jobs it
// took. It is false before Start, once a paused or closing worker's last
// job is written, and after Close: BullMQ's isRunning, which is true while
// the worker's main loop runs.
func (w *Worker) IsRunning() bool {
	if w == nil || !w.started.Load() {
		return false
	}
	if !w.closing.Load() && !w.IsPaused() {
		return true
	}
	return w.jobs.count() > 0
}

// interruptWait ends the fetcher's wait for jobs if it waits, so that it
// sees the pause before it takes a marker: on the named connection by
// closing it (the fetcher opens it again), else by a wake-up written to
// Redis (bounded by ctx and wakeTimeout). The fetcher marks its wait
// before it checks for a pause (see waitForWork), so a wait about to begin
// is woken too: the wake-up stays in Redis until the wait reads it.
func (w *Worker) interruptWait(ctx context.Context) {
	if !w.waiting.Load() || w.presence.interrupt() {
		return
	}
	w.wakeWithin(ctx)
}

// parkWhilePaused blocks the fetcher while the worker is paused; false when
// ctx ended first.
func (w *Worker) parkWhilePaused(ctx context.Context) bool {
	for {
		ch := w.pauser.resumed()
		if ch == nil {
			return true
		}
		// Pause closed the named connection to end a wait: open it again
		// now, so getWorkers lists the paused worker, as it lists a paused
		// Node worker.
		w.presence.reopen(ctx)
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
