package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seed40057009/drover/internal/logkey"
)

// Role is what a user may do. Each role may do what the roles before it may.
type Role string

const (
	// RoleViewer reads everything: queues, jobs, timelines, alerts, metrics.
	RoleViewer Role = "viewer"
	// RoleOperator also retries and promotes jobs.
	RoleOperator Role = "operator"
	// RoleAdmin also removes jobs, cleans, pauses, resumes and obliterates
	// queues, and reads the audit log.
	RoleAdmin Role = "admin"
)

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Allows reports whether r may do what need requires.
func (r Role) Allows(need Role) bool { return r.rank() >= need.rank() && r.rank() > 0 }

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if r.rank() == 0 {
		return "", fmt.Errorf("unknown role %q (want viewer, operator or admin)", s)
	}
	return r, nil
}

// User is someone who may use the dashboard. A user signs in with a bearer
// token (Authorization: Bearer <Token>, or the UI's sign-in form) or with
// HTTP basic auth (Name and Password); set one or both.
type User struct {
	// Name identifies the user in the audit log. Required, unique.
	Name string
	// Role is what the user may do. Required.
	Role Role
	// Token is a bearer token, at least MinSecretLength characters. "" =
	// none.
	Token string
	// Password is the basic-auth and sign-in form password, at least
	// MinSecretLength characters. "" = none.
	Password string
}

// MinSecretLength is the shortest token or password a User may have.
const MinSecretLength = 16

// Auth lists the dashboard's users.
type Auth struct {
	Users []User
}

func (a *Auth) validate() error {
	if len(a.Users) == 0 {
		return errors.New("dashboard: Options.Auth must list at least one user")
	}
	seen := map[string]bool{}
	// A bearer token names its user: two users sharing one would both sign
	// in as the last of them (a viewer as an admin, an admin audited as
	// someone else).
	tokens := map[string]int{}
	for i, u := range a.Users {
		first, shared := tokens[u.Token]
		switch {
		case u.Name == "" || strings.ContainsAny(u.Name, "|:"):
			return fmt.Errorf("dashboard: Options.Auth.Users[%d].Name must be non-empty without '|' or ':', got %q", i, u.Name)
		case seen[u.Name]:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d].Name %q is listed twice", i, u.Name)
		case u.Role.rank() == 0:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d].Role must be viewer, operator or admin, got %q", i, u.Role)
		case u.Token == "" && u.Password == "":
			return fmt.Errorf("dashboard: Options.Auth.Users[%d] (%s) needs a Token or a Password", i, u.Name)
		case u.Token != "" && len(u.Token) < MinSecretLength:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d] (%s): Token must be at least %d characters", i, u.Name, MinSecretLength)
		case u.Password != "" && len(u.Password) < MinSecretLength:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d] (%s): Password must be at least %d characters", i, u.Name, MinSecretLength)
		case u.Token != "" && shared:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d] (%s) has the same Token as Users[%d] (%s): each user needs a token of their own", i, u.Name, first, a.Users[first].Name)
		}
		seen[u.Name] = true
		if u.Token != "" {
			tokens[u.Token] = i
		}
	}
	return nil
}

func (a *Auth) hasBasic() bool {
	for _, u := range a.Users {
		if u.Password != "" {
			return true
		}
	}
	return false
}

// ParseUser reads a user written NAME:SECRET:ROLE, the form the CLI's
// --token and --user flags take; asToken says whether SECRET is a bearer
// token or a basic-auth password.
func ParseUser(spec string, asToken bool) (User, error) {
	name, rest, ok1 := strings.Cut(spec, ":")
	i := strings.LastIndexByte(rest, ':')
	if !ok1 || i < 0 {
		return User{}, errors.New("want NAME:SECRET:ROLE")
	}
	secret, roleName := rest[:i], rest[i+1:]
	role, err := ParseRole(roleName)
	if err != nil {
		return User{}, err
	}
	u := User{Name: name, Role: role}
	if asToken {
		u.Token = secret
	} else {
		u.Password = secret
	}
	return u, nil
}

// principal is who makes a request.
type principal struct {
	Name string
	Role Role
	// Via is how they signed in: anonymous, token, basic or session.
	Via string
	// csrf is the session's CSRF token (Via session).
	csrf string
}

type principalKey struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

const sessionCookie = "drover_session"

// sessionTTL is how long a UI sign-in lasts.
const sessionTTL = 12 * time.Hour

// authFailure is why a request has no principal: the status to answer (401,
// 429 or 503) and, for 429, how long to wait.
type authFailure struct {
	status     int
	msg        string
	retryAfter time.Duration
}

func (f *authFailure) write(w http.ResponseWriter) {
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter.Round(time.Second)/time.Second)+1))
	}
	writeError(w, f.status, f.msg)
}

var errSignIn = &authFailure{status: http.StatusUnauthorized, msg: "sign in first"}

