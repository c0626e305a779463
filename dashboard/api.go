package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
)

// Session is GET /api/session: who the caller is and what the UI may offer.
type Session struct {
	User string `json:"user"`
	Role Role   `json:"role"`
	Via  string `json:"via"`
	// CSRF is the token every mutating request sends in X-CSRF-Token.
	CSRF     string `json:"csrf"`
	ReadOnly bool   `json:"readOnly"`
	// AuthEnabled says users sign in (else everyone is anonymous).
	AuthEnabled bool `json:"authEnabled"`
	CanOperate  bool `json:"canOperate"`
	CanAdmin    bool `json:"canAdmin"`
}

func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	writeJSON(w, http.StatusOK, Session{
		User: p.Name, Role: p.Role, Via: p.Via, CSRF: h.csrfToken(p), ReadOnly: h.opts.ReadOnly,
		AuthEnabled: h.opts.Auth != nil,
		CanOperate:  !h.opts.ReadOnly && p.Role.Allows(RoleOperator),
		CanAdmin:    !h.opts.ReadOnly && p.Role.Allows(RoleAdmin),
	})
}

// login signs a user in with a token or a name and password and sets the
// session cookie: a new session, stored in Redis, replacing the one the
// browser had. Failed and throttled attempts go to the security log.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	ctx := r.Context()
	e := AuditEntry{Log: AuditSecurity, Time: h.now(), Action: "login", Remote: h.remote(r), Outcome: "denied"}
	fail := func(status int, msg string) { //nolint:contextcheck // the audit uses the request's context
		e.Error = msg
		h.record(ctx, e)
		writeError(w, status, msg)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		fail(http.StatusForbidden, "cross-origin sign-in from "+origin)
		return
	}
	if h.opts.Auth == nil {
		fail(http.StatusBadRequest, "no sign-in: the dashboard has no users")
		return
	}
	var body struct {
		Token    string `json:"token"`
		User     string `json:"user"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		fail(http.StatusBadRequest, "bad request body")
		return
	}
	var u *User
	parties := []throttleKey{clientOf(h.remote(r))}
	if body.Token != "" {
		u = h.userByToken(body.Token)
	} else {
		u = h.userByPassword(body.User, body.Password)
		if h.knownUser(body.User) {
			parties = append(parties, throttleKey{"user", body.User})
		}
	}
	if f := h.signIn(r, "login", body.User, u != nil, parties); f != nil {
		f.write(w) // signIn recorded it
		return
	}
	if err := h.store.succeeded(ctx, u.Name); err != nil {
		h.opts.Logger.WarnContext(ctx, "reset sign-in throttle", slog.Any(logkey.Error, err))
	}
	// Rotation: the browser's previous session ends.
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if err := h.store.deleteSession(ctx, c.Value); err != nil {
			fail(http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	id, _, err := h.store.createSession(ctx, u)
	if err != nil {
		fail(http.StatusServiceUnavailable, err.Error())
		return
	}
	e.User, e.Role, e.Via, e.Outcome = u.Name, u.Role, "session", "ok"
	h.record(ctx, e)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.opts.SecureCookies || r.TLS != nil,
	})
	writeJSON(w, http.StatusOK, map[string]string{"user": u.Name, "role": string(u.Role)})
}

// logout ends the browser's session in Redis, so a copy of the cookie
// signs nobody in, and clears the cookie. When Redis does not end the
// session the cookie is cleared all the same and the answer says the
// session lives on: the browser kept the cookie, and the page that
// reloaded after its sign-out came back signed in once Redis answered.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	// Only this dashboard's own pages sign out: a page on another origin
	// (a sibling subdomain gets the SameSite cookie too) ended the session.
	if err := fromElsewhere(r); err != nil {
		h.record(r.Context(), AuditEntry{Log: AuditSecurity, Time: h.now(), Action: "logout", Outcome: "denied",
			Error: err.Error(), Remote: h.remote(r)})
		writeError(w, http.StatusForbidden, "sign-out refused: "+err.Error())
		return
	}
	var failed error
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" && h.opts.Auth != nil {
		if sess, ok, err := h.store.readSession(r.Context(), c.Value); err == nil && ok {
			h.record(r.Context(), AuditEntry{Log: AuditSecurity, Time: h.now(), Action: "logout", User: sess.User,
				Role: sess.Role, Via: "session", Outcome: "ok", Remote: h.remote(r)})
		}
		if err := h.store.deleteSession(r.Context(), c.Value); err != nil {
			failed = fmt.Errorf("this browser is signed out, but the session could not be ended, so a copy of its cookie signs in until it expires (sign in and out again once Redis answers, or have an admin sign everyone out): %w", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: h.opts.SecureCookies || r.TLS != nil})
	if failed != nil {
		writeErr(w, failed)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// RevokeSessionsRequest is the body of POST /api/sessions/revoke.
type RevokeSessionsRequest struct {
	// User whose sessions end; "" = every user's, the caller's included.
	User string `json:"user"`
}

func (h *Handler) revokeSessions(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req RevokeSessionsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.User != "" && !h.knownUser(req.User) {
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("no user %q", req.User)}
	}
	who := req.User
	if who == "" {
		who = "*"
	}
	e.Detail = "user=" + who
	if err := h.store.revokeSessions(r.Context(), req.User); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"revoked": who})
	return nil
}

// QueueOverview is one queue on the overview page.
type QueueOverview struct {
	inspect.QueueInfo
	Alerts []inspect.Alert `json:"alerts"`
}

// Overview is GET /api/overview.
type Overview struct {
	Prefix string          `json:"prefix"`
	Queues []QueueOverview `json:"queues"`
	// Alerts gathers every queue's storm alerts.
	Alerts []inspect.Alert `json:"alerts"`
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	infos, err := h.ins.Overview(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	// The storm alerts of the queues with delayed jobs, overviewReaders
	// at a time (DelayedAlerts reads a histogram only for a set big enough
	// to cluster): 5,000 queues with one delayed job each took 7.5 s, one
	// after another and each histogram read, and the first read of such an
	// overview ran past readTimeout (503).
	stats := make([][]inspect.Alert, len(infos))
	errs := make([]error, len(infos))
	sem := make(chan struct{}, overviewReaders)
	var wg sync.WaitGroup
	ctx := r.Context()
	for k, info := range infos {
		if info.Counts.Delayed == 0 {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(ctx context.Context) {
			defer func() { <-sem; wg.Done() }()
			if err := ctx.Err(); err != nil {
				errs[k] = err
				return
			}
			stats[k], errs[k] = h.ins.DelayedAlerts(ctx, info.Name, info.Counts.Delayed)
		}(ctx)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if e != nil {
				writeErr(w, e) // the first, as the reads one by one answered
				return
			}
		}
	}
	out := Overview{Prefix: h.ins.Prefix(), Queues: []QueueOverview{}, Alerts: []inspect.Alert{}}
	for k, info := range infos {
		qo := QueueOverview{QueueInfo: info, Alerts: []inspect.Alert{}}
		qo.Alerts = append(qo.Alerts, stats[k]...)
		out.Alerts = append(out.Alerts, qo.Alerts...)
		out.Queues = append(out.Queues, qo)
	}
	writeJSON(w, http.StatusOK, out)
}

// overviewReaders bounds the queues whose delayed sets the overview reads
// at once.
const overviewReaders = 8

// QueuePage is GET /api/queues/{queue}: the queue page in one call.
type QueuePage struct {
	inspect.QueueInfo
	Delayed *inspect.DelayedStats `json:"delayed"`
	Budget  *inspect.BudgetReport `json:"budget"`
	// Alerts gathers the storm and budget alerts.
	Alerts []inspect.Alert `json:"alerts"`
	// Storm holds the thresholds in force, for the UI's legend.
	Storm StormThresholds `json:"storm"`
	// EventsAfter is the id of the queue's newest event when the page was
	// read ("0-0": none), where the page's live feed starts (JobPage's).
	EventsAfter string `json:"eventsAfter"`
}

// StormThresholds are inspect.StormOptions for the UI (durations in ms).
type StormThresholds struct {
	WindowMs        int64   `json:"windowMs"`
	HorizonMs       int64   `json:"horizonMs"`
	ClusterShare    float64 `json:"clusterShare"`
	ClusterMinJobs  int     `json:"clusterMinJobs"`
	GrowthPerSecond float64 `json:"growthPerSecond"`
}

func (h *Handler) queue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	after, aerr := h.eventsAfter(r.Context(), name) // first: see job
	info, err := h.ins.QueueInfo(r.Context(), name)
	if err = cmp.Or(err, aerr); err != nil {
		writeErr(w, err)
		return
	}
	st, err := h.ins.DelayedStats(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	budget, err := h.ins.NearExhausted(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	so := h.ins.StormOptions()
	page := QueuePage{QueueInfo: *info, Delayed: st, Budget: budget, Alerts: append([]inspect.Alert{}, st.Alerts...),
		Storm: StormThresholds{
			WindowMs: so.Window.Milliseconds(), HorizonMs: so.Horizon.Milliseconds(), ClusterShare: so.ClusterShare,
			ClusterMinJobs: so.ClusterMinJobs, GrowthPerSecond: so.GrowthPerSecond,
		}, EventsAfter: after}
	if budget.Alert != nil {
		page.Alerts = append(page.Alerts, *budget.Alert)
	}
	clipReasons(budget.Jobs)
	writeJSON(w, http.StatusOK, page)
}

// filterFromQuery reads a filter from ?filter= (ParseFilter syntax) and/or
// ?name=, ?reason=, ?left=.
func filterFromQuery(q map[string][]string) (inspect.Filter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	f, err := inspect.ParseFilter(get("filter"))
	if err != nil {
		return f, badRequest("%v", err)
	}
	if v := get("name"); v != "" {
		f.Name = v
	}
	if v := get("reason"); v != "" {
		f.Reason = v
	}
	if v := get("error"); v != "" {
		f.Error = v
	}
	if v := get("left"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, badRequest("left must be a whole number of attempts, got %q", v)
		}
		f.MaxAttemptsLeft = &n
	}
	return f, nil
}

// queryCount reads the count k of a list's query (offset, limit), def
// when it is absent; anything but a non-negative number is a bad request
// naming it.
func queryCount(q url.Values, k string, def int) (int, error) {
	v := q.Get(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest("%s must be a non-negative number, got %q", k, v)
	}
	return n, nil
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := drover.JobState(q.Get("state"))
	if state == "" {
		state = drover.StateFailed
	}
	filter, err := filterFromQuery(q)
	if err != nil {
		writeErr(w, err)
		return
	}
	offset, err := queryCount(q, "offset", 0)
	if err != nil {
		writeErr(w, err)
		return
	}
	limit, err := queryCount(q, "limit", inspect.PageSizeDefault)
	if err != nil {
		writeErr(w, err)
		return
	}
	asc := false
	if v := q.Get("asc"); v != "" {
		if asc, err = strconv.ParseBool(v); err != nil {
			writeErr(w, badRequest("asc must be true or false, got %q", v))
			return
		}
	}
	opts := &inspect.ListOptions{State: state, Filter: filter, Offset: offset, Limit: min(limit, 500), Asc: asc}
	// after= and before= are a page's cursors: the next page and the one
	// before stay right next to the page shown while jobs move.
	if opts.After, err = cursorParam(q, "after"); err == nil {
		opts.Before, err = cursorParam(q, "before")
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	page, err := h.ins.Jobs(r.Context(), r.PathValue("queue"), opts)
	if err != nil {
		writeErr(w, err)
		return
	}
	clipReasons(page.Jobs)
	writeJSON(w, http.StatusOK, page)
}

// ListReasonMax bounds, in bytes, the failed reason of each job in a list
// (a page of jobs, a retry's sample, the budget and stalled reports): a
// longer one is cut there and ends in "…"; the job's own page has all of
// it. A reason can be megabytes (a response body, a dump): a page of 25
// such jobs answered 26 MB at every refresh and froze the browser for
// seconds laying it out.
const ListReasonMax = 2000

func clipReasons(jobs []inspect.JobSummary) {
	for i := range jobs {
		if s := jobs[i].FailedReason; len(s) > ListReasonMax {
			cut := ListReasonMax
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			jobs[i].FailedReason = s[:cut] + "…"
		}
	}
}

// cursorParam reads the cursor query parameter k ("" when absent).
func cursorParam(q url.Values, k string) (inspect.Cursor, error) {
	v := q.Get(k)
	if v == "" {
		return "", nil
	}
	c, err := inspect.ParseCursor(v)
	if err != nil {
		return "", badRequest("%s: %v", k, err)
	}
	return c, nil
}

// JobPage is GET /api/queues/{queue}/jobs/{id}: the job, and where the
// queue's events stream stood just before it was read.
type JobPage struct {
	*inspect.JobDetail
	// EventsAfter is the id of the queue's newest event when the job was
	// read ("0-0": none): the page's live feed opens its stream with
	// ?after= this id, so an event written after the job was read and
	// before the stream first opened (it was refused while Redis was down
	// or every stream slot was taken) is still delivered.
	EventsAfter string `json:"eventsAfter"`
}

// MarshalJSON writes the job's fields (JobDetail's MarshalJSON) and
// eventsAfter.
func (p JobPage) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(p.JobDetail)
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return b, err
	}
	after, err := json.Marshal(p.EventsAfter)
	if err != nil {
		return nil, err
	}
	sep := ","
	if len(b) == 2 {
		sep = ""
	}
	return append(append(append(b[:len(b)-1], sep+`"eventsAfter":`...), after...), '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *JobPage) UnmarshalJSON(data []byte) error {
	var d inspect.JobDetail
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	var after struct {
		EventsAfter string `json:"eventsAfter"`
	}
	if err := json.Unmarshal(data, &after); err != nil {
		return err
	}
	p.JobDetail, p.EventsAfter = &d, after.EventsAfter
	return nil
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	// Read first, so no event after the job's read is missed; its error
	// comes after the job's own (a missing queue or job says so).
	after, aerr := h.eventsAfter(r.Context(), queue)
	d, err := h.ins.Job(r.Context(), queue, r.PathValue("id"))
	if err = cmp.Or(err, aerr); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, JobPage{JobDetail: d, EventsAfter: after})
}

// eventsAfter is the id of the newest entry of queue's events stream, "0-0"
// when it has none: a live-update stream opened with ?after= it delivers
// every event written from now on.
func (h *Handler) eventsAfter(ctx context.Context, queue string) (string, error) {
	last, err := h.ins.Client().XRevRangeN(ctx, keys.New(h.ins.Prefix(), queue).Events(), "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("read events of queue %q: %w", queue, err)
	}
	if len(last) == 0 {
		return "0-0", nil
	}
	return last[0].ID, nil
}

func (h *Handler) stalled(w http.ResponseWriter, r *http.Request) {
	rep, err := h.ins.Stalled(r.Context(), r.PathValue("queue"))
	if err == nil {
		clipReasons(rep.Stalled)
	}
	reply(w, rep, err)
}

func (h *Handler) delayed(w http.ResponseWriter, r *http.Request) {
	st, err := h.ins.DelayedStats(r.Context(), r.PathValue("queue"))
	reply(w, st, err)
}

func (h *Handler) budgets(w http.ResponseWriter, r *http.Request) {
	rep, err := h.ins.NearExhausted(r.Context(), r.PathValue("queue"))
	if err == nil {
		clipReasons(rep.Jobs)
	}
	reply(w, rep, err)
}

// AuditPage is GET /api/audit?log=actions|security&before=ID&limit=N.
type AuditPage struct {
	Log string `json:"log"`
	// Entries are newest first.
	Entries []AuditEntry `json:"entries"`
	// Next is the before= of the next (older) page; "" on the last page.
	Next string `json:"next,omitempty"`
}

// auditLog pages through a durable audit log: actions (default) or
// security events.
func (h *Handler) auditLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	log := q.Get("log")
	switch log {
	case "":
		log = AuditActions
	case AuditActions, AuditSecurity:
	default:
		writeError(w, http.StatusBadRequest, "log must be actions or security, got "+strconv.Quote(log))
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive number, got "+strconv.Quote(v))
			return
		}
		limit = min(n, 1000)
	}
	before := q.Get("before")
	if before != "" && !validStreamID(before) {
		writeError(w, http.StatusBadRequest, "before must be an entry id, got "+strconv.Quote(before))
		return
	}
	entries, next, err := h.store.readAudit(r.Context(), log, before, limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, AuditPage{Log: log, Entries: entries, Next: next})
}

func validStreamID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	return ok && err1 == nil && err2 == nil
}

// oneJob answers a one-job action that err says succeeded: {verb: 1},
// audited as one job.
func oneJob(w http.ResponseWriter, e *AuditEntry, verb string, err error) error {
	if err != nil {
		return err
	}
	e.Jobs = 1
	writeJSON(w, http.StatusOK, map[string]int{verb: 1})
	return nil
}

// reply writes v as JSON with status 200, or err as the API's error.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// decode reads an optional JSON body into v. A field v does not have is
// refused: a misspelt option (say "dry_run" for "dryRun") must not run the
// real action with the option left out. (Names still match regardless of
// case, as encoding/json does.)
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return badRequest("bad request body: %q must be %s, got %s", te.Field, jsonKind(te.Type), jsonValue(te.Value))
	}
	if err != nil {
		return badRequest("bad request body: %v", err)
	}
	// One JSON value and nothing after it: a body with more is not what
	// the caller meant to send, and the actions can be destructive.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("bad request body: more after the JSON object")
	}
	return nil
}

// jsonKind names what a field of Go type t takes, in JSON's words: the
// decoder's own error named Go types ("Go struct field
// LimitsRequest.concurrency of type int"), which the page showed as is.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, not negative"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// jsonValue renders the decoder's description of the value it got: the
// number itself, else its kind ("a string", "an object").
func jsonValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	if v == "array" || v == "object" {
		return "an " + v
	}
	return "a " + v
}

// RetryJobRequest is the body of POST /api/queues/{queue}/jobs/{id}/retry.
type RetryJobRequest struct {
	// ResetAttempts gives the job its whole attempt budget back.
	ResetAttempts bool `json:"resetAttempts"`
	// From, when set, is the state the caller saw the job in (failed,
	// completed or delayed; the page sends the state its dialog named): a
	// job in another state now, retried or run by someone else since, is
	// refused with 409 and left where it is. Without it a failed, completed
	// or delayed job is retried from whichever it is in.
	From drover.JobState `json:"from,omitempty"`
}

func (h *Handler) retryJob(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req RetryJobRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	e.Detail = fmt.Sprintf("resetAttempts=%t", req.ResetAttempts)
	var from drover.JobState
	var err error
	switch req.From {
	case "":
		from, err = h.ins.RetryJob(r.Context(), e.Queue, e.JobID, req.ResetAttempts)
	case drover.StateFailed, drover.StateCompleted, drover.StateDelayed:
		e.Detail += " seen=" + string(req.From)
		from, err = h.ins.RetryJobIn(r.Context(), e.Queue, e.JobID, req.From, req.ResetAttempts)
	default:
		return badRequest("from must be failed, completed or delayed (the states a job is retried from), got %q", req.From)
	}
	if err != nil {
		if from != "" {
			e.Detail += " found=" + string(from)
		}
		return err
	}
	e.Detail += " from=" + string(from)
	e.Jobs = 1
	writeJSON(w, http.StatusOK, map[string]any{"retried": 1, "from": from})
	return nil
}

// PriorityRequest is the body of POST
// /api/queues/{queue}/jobs/{id}/priority.
type PriorityRequest struct {
	// Priority is the job's new priority, 0 (none) to drover.MaxPriority;
	// 1 runs first.
	Priority *int `json:"priority"`
	// Lifo puts the job first among the jobs of its priority.
	Lifo bool `json:"lifo"`
}

func (h *Handler) changePriority(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req PriorityRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Priority == nil {
		return badRequest("priority is required: 0 (none) to %d", drover.MaxPriority)
	}
	e.Detail = fmt.Sprintf("priority=%d lifo=%t", *req.Priority, req.Lifo)
	if *req.Priority < 0 || *req.Priority > drover.MaxPriority {
		return badRequest("priority must be between 0 (none) and %d, got %d", drover.MaxPriority, *req.Priority)
	}
	return oneJob(w, e, "changed", h.ins.ChangePriority(r.Context(), e.Queue, e.JobID, *req.Priority, req.Lifo))
}

// DelayRequest is the body of POST /api/queues/{queue}/jobs/{id}/delay.
type DelayRequest struct {
	// DelayMs makes the delayed job due this many milliseconds from now
	// (0: due now).
	DelayMs *int64 `json:"delayMs"`
}

// maxDelayMs bounds a change of delay: about 100 years.
const maxDelayMs = 100 * 365 * 24 * int64(time.Hour/time.Millisecond)

func (h *Handler) changeDelay(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req DelayRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.DelayMs == nil {
		return badRequest("delayMs is required: how many milliseconds from now the job is due")
	}
	e.Detail = fmt.Sprintf("delayMs=%d", *req.DelayMs)
	if *req.DelayMs < 0 || *req.DelayMs > maxDelayMs {
		return badRequest("delayMs must be between 0 and %d (about 100 years), got %d", maxDelayMs, *req.DelayMs)
	}
	return oneJob(w, e, "changed", h.ins.ChangeDelay(r.Context(), e.Queue, e.JobID, time.Duration(*req.DelayMs)*time.Millisecond))
}

func (h *Handler) promoteJob(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	return oneJob(w, e, "promoted", h.ins.PromoteJob(r.Context(), e.Queue, e.JobID))
}

// CancelJobRequest is the body of POST /api/queues/{queue}/jobs/{id}/cancel.
type CancelJobRequest struct {
	// Reason is stored as the job's failedReason "cancelled: <reason>".
	Reason string `json:"reason"`
	// Retry retries the job per its attempts instead of failing it for good.
	Retry bool `json:"retry"`
	// From is the state the job was seen in (the page sends the one it
	// shows): active, or waiting, paused, prioritized or delayed, when a job
	// a worker took since is refused (409) and its attempt goes on, so a
	// confirmed "cancel this queued job" does not stop a running attempt;
	// seen active, a job no worker runs now (its attempt failed and it went
	// back to waiting or delayed) is refused (409) and keeps its attempts,
	// so a confirmed "cancel the running attempt" does not fail a queued
	// job for good. "" cancels the job in whichever of those states it is.
	From drover.JobState `json:"from"`
}

func (h *Handler) cancelJob(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req CancelJobRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	e.Detail = fmt.Sprintf("reason=%q retry=%t", req.Reason, req.Retry)
	switch req.From {
	case "":
		return oneJob(w, e, "cancelled", h.ins.CancelJob(r.Context(), e.Queue, e.JobID, req.Reason, req.Retry))
	case drover.StateActive, drover.StateWaiting, drover.StatePaused, drover.StatePrioritized, drover.StateDelayed:
		e.Detail += " seen=" + string(req.From)
		return oneJob(w, e, "cancelled", h.ins.CancelJobIn(r.Context(), e.Queue, e.JobID, req.From, req.Reason, req.Retry))
	default:
		return badRequest("from must be active, waiting, paused, prioritized or delayed (the states a job is cancelled in), got %q", req.From)
	}
}

func (h *Handler) removeJob(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	return oneJob(w, e, "removed", h.ins.RemoveJob(r.Context(), e.Queue, e.JobID))
}

// RetryJobsRequest is the body of POST /api/queues/{queue}/retry.
type RetryJobsRequest struct {
	// State is failed (default) or completed.
	State drover.JobState `json:"state"`
	// Filter in inspect.ParseFilter syntax; "" = every job of State.
	Filter        string `json:"filter"`
	ResetAttempts bool   `json:"resetAttempts"`
	// IncludeUnrecoverable retries jobs that failed as unrecoverable too
	// (default: they are left alone).
	IncludeUnrecoverable bool `json:"includeUnrecoverable"`
	// DryRun answers with the count and a sample of the jobs that would be
	// retried, at once. Else the retry starts as a background operation
	// and the answer (202 Accepted) is the Operation to follow.
	DryRun bool `json:"dryRun"`
	// Limit retries at most this many jobs. 0 = all.
	Limit int `json:"limit"`
	// OlderThan retries only jobs that finished at or before this instant
	// (epoch ms; null = no bound). The page sends the dry run's
	// newestFinished, so a confirmed retry moves the jobs it showed and
	// none that failed after.
	OlderThan inspect.Instant `json:"olderThan"`
}

func (h *Handler) retryJobs(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req RetryJobsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	// What was asked, as sent, for the entry of a request refused below
	// (a bad filter or state); replaced by the parsed form once it passes.
	e.Detail = fmt.Sprintf("state=%s filter=%q dryRun=%t limit=%d", req.State, req.Filter, req.DryRun, req.Limit)
	// The request's own names in its errors, not inspect.RetryOptions'.
	if req.State != "" && req.State != drover.StateFailed && req.State != drover.StateCompleted {
		return badRequest("state must be failed or completed (the states a bulk retry takes jobs from), got %q", req.State)
	}
	if req.Limit < 0 {
		return badRequest("limit must not be negative, got %d", req.Limit)
	}
	filter, err := inspect.ParseFilter(req.Filter)
	if err != nil {
		return badRequest("%v", err)
	}
	e.Detail = fmt.Sprintf("state=%s filter=%q resetAttempts=%t includeUnrecoverable=%t dryRun=%t limit=%d",
		cmpState(req.State), filter.String(), req.ResetAttempts, req.IncludeUnrecoverable, req.DryRun, req.Limit)
	if !req.OlderThan.IsZero() {
		e.Detail += " olderThan=" + strconv.FormatInt(req.OlderThan.UnixMilli(), 10)
	}
	opts := &inspect.RetryOptions{
		State: req.State, Filter: filter, ResetAttempts: req.ResetAttempts, IncludeUnrecoverable: req.IncludeUnrecoverable,
		DryRun: req.DryRun, Limit: req.Limit, OlderThan: req.OlderThan.Time,
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if req.DryRun {
		markDryRun(r.Context())
		res, err := h.ins.RetryJobs(r.Context(), e.Queue, opts)
		if err != nil {
			return err
		}
		e.Detail += fmt.Sprintf(" matched=%d excluded=%d", res.Matched, res.Excluded)
		e.JobIDs = auditIDs(res.IDs)
		clipReasons(res.Sample)
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	// An unknown queue is refused before anything starts.
	if _, err := h.ins.QueueInfo(r.Context(), e.Queue); err != nil {
		return err
	}
	e.audited = make(chan struct{}) // closed by act's record of e
	entry := *e
	//nolint:contextcheck // the operation outlives the request on purpose: Handler.Close ends it
	op, err := h.ops.start(Operation{Kind: "retry-jobs", Queue: e.Queue, User: e.User, Detail: e.Detail, Started: h.now()}, entry,
		func(op Operation, ids []string) { h.finished(entry, op, ids) }, //nolint:contextcheck // audited after the request has ended
		func(ctx context.Context, progress func(done, total int)) (*inspect.RetryResult, error) {
			o := *opts
			o.Progress = progress
			return h.ins.RetryJobs(ctx, e.Queue, &o)
		})
	if err != nil {
		return &httpError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	e.Detail += " operation=" + op.ID + " started"
	writeJSON(w, http.StatusAccepted, op)
	return nil
}

// requestAuditWait bounds how long an operation's end entry waits for the
// entry of the request that started it: longer than record's own bound.
const requestAuditWait = 10 * time.Second

// finished audits the end of a background operation, in the name of whoever
// started it.
func (h *Handler) finished(start AuditEntry, op Operation, ids []string) {
	if start.audited != nil {
		select { // the request's own entry first (record bounds its wait)
		case <-start.audited:
		case <-time.After(requestAuditWait):
		}
	}
	e := start
	e.audited = nil
	e.Time, e.Action = h.now(), start.Action+"-finished"
	e.Jobs = op.Retried
	e.Detail = fmt.Sprintf("operation=%s %s: retried %d, skipped %d of %d", op.ID, op.Status, op.Retried, op.Skipped, op.Total)
	// The jobs retried: those selected less those skipped, which the
	// detail names with why. The entry listed every job selected beside
	// "retried 2", so a job a worker held read as retried.
	skipped := make(map[string]bool, len(op.Skips))
	for _, s := range op.Skips {
		skipped[s.ID] = true
		e.Detail += fmt.Sprintf("; skipped %s (%s)", s.ID, s.Reason)
	}
	if n := op.Skipped - len(op.Skips); n > 0 {
		e.Detail += fmt.Sprintf("; %d more skipped, not named: the jobs listed may include them", n)
	}
	e.JobIDs = nil
	for _, id := range ids {
		if !skipped[id] {
			e.JobIDs = append(e.JobIDs, id)
		}
	}
	e.Outcome = "ok"
	switch op.Status {
	case OperationCancelled:
		e.Outcome = "cancelled"
	case OperationFailed:
		e.Outcome, e.Error = "error", op.Error
	}
	h.record(context.Background(), e)
}

func cmpState(s drover.JobState) drover.JobState {
	if s == "" {
		return drover.StateFailed
	}
	return s
}

// PromoteRequest is the optional body of POST /api/queues/{queue}/promote.
type PromoteRequest struct {
	// Limit, when positive, promotes at most that many delayed jobs, those
	// due first: the count the operator confirmed, so jobs delayed since
	// the page counted stay delayed. Without it every delayed job runs.
	Limit int `json:"limit,omitempty"`
}

func (h *Handler) promoteAll(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req PromoteRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Limit < 0 {
		return badRequest("limit must not be negative, got %d", req.Limit)
	}
	if req.Limit > 0 {
		e.Detail = fmt.Sprintf("limit=%d", req.Limit)
	}
	// The entry names the first jobs promoted, those due first, as a bulk
	// retry's and a clean's do; it said how many only.
	n, ids, left, err := h.ins.PromoteNamed(r.Context(), e.Queue, req.Limit, AuditJobIDsMax)
	e.Jobs, e.JobIDs = n, ids
	if err != nil {
		return err
	}
	if req.Limit == 0 {
		writeJSON(w, http.StatusOK, map[string]int64{"promoted": int64(n)})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]int64{"promoted": int64(n), "left": left})
	return nil
}

func (h *Handler) pause(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	if err := h.ins.Pause(r.Context(), e.Queue); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"paused": true})
	return nil
}

func (h *Handler) resume(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	if err := h.ins.Resume(r.Context(), e.Queue); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"paused": false})
	return nil
}

// LimitsRequest is the body of POST /api/queues/{queue}/limits: the changes
// to make, in this order; what it leaves out stays as it is. The answer is
// the queue's limits after them (inspect.Limits). Every worker, Node's and
// drover's, obeys the global limits; Block stops the workers that apply a
// limit (BullMQ's queue.rateLimit).
type LimitsRequest struct {
	// Concurrency sets the global concurrency (at least 1);
	// RemoveConcurrency lifts it. At most one of the two.
	Concurrency       *int `json:"concurrency"`
	RemoveConcurrency bool `json:"removeConcurrency"`
	// RateLimit sets the global rate limit; RemoveRateLimit lifts it. At
	// most one of the two.
	RateLimit       *RateLimitRequest `json:"rateLimit"`
	RemoveRateLimit bool              `json:"removeRateLimit"`
	// BlockMs (> 0) blocks the queue for that long; Unblock ends a block, or
	// the current rate-limit window, now. At most one of the two.
	BlockMs int64 `json:"blockMs"`
	Unblock bool  `json:"unblock"`
}

// RateLimitRequest is at most Max activations per DurationMs.
type RateLimitRequest struct {
	Max        int   `json:"max"`
	DurationMs int64 `json:"durationMs"`
}

// setLimits is POST /api/queues/{queue}/limits (LimitsRequest); the
// change is inspect's (Inspector.SetLimits), checked whole before anything
// changes.
func (h *Handler) setLimits(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req LimitsRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Concurrency != nil && *req.Concurrency < 1 {
		return badRequest("concurrency must be at least 1, got %d", *req.Concurrency)
	}
	// Milliseconds past what a time.Duration holds would wrap (to a
	// negative value, or a positive one other than asked for).
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	if req.BlockMs > maxMs {
		return badRequest("blockMs must be at most %d, got %d", maxMs, req.BlockMs)
	}
	if rl := req.RateLimit; rl != nil && rl.DurationMs > maxMs {
		return badRequest("rateLimit.durationMs must be at most %d, got %d", maxMs, rl.DurationMs)
	}
	c := inspect.LimitsChange{RemoveConcurrency: req.RemoveConcurrency, RemoveRateLimit: req.RemoveRateLimit,
		Block: time.Duration(req.BlockMs) * time.Millisecond, Unblock: req.Unblock}
	if req.Concurrency != nil {
		c.Concurrency = *req.Concurrency
	}
	if rl := req.RateLimit; rl != nil {
		c.RateLimit = &inspect.RateLimit{Max: rl.Max, Duration: time.Duration(rl.DurationMs) * time.Millisecond}
	}
	if err := c.Validate(); err != nil {
		return err // ErrInvalidOption: 400, Redis untouched
	}
	e.Detail = c.String()
	info, err := h.ins.SetLimits(r.Context(), e.Queue, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info.Limits)
	return nil
}

// CleanRequest is the body of POST /api/queues/{queue}/clean.
type CleanRequest struct {
	// State to clean: completed (default), failed, delayed, waiting, ...
	State drover.JobState `json:"state"`
	// Grace keeps jobs younger than this, as a Go duration ("1h", "0s").
	// Default inspect.CleanGraceDefault (1h), as `drover clean`.
	Grace string `json:"grace"`
	// Limit removes at most this many jobs (0 = the engine's cap, 10000).
	Limit int `json:"limit"`
	// DryRun removes nothing and answers how many jobs the clean would
	// remove now ({"matched": n}), for a confirmation that says how many;
	// the page then cleans with that many as the limit.
	DryRun bool `json:"dryRun"`
}

func (h *Handler) clean(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req CleanRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.State == "" {
		req.State = drover.StateCompleted
	}
	// As sent, for the entry of a request refused below.
	e.Detail = fmt.Sprintf("state=%s grace=%q limit=%d dryRun=%t", req.State, req.Grace, req.Limit, req.DryRun)
	grace := inspect.CleanGraceDefault
	if req.Grace != "" {
		var err error
		if grace, err = time.ParseDuration(req.Grace); err != nil {
			return badRequest("grace must be a duration such as 1h or 0s, got %q", req.Grace)
		}
		if grace < 0 {
			return badRequest("grace must not be negative, got %q", req.Grace)
		}
	}
	if req.Limit < 0 {
		return badRequest("limit must not be negative, got %d", req.Limit)
	}
	e.Detail = fmt.Sprintf("state=%s grace=%s limit=%d dryRun=%t", req.State, grace, req.Limit, req.DryRun)
	if req.DryRun {
		markDryRun(r.Context())
		ids, err := h.ins.CleanCandidates(r.Context(), e.Queue, req.State, grace, req.Limit)
		if err != nil {
			return err
		}
		e.Detail += fmt.Sprintf(" matched=%d", len(ids))
		e.JobIDs = auditIDs(ids)
		writeJSON(w, http.StatusOK, map[string]int{"matched": len(ids)})
		return nil
	}
	ids, err := h.ins.Clean(r.Context(), e.Queue, req.State, grace, req.Limit)
	e.Jobs, e.JobIDs = len(ids), auditIDs(ids)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"removed": len(ids)})
	return nil
}

// ObliterateRequest is the body of POST /api/queues/{queue}/obliterate.
type ObliterateRequest struct {
	// Force deletes active jobs too.
	Force bool `json:"force"`
	// Expected is the number of jobs the confirmation named (the page
	// sends it): a queue that has more now is refused (409) and left as it
	// is, so an obliterate confirmed for 3 jobs does not delete the 3,000
	// added since. Null: no check.
	Expected *int64 `json:"expected"`
}

// grewError refuses a drain or obliterate confirmed for fewer jobs than
// there are now.
func grewError(queue, what string, now, expected int64) error {
	return &httpError{status: http.StatusConflict, msg: fmt.Sprintf(
		"%s has %d %s now, %d when you confirmed: nothing was deleted; ask again to see the new count", queue, now, what, expected)}
}

func (h *Handler) obliterate(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req ObliterateRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	info, err := h.ins.QueueInfo(r.Context(), e.Queue)
	if err != nil {
		return err
	}
	// The count found goes in the detail: the jobs changed are counted
	// once the obliterate is done (a refused one, say with jobs running,
	// was audited as changing every job of the queue).
	found := int(info.Counts.Total())
	e.Detail = fmt.Sprintf("force=%t found=%d", req.Force, found)
	if req.Expected != nil {
		e.Detail += fmt.Sprintf(" expected=%d", *req.Expected)
		if *req.Expected < 0 {
			return badRequest("expected must not be negative, got %d", *req.Expected)
		}
		if int64(found) > *req.Expected {
			return grewError(e.Queue, "jobs", int64(found), *req.Expected)
		}
	}
	if err := h.ins.Obliterate(r.Context(), e.Queue, req.Force); err != nil {
		return err
	}
	e.Jobs = found
	writeJSON(w, http.StatusOK, map[string]int{"removed": found})
	return nil
}

// DrainRequest is the body of POST /api/queues/{queue}/drain.
type DrainRequest struct {
	// Delayed deletes delayed jobs too.
	Delayed bool `json:"delayed"`
	// Expected is the number of jobs the confirmation named (waiting,
	// paused and prioritized, and delayed with Delayed; the page sends
	// it): a queue that has more of them now is refused (409) and left as
	// it is. Null: no check.
	Expected *int64 `json:"expected"`
}

// drain deletes the jobs of a queue that wait to run, as `drover drain`
// (inspect.Inspector.DrainNamed): running and finished jobs stay. Its
// audit entry names the first AuditJobIDsMax jobs deleted.
func (h *Handler) drain(w http.ResponseWriter, r *http.Request, e *AuditEntry) error {
	var req DrainRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	e.Detail = fmt.Sprintf("delayed=%t", req.Delayed)
	if req.Expected != nil {
		e.Detail += fmt.Sprintf(" expected=%d", *req.Expected)
		if *req.Expected < 0 {
			return badRequest("expected must not be negative, got %d", *req.Expected)
		}
		info, err := h.ins.QueueInfo(r.Context(), e.Queue)
		if err != nil {
			return err
		}
		c := info.Counts
		now := c.Waiting + c.Paused + c.Prioritized
		if req.Delayed {
			now += c.Delayed
		}
		if now > *req.Expected {
			return grewError(e.Queue, "jobs waiting to run", now, *req.Expected)
		}
	}
	n, ids, err := h.ins.DrainNamed(r.Context(), e.Queue, req.Delayed, AuditJobIDsMax)
	if err != nil {
		return err
	}
	e.Jobs, e.JobIDs = n, ids
	writeJSON(w, http.StatusOK, map[string]int{"removed": n})
	return nil
}

// findJob is GET /api/jobs/{id}: the queues that hold a job with this id,
// and the queues that could not be searched (a key of another type).
func (h *Handler) findJob(w http.ResponseWriter, r *http.Request) {
	matches, err := h.ins.FindJob(r.Context(), r.PathValue("id"))
	skipped := []inspect.SkippedQueue{}
	if s, partial := errors.AsType[*inspect.SkippedQueuesError](err); partial {
		skipped, err = s.Skipped, nil
	}
	reply(w, map[string]any{"id": r.PathValue("id"), "matches": matches, "skipped": skipped}, err)
}

// failures is GET /api/queues/{queue}/failures: failed jobs by error;
// ?since=1h keeps the jobs that failed in the last hour.
func (h *Handler) failures(w http.ResponseWriter, r *http.Request) {
	var within time.Duration
	if s := r.URL.Query().Get("since"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("since must be a positive duration such as 1h or 15m, got %q", s))
			return
		}
		within = d
	}
	rep, err := h.ins.FailureGroupsWithin(r.Context(), r.PathValue("queue"), within)
	reply(w, rep, err)
}

// conflicts is GET /api/queues/{queue}/conflicts: retries refused because
// a worker held the job's lock, newest first.
func (h *Handler) conflicts(w http.ResponseWriter, r *http.Request) {
	if _, err := h.ins.QueueInfo(r.Context(), r.PathValue("queue")); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"conflicts": h.ins.Conflicts(r.PathValue("queue"))})
}

// throughput is GET /api/queues/{queue}/throughput: completed and failed
// jobs per minute over the last hour.
func (h *Handler) throughput(w http.ResponseWriter, r *http.Request) {
	rep, err := h.ins.Throughput(r.Context(), r.PathValue("queue"), inspect.ThroughputSpanDefault, inspect.ThroughputStepDefault)
	reply(w, rep, err)
}

// workers is GET /api/workers: the worker connections of every queue under
// the prefix (?queue= for one), as BullMQ's getWorkers finds them.
//
// On a Redis that refuses CLIENT LIST the answer is still 200: no worker,
// and unavailable says why, for the page to show instead of an error.
func (h *Handler) workers(w http.ResponseWriter, r *http.Request) {
	ws, err := h.ins.Workers(r.Context(), r.URL.Query().Get("queue"))
	if errors.Is(err, inspect.ErrWorkersHidden) {
		writeJSON(w, http.StatusOK, map[string]any{"workers": []inspect.WorkerInfo{}, "unavailable": err.Error()})
		return
	}
	reply(w, map[string]any{"workers": ws}, err)
}
