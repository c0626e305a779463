package dashboard

import (
	"net/http"

	"github.com/seed40057009/drover/inspect"
)

// SchedulerList is GET /api/queues/{queue}/schedulers?offset=N&limit=N: a
// page of the queue's job schedulers (SchedulerPageDefault of them unless
// limit says otherwise, at most 500) and how many there are in all.
type SchedulerList = inspect.SchedulerPage

// SchedulerPageDefault is the page size of GET /api/queues/{queue}/schedulers.
const SchedulerPageDefault = 100

// schedulers lists a page of a queue's job schedulers, soonest next
// iteration first. It listed them all: a queue with a scheduler per tenant
// (20,000) answered 1.7 MB every 5 s and the page drew 20,000 rows, freezing
// the tab for seconds at each refresh.
func (h *Handler) schedulers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, err := queryCount(q, "offset", 0)
	if err != nil {
		writeErr(w, err)
		return
	}
	limit, err := queryCount(q, "limit", SchedulerPageDefault)
	if err != nil {
		writeErr(w, err)
		return
	}
	page, err := h.ins.SchedulersPage(r.Context(), r.PathValue("queue"), offset, min(max(limit, 1), 500))
	reply(w, page, err)
}

// removeScheduler is POST /api/queues/{queue}/schedulers/{scheduler}/remove:
// the scheduler makes no more iterations (operators; audited with the
// scheduler's id in the detail).
func (h *Handler) removeScheduler(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	id := r.PathValue("scheduler")
	e.Detail = "scheduler=" + id
	if err := h.ins.RemoveScheduler(r.Context(), e.Queue, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"removed": id})
	return nil
}