// authenticate finds who makes r. Credentials in the Authorization header
// are throttled like the sign-in form: after a few failures from one
// client or for one user, every attempt waits (429), right or wrong.
func (h *Handler) authenticate(r *http.Request) (principal, *authFailure) {
	if h.opts.Auth == nil {
		return principal{Name: "anonymous", Role: h.opts.AnonymousRole, Via: "anonymous"}, nil
	}
	ctx := r.Context()
	if authz := r.Header.Get("Authorization"); authz != "" {
		var u *User
		var p principal
		parties := []throttleKey{clientOf(h.remote(r))}
		user := ""
		if tok, ok := strings.CutPrefix(authz, "Bearer "); ok {
			if u = h.userByToken(tok); u != nil {
				p = principal{Name: u.Name, Role: u.Role, Via: "token"}
			}
		} else if name, pass, ok := r.BasicAuth(); ok {
			user = name
			if u = h.userByPassword(name, pass); u != nil {
				p = principal{Name: u.Name, Role: u.Role, Via: "basic"}
			}
		}
		if h.knownUser(user) {
			parties = append(parties, throttleKey{"user", user})
		}
		if f := h.signIn(r, "sign-in", user, u != nil, parties); f != nil {
			return principal{}, f
		}
		return p, nil
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		p, ok, err := h.sessionPrincipal(ctx, c.Value)
		if err != nil {
			h.opts.Logger.WarnContext(ctx, "read session", slog.Any(logkey.Error, err))
			return principal{}, &authFailure{status: http.StatusServiceUnavailable, msg: "sessions unavailable: " + err.Error()}
		}
		if ok {
			return p, nil
		}
	}
	return principal{}, errSignIn
}

// sessionPrincipal is who session id signs in: ok is false when it has
// ended (signed out, revoked, expired) or its user was removed or given
// another role since signing in.
func (h *Handler) sessionPrincipal(ctx context.Context, id string) (principal, bool, error) {
	sess, ok, err := h.store.readSession(ctx, id)
	if err != nil || !ok {
		return principal{}, false, err
	}
	for _, u := range h.opts.Auth.Users {
		if u.Name == sess.User && u.Role == sess.Role {
			return principal{Name: u.Name, Role: u.Role, Via: "session", csrf: sess.CSRF}, true, nil
		}
	}
	return principal{}, false, nil
}

// signIn throttles a sign-in attempt by parties and records it in the
// security log when it fails or is throttled. ok says the credentials were
// right. It returns nil when the attempt may go ahead.
func (h *Handler) signIn(r *http.Request, action, user string, ok bool, parties []throttleKey) *authFailure {
	ctx := r.Context()
	now := h.now()
	e := AuditEntry{Log: AuditSecurity, Time: now, Action: action, User: user, Remote: h.remote(r)}
	wait, err := h.store.throttled(ctx, now, parties...)
	if err != nil {
		h.opts.Logger.WarnContext(ctx, "sign-in throttle", slog.Any(logkey.Error, err))
		return &authFailure{status: http.StatusServiceUnavailable, msg: "sign-in unavailable: " + err.Error()}
	}
	if wait > 0 {
		e.Outcome, e.Error = "throttled", fmt.Sprintf("too many failed sign-ins; retry in %s", wait.Round(time.Second))
		h.record(ctx, e)
		return &authFailure{status: http.StatusTooManyRequests, msg: e.Error, retryAfter: wait}
	}
	if !ok {
		if err := h.store.failed(ctx, now, parties...); err != nil {
			h.opts.Logger.WarnContext(ctx, "sign-in throttle", slog.Any(logkey.Error, err))
		}
		e.Outcome, e.Error = "denied", "wrong credentials"
		h.record(ctx, e)
		return &authFailure{status: http.StatusUnauthorized, msg: "wrong credentials"}
	}
	return nil
}

func (h *Handler) knownUser(name string) bool {
	if name == "" || h.opts.Auth == nil {
		return false
	}
	for _, u := range h.opts.Auth.Users {
		if u.Name == name {
			return true
		}
	}
	return false
}

func (h *Handler) userByToken(tok string) *User {
	var found *User
	for i := range h.opts.Auth.Users {
		u := &h.opts.Auth.Users[i]
		// Compare with every token so timing tells nothing about which matched.
		if u.Token != "" && equal(u.Token, tok) {
			found = u
		}
	}
	return found
}

func (h *Handler) userByPassword(name, pass string) *User {
	var found *User
	for i := range h.opts.Auth.Users {
		u := &h.opts.Auth.Users[i]
		if u.Password != "" && equal(u.Name, name) && equal(u.Password, pass) {
			found = u
		}
	}
	return found
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (h *Handler) mac(parts ...string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(strings.Join(parts, "|")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfToken is the token p must send in the X-CSRF-Token header of every
// mutating request. A page on another origin cannot read it (GET
// /api/session answers no cross-origin reads), so it cannot forge requests
// the browser would send with p's cookie or basic-auth credentials. A
// session's token is its own, random, and dies with it; requests with
// basic-auth or bearer credentials get one derived from the user.
func (h *Handler) csrfToken(p principal) string {
	if p.Via == "session" {
		return p.csrf
	}
	return h.mac("csrf", p.Name, string(p.Role), p.Via)
}

const csrfHeader = "X-CSRF-Token"

// checkCSRF verifies a mutating request's token and, when the browser says
// where the request came from, that it came from this origin.
func (h *Handler) checkCSRF(r *http.Request, p principal) error {
	if err := fromElsewhere(r); err != nil {
		return err
	}
	tok := r.Header.Get(csrfHeader)
	if tok == "" {
		return errors.New("missing " + csrfHeader + " header")
	}
	if want := h.csrfToken(p); want == "" || !hmac.Equal([]byte(tok), []byte(want)) {
		return errors.New("bad " + csrfHeader + " header")
	}
	return nil
}

// fromElsewhere refuses a request the browser says came from another
// origin (another site, or a sibling subdomain, which a SameSite cookie
// still goes to).
func fromElsewhere(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", site)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return fmt.Errorf("cross-origin request from %s", origin)
	}
	return nil
}

func sameOrigin(origin string, r *http.Request) bool {
	_, host, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(host, r.Host)
}
