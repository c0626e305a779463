package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// Event is one live update, as GET /api/queues/{queue}/events streams it
// (server-sent events named "job"; each event's id resumes the stream via
// Last-Event-ID or ?after=, and a first "position" event names where the
// stream starts):
// inspect's event, with the names `drover watch --json` prints too.
type Event = inspect.Event

// streamWriteTimeout bounds writing one live-update event.
const streamWriteTimeout = 30 * time.Second

// streamSessionCheck is how often, at most, a live-update stream opened
// with a session checks, before sending an event, that the session still
// signs its user in.
const streamSessionCheck = time.Second

// errStreamSignedOut ends a live-update stream whose session ended.
var errStreamSignedOut = errors.New("the stream's session ended")

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
	// Where to resume: the browser's own reconnect sends Last-Event-ID; a
	// page that opens a new stream after the browser gave up (an error
	// answer while Redis was down) passes the last id it saw as ?after=,
	// so the events written meanwhile are not lost.
	// Both come when the browser reconnects by itself a stream the page
	// opened with ?after=: its Last-Event-ID is the newer (the last event
	// it saw), and resuming at ?after sent the events in between again.
	last := ""
	for _, c := range []struct{ from, id string }{{"after", r.URL.Query().Get("after")}, {"Last-Event-ID", r.Header.Get("Last-Event-ID")}} {
		if c.id == "" {
			continue
		}
		if !validStreamID(c.id) {
			writeError(w, http.StatusBadRequest, c.from+" must be an event id (<ms>-<seq>), got "+strconv.Quote(c.id))
			return
		}
		if last == "" || streamIDLess(last, c.id) {
			last = c.id
		}
	}
	qe, err := h.streamIns.Events(r.Context(), r.PathValue("queue"), last)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Tell the browser to reconnect after 2s and that the stream is open,
	// and name the position it starts from (a "position" event, whose id
	// the browser keeps and whose data the page reads): a stream dropped
	// or refused before its first job event then resumes there too, not
	// at the events written after the reconnect.
	pos := qe.LastID()
	if _, err := fmt.Fprintf(w, "retry: 2000\n: open\nid: %s\nevent: position\ndata: %s\n\n", pos, pos); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	// A stream opened with a session ends with it: signed out, revoked
	// (an admin's "Sign out everyone"), expired. It went on sending every
	// job event for as long as its connection stayed open.
	var session string
	if p := principalOf(ctx); p.Via == "session" {
		if c, err := r.Cookie(sessionCookie); err == nil {
			session = c.Value
		}
	}
	checked := time.Now()
	_ = qe.Run(ctx, func(ev drover.Event) error {
		if session != "" && time.Since(checked) >= streamSessionCheck {
			if _, ok, err := h.sessionPrincipal(ctx, session); err != nil || !ok {
				return errStreamSignedOut // the browser's reconnect signs in again, or is refused
			}
			checked = time.Now()
		}
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

// streamIDLess reports whether stream id a (valid, <ms>-<seq>) comes before b.
func streamIDLess(a, b string) bool {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	ams, _ := strconv.ParseUint(am, 10, 64)
	bms, _ := strconv.ParseUint(bm, 10, 64)
	if ams != bms {
		return ams < bms
	}
	aseq, _ := strconv.ParseUint(as, 10, 64)
	bseq, _ := strconv.ParseUint(bs, 10, 64)
	return aseq < bseq
}
