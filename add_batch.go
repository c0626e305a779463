package drover

import (
	"context"
	"slices"
	"sync"

	"github.com/seed40057009/drover/internal/scripts"
)

// addBatcher combines single adds made at the same time from several
// goroutines into one addJobs call ("group commit"). Up to addLeaders
// callers at a time are leaders: each sends everything pending as one batch.
// Adds that arrive while every leader is busy wait; when a leader's own add
// is done it hands the lead to the oldest waiting add, whose caller sends the
// next batch. No
// goroutine is started, and no caller works for others for longer than its
// own batch.
// Each job is still added exactly as on its own (one script, in arrival
// order); only the round trip and the script's fixed cost are shared.
type addBatcher struct {
	mu      sync.Mutex
	pending []*addRequest
	leaders int
}

// addLeaders bounds the add batches in flight at once. Each batch pays the
// script's fixed cost (16 keys, the call token, the meta read, the marker),
// and more leaders split the same callers into smaller batches; fewer leave
// Redis idle while the client turns a reply around. In bench-compare's
// add_single (8 producers, one client, 50,000 adds, 2-core VM, same
// minutes, 6 runs each): 1 leader 30.5k adds/s at 17.5 us of Redis CPU
// per add (medians), 2 leaders 34.0k at 19.5 us, 4 leaders 36.5k at 20.6
// us. Two keep most of the overlap for a tenth more Redis CPU; under
// saturation batches grow on their own, so the fixed cost still spreads.
// (An earlier run at load 11 had favoured 1: 27-31k against 21-27k.)
const addLeaders = 2

type addRequest struct {
	rec  scripts.AddRecord
	out  scripts.AddOutcome
	err  error
	done chan struct{} // closed when out/err are set
	lead chan struct{} // closed when this caller becomes the leader
}

// add adds rec, sharing the script call with concurrent adds.
func (b *addBatcher) add(ctx context.Context, q *Queue, rec scripts.AddRecord) (scripts.AddOutcome, error) {
	req := &addRequest{rec: rec, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	if b.leaders >= addLeaders {
		b.pending = append(b.pending, req)
		b.mu.Unlock()
		select {
		case <-req.done:
			return req.out, req.err
		case <-req.lead:
		case <-ctx.Done():
			b.mu.Lock()
			if i := slices.Index(b.pending, req); i >= 0 {
				b.pending = slices.Delete(b.pending, i, i+1)
				b.mu.Unlock()
				return scripts.AddOutcome{}, ctx.Err()
			}
			b.mu.Unlock()
			select {
			case <-req.done:
				// In a batch already sent: it may or may not have been added,
				// as with any write whose caller gave up.
				return scripts.AddOutcome{}, ctx.Err()
			case <-req.lead:
				// Handed the lead: the others rely on it being run.
			}
		}
		// Promoted: the previous leader counted this caller as a leader.
		b.mu.Lock()
	} else {
		b.leaders++
	}
	// Leader: send this add with whatever is pending, then pass the lead on.
	n := min(len(b.pending), q.opts.AddBulkChunk-1)
	batch := make([]*addRequest, 0, n+1)
	batch = append(append(batch, req), b.pending[:n]...)
	b.pending = b.pending[n:]
	b.mu.Unlock()
	b.run(ctx, q, batch)
	b.mu.Lock()
	if len(b.pending) > 0 {
		next := b.pending[0]
		b.pending = b.pending[1:]
		close(next.lead)
	} else {
		b.leaders--
	}
	b.mu.Unlock()
	return req.out, req.err
}

// run sends one batch. Other callers' jobs ride along, so a send must not
// fail because this caller's ctx ends: it is detached from cancellation
// (the client's own timeouts still bound it). The leader's ctx only stops
// further resends after a lost answer (see Queue.addJobs).
func (b *addBatcher) run(ctx context.Context, q *Queue, batch []*addRequest) {
	recs := make([]scripts.AddRecord, len(batch))
	for i, r := range batch {
		recs[i] = r.rec
	}
	outcomes, err := q.addJobs(context.WithoutCancel(ctx), ctx, recs)
	for i, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.out = outcomes[i]
		}
		close(r.done)
	}
}
