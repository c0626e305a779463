package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["dashboard"] = commandInfo{
		summary: "serve the web dashboard (127.0.0.1 unless users are configured)",
		make:    func(m *Main) command { return &dashboardCmd{out: m.Stdout} },
	}
}

type dashboardCmd struct {
	out io.Writer
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func (c *dashboardCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("dashboard", c.out, "Usage: drover dashboard [--addr 127.0.0.1:7373] [--redis URL] [--prefix P] [--token NAME:TOKEN:ROLE]... [--user NAME:PASSWORD:ROLE]...\n"+
		"                        [--tls-cert FILE --tls-key FILE | --secure-cookies]\n\n"+
		"Serves the dashboard. Roles: viewer (read), operator (also retry, promote), admin (also remove, clean, pause, obliterate).")
	addr := fs.String("addr", envOr("DROVER_DASHBOARD_ADDR", dashboard.AddrDefault), "listen address; beyond loopback it needs --token or --user (env DROVER_DASHBOARD_ADDR)")
	var tokens, users listFlag
	fs.Var(&tokens, "token", "a user signing in with a bearer token, NAME:TOKEN:ROLE (repeatable; env DROVER_DASHBOARD_TOKENS, comma-separated)")
	fs.Var(&users, "user", "a user signing in with a password, NAME:PASSWORD:ROLE (repeatable; env DROVER_DASHBOARD_USERS, comma-separated)")
	readOnly := fs.Bool("read-only", false, "refuse every action; only look")
	anonRole := fs.String("anonymous-role", "", "role of everyone when no user is configured (default admin on loopback)")
	auditPath := fs.String("audit-log", "", "append audit entries to this file as JSON lines (default: print them)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this PEM certificate (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "the PEM private key of --tls-cert")
	secureCookies := fs.Bool("secure-cookies", false, "mark the sign-in cookie Secure: behind a TLS proxy (implied by --tls-cert)")
	trustXFF := fs.Bool("trust-forwarded-for", false, "behind a reverse proxy: throttle and audit by the client address in its X-Forwarded-For")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("dashboard takes no arguments, got %q", pos)
	}
	auth, err := authFrom(tokens, users)
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("--addr %q: %v", *addr, err)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if auth == nil && !dashboard.IsLoopback(host) {
		// Said before Redis is opened, in the CLI's terms: the server's
		// own refusal came after connecting (exit 1) and named its Go
		// option (Options.Auth).
		return &usageError{msg: fmt.Sprintf("--addr %q is beyond loopback and no user is configured: give --token or --user, or listen on 127.0.0.1", *addr),
			err: dashboard.ErrInsecureBind}
	}
	opts := &dashboard.Options{Auth: auth, ReadOnly: *readOnly, SecureCookies: *secureCookies || *tlsCert != "", TrustForwardedFor: *trustXFF}
	switch {
	case *anonRole != "":
		r, err := dashboard.ParseRole(*anonRole)
		if err != nil {
			return usagef("--anonymous-role: %v", err)
		}
		opts.AnonymousRole = r
	case auth == nil && dashboard.IsLoopback(host):
		opts.AnonymousRole = dashboard.RoleAdmin
	}
	var auditFile *os.File
	if *auditPath != "" {
		if auditFile, err = os.OpenFile(*auditPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			return fmt.Errorf("--audit-log: %w", err)
		}
		defer auditFile.Close()
		opts.Audit = jsonLines(auditFile)
	} else {
		opts.Audit = dashboard.AuditLogger(slog.New(slog.NewTextHandler(c.out, nil)))
	}

	fs.redis.serving = true
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	srv, err := dashboard.NewServer(ins, &dashboard.ServerOptions{Addr: *addr, Handler: opts, TLSCertFile: *tlsCert, TLSKeyFile: *tlsKey})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	who := "sign-in required"
	if auth == nil {
		who = fmt.Sprintf("no sign-in: anyone who can reach it is %s", opts.AnonymousRole)
	}
	fmt.Fprintf(c.out, "drover dashboard: %s (prefix %q, %s; Ctrl-C to stop)\n", srv.URL(), fs.redis.prefix, who)
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Close(cctx)
}

// serveDashboard starts a dashboard server (also used by the demo).
func serveDashboard(ctx context.Context, ins *inspect.Inspector, addr string, opts *dashboard.Options) (*dashboard.Server, error) {
	srv, err := dashboard.NewServer(ins, &dashboard.ServerOptions{Addr: addr, Handler: opts})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	return srv, nil
}

// authFrom builds the users from the flags and the environment.
func authFrom(tokens, users []string) (*dashboard.Auth, error) {
	split := func(env string) []string {
		var out []string
		for _, s := range strings.Split(os.Getenv(env), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	tokens = append(tokens, split("DROVER_DASHBOARD_TOKENS")...)
	users = append(users, split("DROVER_DASHBOARD_USERS")...)
	var auth dashboard.Auth
	for _, spec := range tokens {
		u, err := dashboard.ParseUser(spec, true)
		if err != nil {
			return nil, usagef("--token %s: %v", redact(spec), err)
		}
		auth.Users = append(auth.Users, u)
	}
	for _, spec := range users {
		u, err := dashboard.ParseUser(spec, false)
		if err != nil {
			return nil, usagef("--user %s: %v", redact(spec), err)
		}
		auth.Users = append(auth.Users, u)
	}
	if len(auth.Users) == 0 {
		return nil, nil
	}
	return &auth, nil
}

// redact hides the secret of a NAME:SECRET:ROLE spec in error messages.
func redact(spec string) string {
	name, _, _ := strings.Cut(spec, ":")
	return name + ":***"
}

// jsonLines returns an AuditFunc that appends entries to w as JSON lines.
func jsonLines(w io.Writer) dashboard.AuditFunc {
	var mu sync.Mutex
	return func(_ context.Context, e dashboard.AuditEntry) {
		b, _ := json.Marshal(e)
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(append(b, '\n'))
	}
}
