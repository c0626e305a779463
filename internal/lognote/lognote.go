// Package lognote holds back the repeats of a log line that an outage
// makes many times a second: while Redis does not answer, every fetch,
// lock renewal, result write and add retry fails, and a worker at
// concurrency 100 would write thousands of identical warnings that bury the
// first one. The first line of a message is written at once; repeats within
// the window are counted, and the next line written after the window
// carries how many were held back (logkey.Suppressed).
package lognote

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/seed40057009/drover/internal/logkey"
)

// Window is how long repeats of one message are held back after a line of
// it is written.
const Window = 5 * time.Second

// Limiter decides, per message, which lines are written. It is shared by
// every handler derived from one NewHandler (WithAttrs, WithGroup), so a
// worker's components that log through loggers made with With share it.
type Limiter struct {
	window time.Duration
	now    func() time.Time
	only   map[string]bool

	mu    sync.Mutex
	notes map[string]*note
}

type note struct {
	written time.Time
	held    int
}

// NewLimiter limits the given messages (and no others) to one line per
// window; now is the clock (nil: time.Now).
func NewLimiter(window time.Duration, now func() time.Time, messages ...string) *Limiter {
	if now == nil {
		now = time.Now
	}
	only := make(map[string]bool, len(messages))
	for _, m := range messages {
		only[m] = true
	}
	return &Limiter{window: window, now: now, only: only, notes: map[string]*note{}}
}

// Allow reports whether a line of msg is written now and, if so, how many
// lines of it were held back since the last one written.
func (l *Limiter) Allow(msg string) (ok bool, held int) {
	if !l.only[msg] {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	n := l.notes[msg]
	if n == nil {
		l.notes[msg] = &note{written: now}
		return true, 0
	}
	if now.Sub(n.written) < l.window {
		n.held++
		return false, 0
	}
	held, n.held, n.written = n.held, 0, now
	return true, held
}

// handler is a slog.Handler that passes records through its Limiter.
type handler struct {
	next slog.Handler
	lim  *Limiter
}

// NewHandler returns a handler that writes to next what lim allows, adding
// logkey.Suppressed to a line written after held-back repeats.
func NewHandler(next slog.Handler, lim *Limiter) slog.Handler {
	return &handler{next: next, lim: lim}
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	ok, held := h.lim.Allow(r.Message)
	if !ok {
		return nil
	}
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int(logkey.Suppressed, held))
	}
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{next: h.next.WithAttrs(attrs), lim: h.lim}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), lim: h.lim}
}
