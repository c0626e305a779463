package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// Event is one live update, as GET /api/queues/{queue}/events streams it
// (server-sent events; each event's id resumes the stream via Last-Event-ID):
// inspect's event, with the names `drover watch --json` prints too.
type Event = inspect.Event

// streamWriteTimeout bounds writing one live-update event.
const streamWriteTimeout = 30 * time.Second

// events streams a queue's events stream to the browser.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	select {
	case h.streams <- struct{}{}:
		defer func() { <-h.streams }()
	default:
		writeError(w, http.StatusServiceUnavailable, "too many live-update streams open; the page will poll instead")
		return
	}
	rc := http.NewResponseController(w)
	// A stream outlives the server's write timeout; each event gets its own
	// (a reader that stops reading loses the stream and its slot).
	_ = rc.SetWriteDeadline(time.Time{})
	last := r.Header.Get("Last-Event-ID")
	qe, err := h.streamIns.Events(r.Context(), r.PathValue("queue"), last)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Tell the browser to reconnect after 2s and that the stream is open.
	if _, err := fmt.Fprint(w, "retry: 2000\n: open\n\n"); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	_ = qe.Run(ctx, func(ev drover.Event) error {
		b, err := json.Marshal(inspect.EventOf(r.PathValue("queue"), ev))
		if err != nil {
			return err
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		// JSON has no raw newlines, so one data line carries the event.
		if _, err := fmt.Fprintf(w, "id: %s\nevent: job\ndata: %s\n\n", ev.ID, b); err != nil {
			return err
		}
		return rc.Flush()
	})
}
