package dashboard

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// AuditEntry records one mutating request: who asked for what, when, on how
// many jobs, and what came of it. Refused requests are recorded too.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// User and Role are who asked; Via is how they signed in (anonymous,
	// token, basic, session, or "" when they could not sign in).
	User string `json:"user"`
	Role Role   `json:"role,omitempty"`
	Via  string `json:"via,omitempty"`
	// Action names the request: retry-job, retry-jobs, promote-job,
	// promote-all, remove-job, pause, resume, clean, obliterate, login.
	Action string `json:"action"`
	Queue  string `json:"queue,omitempty"`
	JobID  string `json:"jobId,omitempty"`
	// Detail holds the request's parameters (filter, state, reset, ...).
	Detail string `json:"detail,omitempty"`
	// Jobs counts the jobs the action changed.
	Jobs int `json:"jobs"`
	// Outcome is ok, denied (auth, role, CSRF, read-only) or error.
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
			slog.String("user", e.User), slog.String("role", string(e.Role)), slog.String("action", e.Action),
			slog.String("queue", e.Queue), slog.String("job_id", e.JobID), slog.String("detail", e.Detail),
			slog.Int("jobs", e.Jobs), slog.String("outcome", e.Outcome), slog.String("error", e.Error),
			slog.String("remote", e.Remote))
	}
}

// auditRingSize is how many entries GET /api/audit shows.
const auditRingSize = 500

// auditRing keeps the newest entries for the audit page.
type auditRing struct {
	mu      sync.Mutex
	entries []AuditEntry
}

func (a *auditRing) add(e AuditEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	if len(a.entries) > auditRingSize {
		a.entries = a.entries[len(a.entries)-auditRingSize:]
	}
}

// newest returns the entries, newest first.
func (a *auditRing) newest() []AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]AuditEntry, len(a.entries))
	for i, e := range a.entries {
		out[len(a.entries)-1-i] = e
	}
	return out
}
