// Package traffic is what the fault tests run against a queue while they
// break Redis: a producer whose every job keeps its own id and is added
// again until Redis takes it, and a QueueEvents that counts the completed
// events it delivers. Both end with the test.
package traffic

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// Added is a job the producer's add reported created, and when.
type Added struct {
	ID string
	At time.Time
}

// Producer adds job prefix+i ("j0", "j1", ...) every interval from one
// loop; a failed add is made again after retryAfter until it succeeds. The
// id is the job's own, so an add whose reply was lost comes back a
// duplicate the second time, not a second job.
type Producer struct {
	load *testkit.Load
	mu   sync.Mutex
	jobs []Added
	errs []string
}

// Produce starts a Producer on q; it stops at Stop or when the test ends.
func Produce(t testing.TB, q *drover.Queue, prefix string, every, retryAfter time.Duration) *Producer {
	t.Helper()
	p := &Producer{load: testkit.NewLoad()}
	p.load.Every(every, func(i int) {
		id := fmt.Sprintf("%s%d", prefix, i)
		for {
			r, err := q.Add(context.Background(), "job", nil, &drover.JobOptions{JobID: id})
			p.mu.Lock()
			if err == nil {
				if r.Outcome == drover.AddCreated {
					p.jobs = append(p.jobs, Added{ID: id, At: time.Now()})
				}
				p.mu.Unlock()
				return
			}
			p.errs = append(p.errs, err.Error())
			p.mu.Unlock()
			time.Sleep(retryAfter)
		}
	})
	t.Cleanup(p.load.Stop)
	return p
}

// Stop ends the loop after the add under way (and its retries) and waits
// for it.
func (p *Producer) Stop() { p.load.Stop() }

// Added returns the jobs created so far, in the order of their adds.
func (p *Producer) Added() []Added {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.jobs)
}

// Errors returns the errors of the adds made again, in order.
func (p *Producer) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errs)
}

// Completions counts the completed events a QueueEvents delivers, by job
// id.
type Completions struct {
	mu sync.Mutex
	n  map[string]int
}

// CountCompletions runs qe until the test ends, when it checks that Run
// returned nil (as it does when its context ends).
func CountCompletions(t testing.TB, qe *drover.QueueEvents) *Completions {
	t.Helper()
	c := &Completions{n: map[string]int{}}
	ctx, stop := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- qe.Run(ctx, func(e drover.Event) error {
			if e.Name == drover.EventCompleted {
				c.mu.Lock()
				c.n[e.JobID]++
				c.mu.Unlock()
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-runErr, "QueueEvents.Run returns nil when its ctx ends")
	})
	return c
}

// Of is the number of completed events of job id delivered so far.
func (c *Completions) Of(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// Counts returns the number of completed events delivered so far, by job
// id.
func (c *Completions) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// Missing returns the ids among ids with no completed event yet.
func (c *Completions) Missing(ids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range ids {
		if c.n[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}
