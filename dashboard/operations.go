package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/seed40057009/drover/inspect"
)

// A bulk retry can move thousands of jobs in paced chunks: it runs as a
// background operation, not inside the request that asked for it. The
// request answers at once with the operation; the UI polls
// GET /api/operations/{id} for its progress and may cancel it. Starting,
// cancelling and finishing are each audited.

// OperationStatus is where an operation stands.
type OperationStatus string

// Operation statuses.
const (
	OperationRunning   OperationStatus = "running"
	OperationDone      OperationStatus = "done"
	OperationCancelled OperationStatus = "cancelled"
	OperationFailed    OperationStatus = "failed"
)

// operationsKept is how many finished operations GET /api/operations lists.
const operationsKept = 50

// Operation is a background bulk action, as GET /api/operations/{id}
// shows it.
type Operation struct {
	ID     string          `json:"id"`
	Kind   string          `json:"kind"` // retry-jobs
	Queue  string          `json:"queue"`
	User   string          `json:"user"`
	Detail string          `json:"detail"`
	Status OperationStatus `json:"status"`
	// Done counts the jobs handled so far (retried or skipped) of Total.
	Done    int `json:"done"`
	Total   int `json:"total"`
	Retried int `json:"retried"`
	Skipped int `json:"skipped"`
	// Conflicts counts the skipped jobs a worker held (see GET
	// /api/queues/{queue}/conflicts); Skips names up to
	// inspect.RetrySkipsMax skipped jobs with why, once it has ended.
	Conflicts int                  `json:"conflicts"`
	Skips     []inspect.SkippedJob `json:"skips,omitempty"`
	Started   time.Time            `json:"started"`
	Ended     time.Time            `json:"ended,omitzero"`
	Error     string               `json:"error,omitempty"`
}

type operation struct {
	Operation
	cancel context.CancelFunc
	audit  AuditEntry // the starting request's entry, for the finish entry
	// cancelAudited is the audited channel of the request that cancelled
	// the operation: its end entry waits for that request's entry too.
	cancelAudited chan struct{}
	// ids names the first jobs it selected, for its end entry.
	ids []string
}

// operations owns the background operations of a Handler: it starts each
// one's goroutine, tracks it, and Close cancels and waits for them.
type operations struct {
	mu     sync.Mutex
	seq    int
	list   []*operation // oldest first
	wg     sync.WaitGroup
	base   context.Context
	stop   context.CancelFunc
	closed bool
}

func newOperations() *operations {
	base, stop := context.WithCancel(context.Background())
	return &operations{base: base, stop: stop}
}

// start runs fn in the background as a new operation. fn reports progress
// through its progress func; its result fills the operation's counts.
func (o *operations) start(op Operation, entry AuditEntry, finish func(op Operation, ids []string),
	fn func(ctx context.Context, progress func(done, total int)) (*inspect.RetryResult, error),
) (Operation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return Operation{}, fmt.Errorf("the dashboard is shutting down")
	}
	o.seq++
	op.ID = strconv.Itoa(o.seq)
	op.Status = OperationRunning
	ctx, cancel := context.WithCancel(o.base)
	rec := &operation{Operation: op, cancel: cancel, audit: entry}
	o.list = append(o.list, rec)
	if len(o.list) > operationsKept {
		for k, old := range o.list {
			if old.Status != OperationRunning {
				o.list = append(o.list[:k], o.list[k+1:]...)
				break
			}
		}
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer cancel()
		res, err := fn(ctx, func(done, total int) {
			o.mu.Lock()
			rec.Done, rec.Total = done, total
			o.mu.Unlock()
		})
		o.mu.Lock()
		if res != nil {
			rec.Retried, rec.Skipped, rec.Conflicts, rec.Skips = res.Retried, res.Skipped, res.Conflicts, res.Skips
			rec.Done = max(rec.Done, res.Retried+res.Skipped)
			rec.Total = max(rec.Total, res.Matched)
			rec.ids = auditIDs(res.IDs)
		}
		rec.Ended = time.Now()
		switch {
		case err == nil:
			rec.Status = OperationDone
		case ctx.Err() != nil:
			rec.Status, rec.Error = OperationCancelled, "cancelled"
		default:
			rec.Status, rec.Error = OperationFailed, err.Error()
		}
		snap, cancelAudited, ids := rec.Operation, rec.cancelAudited, rec.ids
		o.mu.Unlock()
		if cancelAudited != nil && ctx.Err() != nil {
			select { // the cancel request's entry first
			case <-cancelAudited:
			case <-time.After(requestAuditWait):
			}
		}
		finish(snap, ids)
	}()
	return rec.Operation, nil
}

func (o *operations) get(id string) (*operation, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, op := range o.list {
		if op.ID == id {
			return op, true
		}
	}
	return nil, false
}

func (o *operations) snapshot(op *operation) Operation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return op.Operation
}

// all lists the operations, newest first.
func (o *operations) all() []Operation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Operation, 0, len(o.list))
	for k := len(o.list) - 1; k >= 0; k-- {
		out = append(out, o.list[k].Operation)
	}
	return out
}

// close cancels the running operations and waits for them until ctx ends.
func (o *operations) close(ctx context.Context) error {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.stop()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dashboard: background operations still running: %w", ctx.Err())
	}
}

// Close cancels the handler's background operations (bulk retries) and
// waits for them to stop until ctx ends, and closes the Redis client New
// opened for live-update streams (Options.StreamClient). Server.Close calls
// it; call it when you mount the Handler yourself.
func (h *Handler) Close(ctx context.Context) error {
	err := h.ops.close(ctx)
	if serr := h.closeStreams(); err == nil {
		err = serr
	}
	return err
}

func (h *Handler) listOperations(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"operations": h.ops.all()})
}

func (h *Handler) getOperation(w http.ResponseWriter, r *http.Request) {
	op, ok := h.ops.get(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "no such operation: "+r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, h.ops.snapshot(op))
}

func (h *Handler) cancelOperation(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	op, ok := h.ops.get(r.PathValue("id"))
	if !ok {
		return &httpError{status: http.StatusNotFound, msg: "no such operation: " + r.PathValue("id")}
	}
	snap := h.ops.snapshot(op)
	e.Queue = snap.Queue
	e.Detail = fmt.Sprintf("operation=%s kind=%s done=%d/%d", snap.ID, snap.Kind, snap.Done, snap.Total)
	if snap.Status != OperationRunning {
		// Nothing to stop: a 200 (and an "ok" cancel in the audit log)
		// claimed a cancel of an operation that had already ended.
		return &httpError{status: http.StatusConflict, msg: fmt.Sprintf("operation %s has already ended (%s): nothing to cancel", snap.ID, snap.Status)}
	}
	e.audited = make(chan struct{}) // closed by act's record of e
	h.ops.mu.Lock()
	if op.cancelAudited == nil {
		op.cancelAudited = e.audited
	}
	h.ops.mu.Unlock()
	op.cancel()
	writeJSON(w, http.StatusOK, snap)
	return nil
}
