package drover

// Job goroutines outlive their job: a goroutine with nothing to run waits
// for the next job the worker starts, instead of exiting.

import (
	"cmp"
	"sync"
	"time"
)

// runnerKeep is how long a job goroutine with nothing to run is kept for a
// next job (tests set runners.keepFor instead); older ones are stopped
// when the fetcher finds the queue empty.
const runnerKeep = 10 * time.Second

// maxKeptRunners bounds the job goroutines kept at once: enough for every
// job of a busy worker at the usual concurrencies, while a worker at
// concurrency 10,000 does not hold 10,000 stacks once its jobs are done.
const maxKeptRunners = 1000

// runners owns a worker's job goroutines that have no job. A processor
// that needs a deep stack (encoding/json does) grows its goroutine's stack
// by copying it; a new goroutine per job paid that copy on every job (at
// concurrency 100 with a json.Unmarshal processor, a third of the worker's
// CPU went to runtime.copystack). A kept goroutine pays it once, until the
// garbage collector shrinks its stack while it waits.
//
// A goroutine is made only when none is kept, so there are about
// Concurrency of them (plus the maxWriters carrying results, and now and
// then one made while another was on its way back to the kept ones), and at
// most maxKeptRunners of them wait. The most recently kept runs the next
// job (its stack is the likeliest to be grown); the longest kept are the
// ones reaped. Close stops the kept ones and waits for every job goroutine
// to return.
type runners struct {
	mu      sync.Mutex
	idle    []*runner // kept, oldest first
	stopped bool
	wg      sync.WaitGroup // every job goroutine, running or kept
	keepFor time.Duration  // 0: runnerKeep
}

// runner is one kept job goroutine's mailbox.
type runner struct {
	next   chan *runningJob // capacity 1; closed to stop the goroutine
	keptAt time.Time        // when it last ran out of jobs
}

// launch runs each job on a kept goroutine, or on a new one when none is
// kept. inflight has started the jobs.
func (w *Worker) launch(jobs []*runningJob) {
	for _, rj := range jobs {
		if r := w.runners.take(); r != nil {
			r.next <- rj
			continue
		}
		w.runners.wg.Add(1)
		go w.runJobs(rj)
	}
}

// runJobs is a job goroutine: it runs rj, then the job the write of its
// result hands back, if any (a goroutine that carried results to Redis goes
// on with a job that call fetched), then waits to be handed the next job,
// until the worker stops it. A job stays in flight until its result is
// written. No defer, and the attempt in three calls, to keep the frames
// under the processor small (see begin).
func (w *Worker) runJobs(rj *runningJob) {
	var r *runner // made once the goroutine first waits
	for rj != nil {
		var next *runningJob
		if timer, refused := w.begin(rj); refused != nil {
			next = w.settle(rj, nil, refused, time.Since(rj.began))
		} else {
			result, err := w.call(rj)
			next = w.end(rj, timer, result, err)
		}
		rj.cancel(nil)
		if rj = next; rj != nil {
			continue
		}
		if r == nil {
			r = &runner{next: make(chan *runningJob, 1)}
		}
		if !w.runners.keep(r) {
			break
		}
		rj = <-r.next // nil once stopped
	}
	w.runners.wg.Done()
}

// take hands out the most recently kept goroutine, or nil.
func (p *runners) take() *runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	r := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return r
}

// keep adds r to the kept goroutines; false: the worker is stopping, r's
// goroutine returns.
func (p *runners) keep(r *runner) bool {
	r.keptAt = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || len(p.idle) >= maxKeptRunners {
		return false
	}
	p.idle = append(p.idle, r)
	return true
}

// reap stops the goroutines kept longer than keepFor.
func (p *runners) reap() {
	cutoff := time.Now().Add(-cmp.Or(p.keepFor, runnerKeep))
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.idle) && p.idle[n].keptAt.Before(cutoff) {
		close(p.idle[n].next)
		p.idle[n] = nil
		n++
	}
	if n > 0 {
		p.idle = append(p.idle[:0], p.idle[n:]...)
	}
}

// stop stops every kept goroutine and waits until every job goroutine has
// returned. Close calls it once no job is in flight and none will start.
func (p *runners) stop() {
	p.mu.Lock()
	p.stopped = true
	for i, r := range p.idle {
		close(r.next)
		p.idle[i] = nil
	}
	p.idle = nil
	p.mu.Unlock()
	p.wg.Wait()
}
