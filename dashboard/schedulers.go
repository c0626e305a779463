package dashboard

import (
	"net/http"

	"github.com/seed40057009/drover/inspect"
)

// SchedulerList is GET /api/queues/{queue}/schedulers.
type SchedulerList struct {
	Schedulers []inspect.SchedulerInfo `json:"schedulers"`
}

// schedulers lists a queue's job schedulers, soonest next iteration first.
func (h *Handler) schedulers(w http.ResponseWriter, r *http.Request) {
	ss, err := h.ins.Schedulers(r.Context(), r.PathValue("queue"))
	reply(w, SchedulerList{Schedulers: ss}, err)
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
