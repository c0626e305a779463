package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/metricset"
	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/redisclone"
)

//go:embed ui
var uiFiles embed.FS

// MaxStreamsDefault bounds the live-update streams open at once.
const MaxStreamsDefault = 16

// Options configure a Handler. Nil means defaults.
type Options struct {
	// Auth lists the users who may sign in. Nil = no authentication: every
	// request acts as AnonymousRole. Server refuses to listen on a
	// non-loopback address without Auth.
	Auth *Auth
	// AnonymousRole is the role of every request when Auth is nil. Defaults
	// to RoleViewer; `drover dashboard` and `drover demo` use RoleAdmin on
	// loopback.
	AnonymousRole Role
	// ReadOnly refuses every mutating request, whatever the role, and the
	// UI shows no actions.
	ReadOnly bool
	// Metrics serves /metrics. Defaults to the series metrics.NewRegistry
	// registers (the queue gauges read through the Inspector, the Go and
	// process metrics) served without client_golang, so the drover command
	// does not compile it (internal/metricset); pass metrics.Handler over a
	// registry of your own to serve that instead.
	Metrics http.Handler
	// Audit receives an entry for every mutating request, allowed or
	// refused. Defaults to AuditLogger(Logger). The newest entries also show
	// on the audit page.
	Audit AuditFunc
	// AllowedHosts, when set, refuses requests whose Host header (port
	// ignored) is not listed: a guard against DNS rebinding for a dashboard
	// without Auth. Server sets it to the loopback names when it listens on
	// loopback. Default: any host.
	AllowedHosts []string
	// MaxStreams bounds the live-update (server-sent events) streams open at
	// once; each holds a Redis connection in a blocking read. Defaults to
	// MaxStreamsDefault.
	MaxStreams int
	// StreamClient is the Redis client live-update streams read with, so
	// their blocking reads never take the connections API requests need.
	// Defaults to a client New opens with the Inspector client's options and
	// a pool of MaxStreams connections (for *redis.Client and
	// *redis.ClusterClient; other clients are shared), closed by Close.
	StreamClient redis.UniversalClient
	// TrustForwardedFor takes a request's client address from the last
	// X-Forwarded-For entry (the one the reverse proxy in front added) for
	// sign-in throttling and the audit log. Set it only behind a proxy that
	// sets the header; otherwise clients pick their own address. Default
	// false: the connection's address (behind a proxy, every client shares
	// the proxy's, and so its sign-in throttle).
	TrustForwardedFor bool
	// SecureCookies marks the sign-in cookie Secure (serve over TLS).
	// Default false; requests that arrive over TLS get Secure cookies anyway.
	SecureCookies bool
	// Logger receives warnings (and audit entries, by default). Defaults to
	// discarding.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	r.AnonymousRole = cmp.Or(r.AnonymousRole, RoleViewer)
	r.MaxStreams = cmp.Or(r.MaxStreams, MaxStreamsDefault)
	r.Logger = cmp.Or(r.Logger, slog.New(slog.DiscardHandler))
	if r.Audit == nil {
		r.Audit = AuditLogger(r.Logger)
	}
	return r
}

func (o *Options) validate() error {
	if o.Auth != nil {
		if err := o.Auth.validate(); err != nil {
			return err
		}
	}
	if o.AnonymousRole.rank() == 0 {
		return fmt.Errorf("dashboard: Options.AnonymousRole must be viewer, operator or admin, got %q", o.AnonymousRole)
	}
	if o.MaxStreams < 1 {
		return fmt.Errorf("dashboard: Options.MaxStreams must be at least 1, got %d", o.MaxStreams)
	}
	return nil
}

// Handler is the dashboard: a JSON API over an inspect.Inspector, the
// embedded UI that consumes it, live updates, /healthz, /readyz and
// /metrics. Mount it under any prefix with http.StripPrefix:
//
//	mux.Handle("/admin/queues/", http.StripPrefix("/admin/queues", h))
type Handler struct {
	ins *inspect.Inspector
	// streamIns reads live-update streams over their own connections;
	// ownStream is the client New opened for it (closed by Close).
	streamIns *inspect.Inspector
	ownStream redis.UniversalClient
	opts      Options
	mux       *http.ServeMux
	secret    []byte // signs the CSRF tokens of basic and bearer sign-ins; new per Handler
	store     *store
	streams   chan struct{}
	now       func() time.Time
	ops       *operations
}

