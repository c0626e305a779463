package drover

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/scripts"
)

// addBatcher combines single adds made at the same time from several
// goroutines into one addJobs call ("group commit"). Up to addLeaders
// callers at a time are leaders: each sends everything pending as one batch.
// Adds that arrive while every leader is busy wait; when a leader's own add
// is done it hands the lead to the oldest waiting add, whose caller sends the
// next batch. Under a context that cannot end no goroutine is started; under
// one that can, each batch is sent from a goroutine of its own, so every
// caller returns when its ctx ends (see lead). No caller works for others
// for longer than its own batch.
// Each job is still added exactly as on its own (one script, in arrival
// order); only the round trip and the script's fixed cost are shared.
type addBatcher struct {
	mu      sync.Mutex
	pending []*addRequest
	leaders int
}

// addLeaders bounds the add batches in flight at once. Each batch pays the
// script's fixed cost (the call token, the meta read, the marker),
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

// add adds rec, sharing the script call with concurrent adds. It returns
// when ctx ends, even while Redis does not answer (see wait); an add that
// was not sent yet then leaves the queue, so its error means not stored.
func (b *addBatcher) add(ctx context.Context, q *Queue, rec scripts.AddRecord) (scripts.AddOutcome, error) {
	if err := ctx.Err(); err != nil {
		// Ended before the call: nothing is sent (a batch's send is
		// detached from its leader's ctx, so it would be stored).
		return scripts.AddOutcome{}, err
	}
	req := &addRequest{rec: rec, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	if b.leaders < addLeaders {
		b.leaders++
		b.lead(ctx, q, req)
		return b.wait(ctx, req)
	}
	b.pending = append(b.pending, req)
	b.mu.Unlock()
	select {
	case <-req.done:
		return req.out, req.err
	case <-req.lead:
		// Promoted: the previous leader counted this caller as a leader.
		b.mu.Lock()
		b.lead(ctx, q, req)
		return b.wait(ctx, req)
	case <-ctx.Done():
	}
	b.mu.Lock()
	if i := slices.Index(b.pending, req); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
		b.mu.Unlock()
		return scripts.AddOutcome{}, ctx.Err()
	}
	select {
	case <-req.lead:
		// Handed the lead as ctx ended: the others rely on a batch being
		// sent, this add need not be in it.
		b.lead(ctx, q, nil)
		return scripts.AddOutcome{}, ctx.Err()
	default:
	}
	b.mu.Unlock()
	// In a batch already sent.
	return b.wait(ctx, req)
}

// lead sends own (nil: none) with what is pending as one batch, then passes
// the lead on. b.mu is held and lead unlocks it. Under a ctx that can end,
// the batch is sent from a goroutine of its own (one per batch, not per
// add) so that the caller can stop waiting for it; under one that cannot
// (context.Background), from the caller's, at no extra cost.
func (b *addBatcher) lead(ctx context.Context, q *Queue, own *addRequest) {
	room := q.opts.AddBulkChunk
	if own != nil {
		room--
	}
	n := min(len(b.pending), room)
	batch := make([]*addRequest, 0, n+1)
	if own != nil {
		batch = append(batch, own)
	}
	batch = append(batch, b.pending[:n]...)
	b.pending = b.pending[n:]
	b.mu.Unlock()
	inline := !bounded.Needed(ctx, q.callBudget)
	// woke: run wakes a goroutine other than this one. A lone producer's
	// batch is its own add, sent from its own goroutine (inline): nobody
	// can queue meanwhile, and a yield would only cost a trip through the
	// scheduler (a fifth of a lone producer's CPU per add).
	woke := len(batch) > 1 || (len(batch) == 1 && !(inline && own != nil))
	send := func(ctx context.Context) {
		if len(batch) > 0 {
			b.run(ctx, q, batch)
		}
		if woke {
			// run woke this batch's callers; most add again at once. Let
			// them queue before the lead passes on, so the next batch
			// takes them all rather than whoever was pending already
			// (add_single, 8 producers: 3.8 adds a batch instead of 2.8,
			// Redis CPU per add 17.2 us instead of 21, 39.8k adds/s
			// instead of 34k; 4 alternating runs each).
			runtime.Gosched()
		}
		b.mu.Lock()
		if len(b.pending) > 0 {
			next := b.pending[0]
			b.pending = b.pending[1:]
			close(next.lead)
		} else {
			b.leaders--
		}
		b.mu.Unlock()
	}
	switch {
	case inline:
		// The client's timeouts end the send before ctx's deadline would
		// (or ctx has none): sent here, with no goroutine to hand over to.
		send(ctx)
	case own == nil:
		// The caller has left: the others' resends are not bound to its ctx.
		go send(context.WithoutCancel(ctx))
	default:
		go send(ctx)
	}
}

// wait is req's outcome, or, as soon as ctx ends first, ErrAddInDoubt: the
// batch was sent and has no answer yet (Redis may be paused: go-redis
// waits out its own read timeout, whatever ctx says).
func (b *addBatcher) wait(ctx context.Context, req *addRequest) (scripts.AddOutcome, error) {
	select {
	case <-req.done:
		return req.out, req.err
	case <-ctx.Done():
		select {
		case <-req.done: // answered meanwhile: its answer is better
			return req.out, req.err
		default:
		}
		return scripts.AddOutcome{}, fmt.Errorf("%w: %w", ErrAddInDoubt, bounded.Abandoned(ctx))
	}
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
