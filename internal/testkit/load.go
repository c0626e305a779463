package testkit

import (
	"sync"
	"time"
)

// Load is the producers of a fault test: loops that each call their func
// with 0, 1, 2... once per interval while the test breaks things, until
// Stop. Each loop is a goroutine of the Load's, and Stop waits for them.
type Load struct {
	stop    chan struct{}
	stopped sync.Once
	loops   sync.WaitGroup
}

// NewLoad returns a Load with no loop yet.
func NewLoad() *Load { return &Load{stop: make(chan struct{})} }

// Every starts a loop calling fn(i) for i = 0, 1, 2... one interval apart
// (counted from the end of the previous call) until Stop.
func (l *Load) Every(interval time.Duration, fn func(i int)) {
	l.loops.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(interval):
			}
			fn(i)
		}
	})
}

// Stop ends every loop and waits for the calls under way to return.
func (l *Load) Stop() {
	l.stopped.Do(func() { close(l.stop) })
	l.loops.Wait()
}

// Runs counts how many times each job ran, from processors on many
// goroutines: what a fault test checks for "every job ran exactly once".
type Runs struct {
	mu sync.Mutex
	n  map[string]int
}

// Ran counts one run of the job named id.
func (r *Runs) Ran(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[id]++
}

// Counts is a copy of the counts so far, by job.
func (r *Runs) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.n))
	for id, n := range r.n {
		out[id] = n
	}
	return out
}