// New returns the dashboard over ins.
func New(ins *inspect.Inspector, opts *Options) (*Handler, error) {
	if ins == nil {
		return nil, errors.New("dashboard: New needs an Inspector, got nil")
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Metrics == nil {
		logger := o.Logger
		o.Metrics = metricset.Handler(metricset.QueueSource(ins, metricset.ReadOptions{
			Failed: func(ctx context.Context, queue string, err error) {
				logger.WarnContext(ctx, "metrics scrape failed", slog.String(logkey.Queue, queue), slog.Any(logkey.Error, err))
			},
		}, 0), metricset.Runtime)
	}
	h := &Handler{
		ins:     ins,
		opts:    o,
		mux:     http.NewServeMux(),
		secret:  make([]byte, 32),
		store:   &store{rdb: ins.Client(), k: keys.DashboardOf(ins.Prefix())},
		streams: make(chan struct{}, o.MaxStreams),
		now:     time.Now,
		ops:     newOperations(),
	}
	if _, err := rand.Read(h.secret); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	sc := o.StreamClient
	if sc == nil {
		sc = streamClientFor(ins.Client(), o.MaxStreams)
		h.ownStream = sc
	}
	h.streamIns = ins
	if sc != nil {
		si, err := inspect.New(sc, &inspect.Options{Prefix: ins.Prefix(), DiscoveryInterval: -1, Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		h.streamIns = si
	}
	h.routes()
	return h, nil
}

// streamClientFor opens a client like rdb with a pool of n connections, or
// returns nil for clients it cannot copy.
func streamClientFor(rdb redis.UniversalClient, n int) redis.UniversalClient {
	switch c := rdb.(type) {
	case *redis.Client:
		return redisclone.Client(c, func(opt *redis.Options) {
			opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = n, 0, n, n
		})
	case *redis.ClusterClient:
		return redisclone.Cluster(c, func(opt *redis.ClusterOptions) {
			opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = n, 0, n, n
		})
	}
	return nil
}

// closeStreams releases the connections New opened for live-update streams.
// The Inspector and its client stay open (whoever created them closes them).
func (h *Handler) closeStreams() error {
	if h.ownStream != nil {
		if err := h.ownStream.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			return fmt.Errorf("dashboard: close stream client: %w", err)
		}
	}
	return nil
}

func (h *Handler) routes() {
	ui, _ := fs.Sub(uiFiles, "ui")
	static := http.FileServerFS(ui)
	m := h.mux
	// Public: no Redis for /healthz, no data in the UI assets.
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { text(w, http.StatusOK, "ok\n") })
	m.HandleFunc("GET /readyz", h.readyz)
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveIndex(w, r, ui) })
	m.Handle("GET /ui/", http.StripPrefix("/ui", static))
	// The page names its icon (ui/favicon.svg); a browser that asks for
	// /favicon.ico anyway gets it too, not a 404 in its console.
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, ui, "favicon.svg")
	})
	m.HandleFunc("POST /api/login", h.login)
	m.HandleFunc("POST /api/logout", h.logout)

	// Viewers.
	m.Handle("GET /metrics", h.viewer(h.opts.Metrics.ServeHTTP))
	m.Handle("GET /api/session", h.viewer(h.session))
	m.Handle("GET /api/overview", h.viewer(boundedRead(h.overview)))
	m.Handle("GET /api/queues/{queue}", h.viewer(boundedRead(h.queue)))
	m.Handle("GET /api/queues/{queue}/jobs", h.viewer(boundedRead(h.jobs)))
	m.Handle("GET /api/queues/{queue}/jobs/{id}", h.viewer(boundedRead(h.job)))
	m.Handle("GET /api/queues/{queue}/stalled", h.viewer(boundedRead(h.stalled)))
	m.Handle("GET /api/queues/{queue}/delayed", h.viewer(boundedRead(h.delayed)))
	m.Handle("GET /api/queues/{queue}/budgets", h.viewer(boundedRead(h.budgets)))
	m.Handle("GET /api/queues/{queue}/events", h.viewer(h.events))

	// Operators.
	m.Handle("POST /api/queues/{queue}/jobs/{id}/retry", h.act("retry-job", RoleOperator, h.retryJob))
	m.Handle("POST /api/queues/{queue}/jobs/{id}/promote", h.act("promote-job", RoleOperator, noBody(h.promoteJob)))
	m.Handle("POST /api/queues/{queue}/jobs/{id}/cancel", h.act("cancel-job", RoleOperator, h.cancelJob))
	m.Handle("POST /api/queues/{queue}/jobs/{id}/priority", h.act("change-priority", RoleOperator, h.changePriority))
	m.Handle("POST /api/queues/{queue}/jobs/{id}/delay", h.act("change-delay", RoleOperator, h.changeDelay))
	m.Handle("POST /api/queues/{queue}/retry", h.act("retry-jobs", RoleOperator, h.retryJobs))
	m.Handle("POST /api/queues/{queue}/promote", h.act("promote-all", RoleOperator, h.promoteAll))
	m.Handle("GET /api/openapi.json", h.viewer(serveOpenAPI))
	m.Handle("GET /api/jobs/{id}", h.viewer(boundedRead(h.findJob)))
	m.Handle("GET /api/queues/{queue}/failures", h.viewer(boundedRead(h.failures)))
	m.Handle("GET /api/queues/{queue}/conflicts", h.viewer(boundedRead(h.conflicts)))
	m.Handle("GET /api/queues/{queue}/throughput", h.viewer(boundedRead(h.throughput)))
	m.Handle("GET /api/queues/{queue}/schedulers", h.viewer(boundedRead(h.schedulers)))
	m.Handle("POST /api/queues/{queue}/schedulers/{scheduler}/remove", h.act("remove-scheduler", RoleOperator, noBody(h.removeScheduler)))
	m.Handle("GET /api/workers", h.viewer(boundedRead(h.workers)))
	m.Handle("GET /api/operations", h.viewer(boundedRead(h.listOperations)))
	m.Handle("GET /api/operations/{id}", h.viewer(boundedRead(h.getOperation)))
	m.Handle("POST /api/operations/{id}/cancel", h.act("cancel-operation", RoleOperator, noBody(h.cancelOperation)))

	// Admins.
	m.Handle("GET /api/audit", h.need(RoleAdmin, h.auditLog))
	m.Handle("POST /api/sessions/revoke", h.act("revoke-sessions", RoleAdmin, h.revokeSessions))
	m.Handle("POST /api/queues/{queue}/jobs/{id}/remove", h.act("remove-job", RoleAdmin, noBody(h.removeJob)))
	m.Handle("POST /api/queues/{queue}/pause", h.act("pause", RoleAdmin, noBody(h.pause)))
	m.Handle("POST /api/queues/{queue}/resume", h.act("resume", RoleAdmin, noBody(h.resume)))
	m.Handle("POST /api/queues/{queue}/limits", h.act("set-limits", RoleAdmin, h.setLimits))
	m.Handle("POST /api/queues/{queue}/clean", h.act("clean", RoleAdmin, h.clean))
	m.Handle("POST /api/queues/{queue}/obliterate", h.act("obliterate", RoleAdmin, h.obliterate))
	m.Handle("POST /api/queues/{queue}/drain", h.act("drain", RoleAdmin, h.drain))

	// Anything else under /api is a JSON 404, not the UI.
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	if len(h.opts.AllowedHosts) > 0 && !h.hostAllowed(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "host not allowed")
		return
	}
	if r.URL.Path == "" {
		// Mounted with StripPrefix and visited without the trailing slash:
		// relative links need it.
		http.Redirect(w, r, strings.SplitN(r.RequestURI, "?", 2)[0]+"/", http.StatusMovedPermanently)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// remote is the client's address: the connection's, or with
// Options.TrustForwardedFor the last X-Forwarded-For entry.
func (h *Handler) remote(r *http.Request) string {
	if h.opts.TrustForwardedFor {
		if v := r.Header.Values("X-Forwarded-For"); len(v) > 0 {
			last := v[len(v)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil {
				return ip.String()
			}
		}
	}
	return r.RemoteAddr
}

func (h *Handler) hostAllowed(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.Trim(host, "[]")
	return slices.ContainsFunc(h.opts.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) })
}

