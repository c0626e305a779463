package dashboard

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/keys"
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
	// token, basic, session, or "" when they could not sign in), or cli for
	// the drover command (User is then the account that ran it, Role is
	// empty: the command acts with whatever Redis lets it).
	User string `json:"user"`
	Role Role   `json:"role,omitempty"`
	Via  string `json:"via,omitempty"`
	// Action names the request: retry-job, retry-jobs, promote-job,
	// promote-all, remove-job, cancel-job, change-priority, change-delay,
	// pause, resume, clean, drain,
	// obliterate, set-limits, remove-scheduler, upsert-scheduler, release-dedup and
	// remove-orphans (the drover command only), revoke-sessions; in the security log also login,
	// logout and sign-in (credentials sent with a request).
	Action string `json:"action"`
	Queue  string `json:"queue,omitempty"`
	JobID  string `json:"jobId,omitempty"`
	// Detail holds the request's parameters (filter, state, reset, ...).
	Detail string `json:"detail,omitempty"`
	// Jobs counts the jobs the action changed.
	Jobs int `json:"jobs"`
	// JobIDs names up to AuditJobIDsMax of the jobs a bulk action chose
	// (retry-jobs: those it selected, newest first; its end entry,
	// retry-jobs-finished: those selected less the skipped ones, which
	// Detail names with why; clean: those it removed; promote-all: those
	// it promoted, due first; drain: those it deleted, in the order it
	// deleted them (wait, paused, delayed, prioritized); a dry run: those
	// it would change), so the log says which jobs, not only how many.
	// The drover command's promote, drain, clean and retry fill it alike.
	JobIDs []string `json:"jobIds,omitempty"`
	// Outcome is ok, denied (auth, role, CSRF, read-only), throttled,
	// error, unknown (Redis did not answer in time, and
	// the action may or may not have happened), or replayed (a resend with
	// the Idempotency-Key of a request already answered: that answer again,
	// nothing done).
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Remote is the client's address; for the drover command, the host it
	// ran on.
	Remote string `json:"remote,omitempty"`

	// audited, when set, is closed once this entry is recorded: a request
	// that starts a background operation sets it, and the operation's end
	// entry waits for it, so the log shows the request before its end.
	audited chan struct{}
}

// AuditJobIDsMax bounds AuditEntry.JobIDs.
const AuditJobIDsMax = 20

// auditIDs is the first AuditJobIDsMax of ids, copied (nil for none).
func auditIDs(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	return append([]string(nil), ids[:min(len(ids), AuditJobIDsMax)]...)
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

// AppendAudit appends e to the durable audit log of the dashboards over
// rdb under prefix ("" = drover.PrefixDefault), the log GET /api/audit
// reads: for tools that change queues without a dashboard, so that an
// operator's action is in the one log wherever it was made. The drover
// command records its mutating commands through it. e.Log defaults to
// AuditActions and e.Time to now.
func AppendAudit(ctx context.Context, rdb redis.UniversalClient, prefix string, e AuditEntry) error {
	if e.Log == "" {
		e.Log = AuditActions
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s := &store{rdb: rdb, k: keys.DashboardOf(prefix)}
	return s.appendAudit(ctx, e)
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
	// bounded: the client may ignore ctx's deadline (see internal/bounded).
	if _, err := bounded.Call(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.store.appendAudit(ctx, e)
	}); err != nil {
		h.opts.Logger.WarnContext(ctx, "audit entry not stored", slog.String(logkey.Action, e.Action), slog.Any(logkey.Error, err))
	}
	if e.audited != nil {
		close(e.audited)
	}
}
