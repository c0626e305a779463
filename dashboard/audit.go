package dashboard

import (
	"context"
	"log/slog"
	"time"

	"github.com/seed40057009/drover/internal/logkey"
)

// AuditEntry records one mutating request: who asked for what, when, on how
// many jobs, and what came of it. Refused requests are recorded too.
type AuditEntry struct {
	// ID is the entry's id in its log (GET /api/audit pages by it).
	ID string `json:"id,omitempty"`
	// Log is AuditActions (what signed-in users did or tried) or
	// AuditSecurity (sign-ins, requests without valid credentials,
	// throttling).
	Log  string    `json:"log"`
	Time time.Time `json:"time"`
	// User and Role are who asked; Via is how they signed in (anonymous,
	// token, basic, session, or "" when they could not sign in).
	User string `json:"user"`
	Role Role   `json:"role,omitempty"`
	Via  string `json:"via,omitempty"`
	// Action names the request: retry-job, retry-jobs, promote-job,
	// promote-all, remove-job, pause, resume, clean, obliterate,
	// revoke-sessions; in the security log also login, logout and sign-in
	// (credentials sent with a request).
	Action string `json:"action"`
	Queue  string `json:"queue,omitempty"`
	JobID  string `json:"jobId,omitempty"`
	// Detail holds the request's parameters (filter, state, reset, ...).
	Detail string `json:"detail,omitempty"`
	// Jobs counts the jobs the action changed.
	Jobs int `json:"jobs"`
	// Outcome is ok, denied (auth, role, CSRF, read-only), throttled or
	// error.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	Remote  string `json:"remote,omitempty"`
}

// AuditFunc receives audit entries. It is called synchronously from request
// handlers, so it must be quick and safe for concurrent use.
type AuditFunc func(ctx context.Context, e AuditEntry)

// AuditLogger returns an AuditFunc that logs each entry at Info with the
// message "audit".
func AuditLogger(l *slog.Logger) AuditFunc {
	return func(ctx context.Context, e AuditEntry) {
		l.InfoContext(ctx, "audit",
			slog.String(logkey.User, e.User), slog.String(logkey.Role, string(e.Role)), slog.String(logkey.Action, e.Action),
			slog.String(logkey.Queue, e.Queue), slog.String(logkey.JobID, e.JobID), slog.String(logkey.Detail, e.Detail),
			slog.Int(logkey.Jobs, e.Jobs), slog.String(logkey.Outcome, e.Outcome), slog.String(logkey.Error, e.Error),
			slog.String(logkey.Remote, e.Remote))
	}
}

// record sends e to Options.Audit and appends it to its durable log in
// Redis. The append outlives the request (a client hanging up cannot drop
// its entry).
func (h *Handler) record(ctx context.Context, e AuditEntry) {
	if e.Log == "" {
		e.Log = AuditActions
	}
	h.opts.Audit(ctx, e)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.store.appendAudit(ctx, e); err != nil {
		h.opts.Logger.WarnContext(ctx, "audit entry not stored", slog.String(logkey.Action, e.Action), slog.Any(logkey.Error, err))
	}
}