func serveIndex(w http.ResponseWriter, r *http.Request, ui fs.FS) {
	b, err := fs.ReadFile(ui, "index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "index.html missing")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// viewer wraps a read: any signed-in user.
func (h *Handler) viewer(fn http.HandlerFunc) http.Handler { return h.need(RoleViewer, fn) }

// need wraps a read that needs role.
func (h *Handler) need(role Role, fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		unescapePath(r)
		p, fail := h.authenticate(r)
		if fail != nil {
			h.unauthorized(w, r, fail)
			return
		}
		if !p.Role.Allows(role) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("%s may not do this: it needs the %s role", p.Role, role))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fn(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

func (h *Handler) unauthorized(w http.ResponseWriter, r *http.Request, fail *authFailure) {
	if fail.status == http.StatusUnauthorized && !strings.HasPrefix(r.URL.Path, "/api/") && h.opts.Auth != nil && h.opts.Auth.hasBasic() {
		w.Header().Set("WWW-Authenticate", `Basic realm="drover", charset="UTF-8"`)
	}
	fail.write(w)
}

// actionFunc does a mutating request. It fills e's Jobs and Detail, writes
// the response on success and returns an error otherwise.
type actionFunc func(w http.ResponseWriter, r *http.Request, e *AuditEntry) error

// httpError is an error with the status to answer.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// noBody wraps an action that takes no parameters: its body may be absent
// or an empty JSON object ("{}", what the page sends), nothing else, so a
// caller who expects a parameter (say a count for "promote all") learns it
// is not there before the action runs.
func noBody(fn actionFunc) actionFunc {
	return func(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
		if err := decode(r, &struct{}{}); err != nil {
			return err
		}
		return fn(w, r, e)
	}
}

// act wraps a mutating request: sign-in, read-only mode, role, CSRF, then
// the action, and an audit entry whatever happens.
func (h *Handler) act(action string, role Role, fn actionFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		unescapePath(r)
		e := AuditEntry{Time: h.now(), Action: action, Queue: r.PathValue("queue"), Remote: h.remote(r)}
		if e.Queue != "" { // under /api/operations/{id}, id names an operation, not a job
			e.JobID = r.PathValue("id")
		}
		deny := func(status int, why string) { //nolint:contextcheck // the audit uses the request's context
			e.Outcome, e.Error = "denied", why
			h.record(r.Context(), e)
			writeError(w, status, why)
		}
		p, fail := h.authenticate(r)
		if fail != nil {
			// Without valid credentials: a security event, not an action.
			if fail.status == http.StatusUnauthorized {
				e.Log, e.Outcome, e.Error = AuditSecurity, "denied", fail.msg
				h.record(r.Context(), e)
			}
			h.unauthorized(w, r, fail)
			return
		}
		e.User, e.Role, e.Via = p.Name, p.Role, p.Via
		switch {
		case h.opts.ReadOnly:
			deny(http.StatusForbidden, "the dashboard is read-only")
			return
		case !p.Role.Allows(role):
			deny(http.StatusForbidden, fmt.Sprintf("%s may not %s: it needs the %s role", p.Role, action, role))
			return
		}
		if err := h.checkCSRF(r, p); err != nil {
			deny(http.StatusForbidden, "CSRF check failed: "+err.Error())
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		claim, done := h.claimIdempotency(ctx, w, r, &e)
		if done {
			return // answered (and audited): a resend, or a key refused
		}
		dry := new(atomic.Bool)
		rec, err := boundedAction(w, r.WithContext(context.WithValue(ctx, dryRunKey{}, dry)), &e, fn)
		switch {
		case errors.Is(err, drover.ErrOutcomeUnknown) && dry.Load():
			// A dry run changes nothing: its timeout is a read's, not an
			// action that "may or may not have happened".
			e.Outcome, e.Error = "error", "dry run: "+err.Error()
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, "Redis did not answer in time; this was a dry run, so nothing changed ("+err.Error()+")")
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			h.record(ctx, e)
			h.settle(ctx, claim, 0, nil, false)
			return
		case errors.Is(err, drover.ErrOutcomeUnknown):
			e.Outcome, e.Error = outcomeUnknown, err.Error()
			// Answer first: the audit store is in the Redis that does not
			// answer (record bounds its wait too). The connection is busy
			// until then, so the client must not send its next request on it.
			w.Header().Set("Connection", "close")
			writeErr(w, err)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			h.record(ctx, e)
			h.settle(ctx, claim, 0, nil, true)
			return
		case err != nil:
			e.Outcome, e.Error = "error", err.Error()
		default:
			e.Outcome = "ok"
		}
		h.record(ctx, e)
		if err != nil {
			h.settle(ctx, claim, 0, nil, false)
			writeErr(w, err)
			return
		}
		h.settle(ctx, claim, cmp.Or(rec.status, http.StatusOK), rec.body.Bytes(), false)
		replay(w, rec)
	})
}

// claimIdempotency claims the Idempotency-Key r carries, if any (see
// idempotency.go). done says it answered r itself, and audited it: a resend
// of an answered request (its answer again), of one still running or of
// one whose outcome is unknown, a key too long, or Redis failing the claim.
func (h *Handler) claimIdempotency(ctx context.Context, w http.ResponseWriter, r *http.Request, e *AuditEntry) (claim *idemClaim, done bool) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		return nil, false
	}
	fail := func(err error) (*idemClaim, bool) {
		e.Outcome, e.Error = "error", err.Error()
		h.record(ctx, *e)
		writeErr(w, err)
		return nil, true
	}
	if len(key) > idempotencyKeyMax {
		return fail(badRequest("Idempotency-Key must be at most %d bytes, got %d", idempotencyKeyMax, len(key)))
	}
	bctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	// bounded: the client may ignore ctx's deadline (see internal/bounded).
	c, err := bounded.Call(bctx, func(ctx context.Context) (*idemClaim, error) {
		return h.store.claimIdempotency(ctx, e.User, r, key)
	})
	switch {
	case err != nil:
		return fail(fmt.Errorf("%w (nothing was done)", err))
	case c.busy:
		return fail(&httpError{status: http.StatusConflict, msg: "a request with this Idempotency-Key is still under way: wait for its answer"})
	case c.unknown:
		e.Outcome, e.Error = outcomeUnknown, "resent: the first request with this Idempotency-Key had an unknown outcome"
		h.record(ctx, *e)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{
			"error":   "outcome unknown: the first request with this Idempotency-Key got no answer from Redis in time, so it may or may not have happened; check before sending it again with a new key",
			"outcome": outcomeUnknown,
		})
		return nil, true
	case c.kept != nil:
		e.Outcome, e.Detail = "replayed", "the answer of the first request with this Idempotency-Key; nothing done again"
		h.record(ctx, *e)
		w.Header().Set("Idempotency-Replayed", "true")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(c.kept.Status)
		_, _ = w.Write(c.kept.Body)
		return nil, true
	}
	return c, false
}

