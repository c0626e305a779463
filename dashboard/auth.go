package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	// Token is a bearer token. "" = none.
	Token string
	// Password is the basic-auth password. "" = none.
	Password string
}

// Auth lists the dashboard's users.
type Auth struct {
	Users []User
}

func (a *Auth) validate() error {
	if len(a.Users) == 0 {
		return errors.New("dashboard: Options.Auth must list at least one user")
	}
	seen := map[string]bool{}
	for i, u := range a.Users {
		switch {
		case u.Name == "" || strings.ContainsAny(u.Name, "|:"):
			return fmt.Errorf("dashboard: Options.Auth.Users[%d].Name must be non-empty without '|' or ':', got %q", i, u.Name)
		case seen[u.Name]:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d].Name %q is listed twice", i, u.Name)
		case u.Role.rank() == 0:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d].Role must be viewer, operator or admin, got %q", i, u.Role)
		case u.Token == "" && u.Password == "":
			return fmt.Errorf("dashboard: Options.Auth.Users[%d] (%s) needs a Token or a Password", i, u.Name)
		case u.Token != "" && len(u.Token) < 16:
			return fmt.Errorf("dashboard: Options.Auth.Users[%d] (%s): Token must be at least 16 characters", i, u.Name)
		}
		seen[u.Name] = true
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
}

type principalKey struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

const sessionCookie = "drover_session"

// sessionTTL is how long a UI sign-in lasts.
const sessionTTL = 12 * time.Hour

// authenticate finds who makes r. ok is false when the request carries no
// valid credentials and anonymous access is off.
func (h *Handler) authenticate(r *http.Request) (principal, bool) {
	if h.opts.Auth == nil {
		return principal{Name: "anonymous", Role: h.opts.AnonymousRole, Via: "anonymous"}, true
	}
	if authz := r.Header.Get("Authorization"); authz != "" {
		if tok, ok := strings.CutPrefix(authz, "Bearer "); ok {
			if u := h.userByToken(tok); u != nil {
				return principal{Name: u.Name, Role: u.Role, Via: "token"}, true
			}
			return principal{}, false
		}
		if name, pass, ok := r.BasicAuth(); ok {
			for _, u := range h.opts.Auth.Users {
				if u.Password != "" && equal(u.Name, name) && equal(u.Password, pass) {
					return principal{Name: u.Name, Role: u.Role, Via: "basic"}, true
				}
			}
		}
		return principal{}, false
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if p, ok := h.readSession(c.Value); ok {
			return p, true
		}
	}
	return principal{}, false
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

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (h *Handler) mac(parts ...string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(strings.Join(parts, "|")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession signs a session cookie value for user u.
func (h *Handler) newSession(u *User, now time.Time) string {
	exp := strconv.FormatInt(now.Add(sessionTTL).Unix(), 10)
	name := base64.RawURLEncoding.EncodeToString([]byte(u.Name))
	return name + "." + exp + "." + h.mac("session", u.Name, string(u.Role), exp)
}

// readSession checks a session cookie. A user removed or given another role
// since signing in is signed out.
func (h *Handler) readSession(v string) (principal, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return principal{}, false
	}
	nameb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return principal{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || time.Now().Unix() > exp {
		return principal{}, false
	}
	for _, u := range h.opts.Auth.Users {
		if u.Name == string(nameb) && hmac.Equal([]byte(parts[2]), []byte(h.mac("session", u.Name, string(u.Role), parts[1]))) {
			return principal{Name: u.Name, Role: u.Role, Via: "session"}, true
		}
	}
	return principal{}, false
}

// csrfToken is the token p must send in the X-CSRF-Token header of every
// mutating request. A page on another origin cannot read it (GET
// /api/session answers no cross-origin reads), so it cannot forge requests
// the browser would send with p's cookie or basic-auth credentials.
func (h *Handler) csrfToken(p principal) string { return h.mac("csrf", p.Name, string(p.Role), p.Via) }

const csrfHeader = "X-CSRF-Token"

// checkCSRF verifies a mutating request's token and, when the browser says
// where the request came from, that it came from this origin.
func (h *Handler) checkCSRF(r *http.Request, p principal) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", site)
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return fmt.Errorf("cross-origin request from %s", origin)
	}
	tok := r.Header.Get(csrfHeader)
	if tok == "" {
		return errors.New("missing " + csrfHeader + " header")
	}
	if !hmac.Equal([]byte(tok), []byte(h.csrfToken(p))) {
		return errors.New("bad " + csrfHeader + " header")
	}
	return nil
}

func sameOrigin(origin string, r *http.Request) bool {
	_, host, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(host, r.Host)
}
