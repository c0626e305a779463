package inspect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/seed40057009/drover"
)

// conflictsKept bounds the conflicted retries an Inspector remembers.
const conflictsKept = 200

// Conflict is a retry refused because a worker still held the job's lock
// (drover.ErrJobLocked). A worker that holds locks of finished jobs, or holds
// them for long, shows up here again and again.
type Conflict struct {
	Time  Instant `json:"time"`
	Queue string  `json:"queue"`
	JobID string  `json:"jobId"`
	// Op is retry (one job) or bulk-retry.
	Op string `json:"op"`
	// Worker is the lock holder: drover's lock tokens start with the
	// worker's id ("<worker id>:<attempt>"), BullMQ's are uuids.
	Worker string `json:"worker"`
	// LockTTL is how long the lock had left (ms in JSON).
	LockTTL time.Duration `json:"-"`
	// HeldFor is how long the job had been running when the retry came:
	// since it last started (ms in JSON; 0 when unknown).
	HeldFor time.Duration `json:"-"`
}

// noteConflict records a retry of job id refused with drover.ErrJobLocked.
func (i *Inspector) noteConflict(ctx context.Context, q *drover.Queue, id, op string, err error) {
	if !errors.Is(err, drover.ErrJobLocked) {
		return
	}
	c := Conflict{Time: Instant{i.now(ctx)}, Queue: q.Name(), JobID: id, Op: op}
	if locks, lerr := i.locks(ctx, q.Name(), []string{id}); lerr == nil && locks[id] != nil {
		c.LockTTL = locks[id].TTL
		c.Worker = locks[id].Token
		if w, _, ok := strings.Cut(c.Worker, ":"); ok {
			c.Worker = w
		}
	}
	if jobs, jerr := q.GetJobsByID(ctx, []string{id}); jerr == nil && len(jobs) == 1 && !jobs[0].ProcessedOn.IsZero() {
		c.HeldFor = c.Time.Sub(jobs[0].ProcessedOn)
		if jobs[0].ProcessedBy != "" && c.Worker == "" {
			c.Worker = jobs[0].ProcessedBy
		}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.conflicts = append(i.conflicts, c)
	if len(i.conflicts) > conflictsKept {
		i.conflicts = slices.Delete(i.conflicts, 0, len(i.conflicts)-conflictsKept)
	}
}

// Conflicts lists the conflicted retries this Inspector saw on queue ("" =
// every queue), newest first.
func (i *Inspector) Conflicts(queue string) []Conflict {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := []Conflict{}
	for k := len(i.conflicts) - 1; k >= 0; k-- {
		if queue == "" || i.conflicts[k].Queue == queue {
			out = append(out, i.conflicts[k])
		}
	}
	return out
}