// settle records how the request holding claim ended, for its resends
// (nothing without a claim). A failure is logged: the action is done.
func (h *Handler) settle(ctx context.Context, claim *idemClaim, status int, body []byte, unknown bool) {
	if claim == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// bounded: the client may ignore ctx's deadline (see internal/bounded).
	if _, err := bounded.Call(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.store.settle(ctx, claim, status, body, unknown)
	}); err != nil {
		h.opts.Logger.WarnContext(ctx, "idempotency answer not stored", slog.Any(logkey.Error, err))
	}
}

// dryRunKey marks, in an action's context, an *atomic.Bool the action sets
// (markDryRun) once it knows it is a dry run, before it reads Redis.
type dryRunKey struct{}

// markDryRun tells act that this request changes nothing.
func markDryRun(ctx context.Context) {
	if b, ok := ctx.Value(dryRunKey{}).(*atomic.Bool); ok {
		b.Store(true)
	}
}

// outcomeUnknown is the audit outcome, and the error answer's "outcome", of
// an action that Redis did not answer in time.
const outcomeUnknown = "unknown"

// actionTimeout bounds a mutating request's wait for Redis, as readTimeout
// bounds a read's: against a Redis that stopped answering without closing
// its connections, an action would wait out its calls' client timeouts
// one after another. A bulk retry runs as a background operation and is not
// bounded by it.
const actionTimeout = 10 * time.Second

