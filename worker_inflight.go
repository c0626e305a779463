package drover

import (
	"context"
	"sync"
	"time"
)

// inflight owns a worker's in-flight jobs: its Concurrency slots, the set of
// jobs that run or wait for their result to be written, and the count Close
// drains. The fetcher, the job goroutines (also while they write results)
// and the lock keeper all reach these only through its methods.
//
// A slot is taken before the script call that may activate a job for it, so
// Redis never hands the worker more jobs than it has room for. A job counts
// from start until finish: while it runs and while its result waits to be
// written, so the lock keeper renews its lock all that time.
//
// The rule that keeps Close correct: drain returns only once no job runs and
// none will be started. finish takes the jobs fetched by the same script
// call that wrote the results (next) and starts them before it counts the
// finished jobs out, in one critical section, so the count never passes
// through zero while a hand-over is under way. The fetcher starts jobs only
// until Close stops it, and Close stops it before it drains.
type inflight struct {
	slots chan struct{} // one element per taken slot; capacity = Concurrency

	mu   sync.Mutex
	jobs map[*runningJob]struct{} // started and not finished
	idle chan struct{}            // non-nil while drain waits; closed when jobs empties
	// early holds the cancel requests whose token no job in flight has, by
	// token: the fetch that locked the job has run in Redis (so CancelJob
	// found the lock and published) but its reply has not reached the
	// worker. finish stops such a job as it starts it. A request for an
	// attempt that already ended lands here too and no job ever takes its
	// token (each fetch call's tokens are new), so entries older than
	// earlyTTL, the lock duration (a job not started by then has lost its
	// lock), are dropped, and at most maxEarly are kept.
	early    map[string]earlyStop
	earlyTTL time.Duration
}

// earlyStop is a cancel request kept for a job not yet started.
type earlyStop struct {
	e  *stopError
	at time.Time
}

// maxEarly bounds inflight.early.
const maxEarly = 1024

func newInflight(concurrency int, earlyTTL time.Duration) *inflight {
	return &inflight{
		slots:    make(chan struct{}, concurrency),
		jobs:     make(map[*runningJob]struct{}),
		early:    make(map[string]earlyStop),
		earlyTTL: earlyTTL,
	}
}

// stopByToken stops the attempt in flight whose lock token is token with e,
// or, when none is in flight, keeps e for the job that starts with that
// token (see early). It returns the job found (nil when e was kept) and
// whether e ended its attempt.
func (f *inflight) stopByToken(token string, e *stopError, now time.Time) (*Job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for rj := range f.jobs {
		if rj.token == token {
			return rj.job, rj.stop(e)
		}
	}
	if len(f.early) >= maxEarly {
		for t, k := range f.early {
			if now.Sub(k.at) > f.earlyTTL {
				delete(f.early, t)
			}
		}
	}
	if len(f.early) < maxEarly {
		f.early[token] = earlyStop{e: e, at: now}
	}
	return nil, false
}

// stopRunning stops the attempt in flight whose lock token is token with
// e, if there is one and nothing stopped it before. Unlike stopByToken it
// keeps nothing for a job not started.
func (f *inflight) stopRunning(token string, e *stopError) (*Job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for rj := range f.jobs {
		if rj.token == token {
			return rj.job, rj.stop(e)
		}
	}
	return nil, false
}

// take takes up to n free slots without blocking and returns how many.
func (f *inflight) take(n int) int {
	got := 0
	for got < n {
		select {
		case f.slots <- struct{}{}:
			got++
		default:
			return got
		}
	}
	return got
}

// takeWait waits until a slot is free, then takes up to n slots (at least
// one). It returns 0 only when ctx ends first.
func (f *inflight) takeWait(ctx context.Context, n int) int {
	select {
	case f.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	return 1 + f.take(n-1)
}

// giveBack frees n taken slots that got no job.
func (f *inflight) giveBack(n int) {
	for range n {
		<-f.slots
	}
}

// start starts next in taken slots, of which it was given reserved; the
// slots next does not use are freed.
func (f *inflight) start(reserved int, next []*runningJob) {
	f.finish(nil, reserved, next)
}

// finish counts done out. Their slots, and reserved more taken slots, go to
// next: the jobs the same script call fetched, which start first (see the
// rule above). Slots next does not use are freed.
func (f *inflight) finish(done []*runningJob, reserved int, next []*runningJob) {
	if len(next) > len(done)+reserved {
		panic("drover: inflight.finish: more jobs than slots")
	}
	f.mu.Lock()
	for _, rj := range next {
		f.jobs[rj] = struct{}{}
		if len(f.early) > 0 {
			if k, ok := f.early[rj.token]; ok {
				delete(f.early, rj.token)
				rj.stop(k.e)
			}
		}
	}
	for _, rj := range done {
		delete(f.jobs, rj)
	}
	if len(f.jobs) == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
	f.giveBack(len(done) + reserved - len(next))
}

// drain waits until no job is in flight, or until ctx ends; it reports
// whether the jobs drained.
func (f *inflight) drain(ctx context.Context) bool {
	f.mu.Lock()
	if len(f.jobs) == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// count is the number of jobs in flight.
func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}

// anyRunning reports whether a job in flight has not settled: its
// processor runs (or it is about to start).
func (f *inflight) anyRunning() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for rj := range f.jobs {
		if !rj.settled.Load() {
			return true
		}
	}
	return false
}

// snapshot lists the jobs in flight, in no particular order.
func (f *inflight) snapshot() []*runningJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*runningJob, 0, len(f.jobs))
	for rj := range f.jobs {
		out = append(out, rj)
	}
	return out
}

// whileInFlight calls fn for each of rjs that is still in flight, holding
// the lock, so none of them finishes during fn. fn must not call f.
func (f *inflight) whileInFlight(rjs []*runningJob, fn func(rj *runningJob)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rj := range rjs {
		if _, ok := f.jobs[rj]; ok {
			fn(rj)
		}
	}
}