// boundedAction runs the action fn with actionTimeout on a copy of e and
// a recorder of its response, and hands them back when fn finishes in time.
// When it does not, or one of its writes got no answer before the bound,
// the error wraps drover.ErrOutcomeUnknown: the action was under way and
// may have happened; the late fn's entry and response are dropped.
func boundedAction(w http.ResponseWriter, r *http.Request, e *AuditEntry, fn actionFunc) (*recorder, error) {
	// Not cancelled with the request: the server cancels r's context when
	// the client goes away (a reload, a closed tab, a proxy's timeout), and
	// an action the user confirmed stopped half-way (an obliterate left
	// most of a large queue) with its outcome unknown. The timeout still
	// bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), actionTimeout)
	defer cancel()
	type done struct {
		rec *recorder
		e   AuditEntry
		err error
	}
	// Copied here, not in fn's goroutine: after a give-up the handler goes
	// on with e and w while fn may still run.
	start := done{rec: &recorder{header: w.Header().Clone()}, e: *e}
	d, err := bounded.Call(ctx, func(ctx context.Context) (done, error) {
		d := start
		d.err = fn(d.rec, r.WithContext(ctx), &d.e)
		return d, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", drover.ErrOutcomeUnknown, r.Method, r.URL.Path, err)
	}
	*e = d.e
	return d.rec, d.err
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	// bounded: the client may ignore ctx's deadline (see internal/bounded).
	if _, err := bounded.Call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, h.ins.Ping(ctx) }); err != nil {
		// The probe needs no sign-in: it says only that Redis is out, not
		// the error, which names internal addresses; the log has it.
		h.opts.Logger.WarnContext(r.Context(), "readiness probe: Redis unavailable", slog.Any(logkey.Error, err))
		text(w, http.StatusServiceUnavailable, "redis: unavailable\n")
		return
	}
	text(w, http.StatusOK, "ok\n")
}

func text(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(s))
}

// writeJSON sends v with its length, so a client has the whole answer
// once it is flushed, even while the handler goes on (act records an
// unknown outcome after answering).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// missing names what a 404 did not find, in its "missing" field: a page
// at /q/x/job/1 must tell "no queue x" from "no job 1 in x", and an
// error message is no thing to match.
type missing string

const (
	missingQueue     missing = "queue"
	missingJob       missing = "job"
	missingScheduler missing = "scheduler"
)

func writeNotFound(w http.ResponseWriter, what missing, err error) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error(), "missing": string(what)})
}

// writeErr answers err with the status its kind calls for.
func writeErr(w http.ResponseWriter, err error) {
	var he *httpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		writeError(w, he.status, he.msg)
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, inspect.ErrQueueNotFound):
		writeNotFound(w, missingQueue, err)
	case errors.Is(err, drover.ErrJobNotFound):
		writeNotFound(w, missingJob, err)
	case errors.Is(err, inspect.ErrSchedulerNotFound):
		writeNotFound(w, missingScheduler, err)
	case errors.Is(err, drover.ErrNotInState), errors.Is(err, drover.ErrJobLocked), errors.Is(err, drover.ErrActiveJobs),
		errors.Is(err, drover.ErrCancelNotDelivered):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, drover.ErrSchedulerJob):
		// A scheduler's pending run: cancelling or removing it would stop
		// the scheduler. It answered 500, as a bug.
		writeError(w, http.StatusConflict, err.Error()+": remove or change the job scheduler instead (its queue's job schedulers page)")
	case errors.Is(err, drover.ErrInvalidOption), errors.Is(err, drover.ErrInvalidJobID):
		// An id that names one of the queue's keys ("meta", "wait") is no
		// job's: bad input, as drover refuses it.
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, drover.ErrOutcomeUnknown):
		// Before the cancelled case: a client that hung up during a write
		// needs to know as much.
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{
			"error":   "outcome unknown: Redis did not answer in time, so the action may or may not have happened; check before repeating it (" + err.Error() + ")",
			"outcome": outcomeUnknown,
		})
	case errors.Is(err, context.Canceled):
		writeError(w, 499, "request cancelled")
	case outage.Is(err):
		// Not a bug: a proxy or a monitor tells an outage by its 503, as
		// /readyz gives.
		writeError(w, http.StatusServiceUnavailable, "Redis unavailable: "+err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// readTimeout bounds a read request's wait for Redis. A go-redis client
// ignores a context's deadline unless built with ContextTimeoutEnabled, so
// against a Redis that stopped answering without closing its connections
// (paused, a frozen host) a page's read took its reads' timeouts and
// retries one after another: 90 s for the overview.
const readTimeout = 10 * time.Second

// boundedRead runs the read fn with readTimeout: its answer is recorded and
// sent when it finishes in time, else the request gets a 503 naming Redis
// (an outage, as writeErr says) and fn's late answer is dropped.
func boundedRead(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		defer cancel()
		rec, err := bounded.Call(ctx, func(ctx context.Context) (*recorder, error) {
			rec := &recorder{header: w.Header().Clone()}
			fn(rec, r.WithContext(ctx))
			return rec, nil
		})
		if err != nil {
			if r.Context().Err() != nil {
				writeErr(w, r.Context().Err())
				return
			}
			writeErr(w, fmt.Errorf("read for %s %s: %w", r.Method, r.URL.Path, err))
			return
		}
		replay(w, rec)
	}
}

// replay sends the response rec kept.
func replay(w http.ResponseWriter, rec *recorder) {
	h := w.Header()
	clear(h)
	maps.Copy(h, rec.header)
	w.WriteHeader(cmp.Or(rec.status, http.StatusOK))
	_, _ = w.Write(rec.body.Bytes())
}

// recorder keeps a bounded read's response until it is known to be in time.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
