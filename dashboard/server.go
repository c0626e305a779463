package dashboard

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/logkey"
)

// AddrDefault is where Server listens by default: loopback only.
const AddrDefault = "127.0.0.1:7373"

// ErrInsecureBind: Server refuses to listen beyond loopback without Auth.
var ErrInsecureBind = errors.New("dashboard: refusing to listen on a non-loopback address without authentication; configure users (Options.Auth, or --token/--user) or bind to 127.0.0.1")

// ServerOptions configure a Server. Nil means defaults.
type ServerOptions struct {
	// Addr is the listen address. Defaults to AddrDefault (127.0.0.1:7373);
	// port 0 picks a free port. A non-loopback address (including ":7373"
	// and "0.0.0.0:7373", every interface) needs Handler.Auth.
	Addr string
	// Handler configures the dashboard. When Addr is loopback and
	// Handler.AllowedHosts is empty, the loopback host names are allowed
	// only (a guard against DNS rebinding).
	Handler *Options
	// MaxConns caps the open connections. At the cap a new connection
	// closes the oldest one not running a request (slow senders and idle
	// keep-alives go first), so slow clients cannot lock others out.
	// Defaults to MaxConnsDefault (1000) or half the process's open-file
	// limit, whichever is lower.
	MaxConns int
	// TLSCertFile and TLSKeyFile, both set, make the server speak HTTPS
	// only (PEM files, as for http.ListenAndServeTLS); session cookies are
	// then Secure. Default: plain HTTP (put a TLS proxy in front and set
	// Handler.SecureCookies).
	TLSCertFile, TLSKeyFile string
}

// Server runs the dashboard on its own HTTP server.
type Server struct {
	ins  *inspect.Inspector
	addr string
	h    *Handler
	log  *slog.Logger

	maxConns int
	tls      *tls.Config // nil: plain HTTP

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	started  bool
	closed   bool
	baseStop context.CancelFunc
	done     chan struct{}
}

// NewServer checks the options and builds the dashboard. It does no I/O.
func NewServer(ins *inspect.Inspector, opts *ServerOptions) (*Server, error) {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	o.Addr = cmp.Or(o.Addr, AddrDefault)
	var ho Options
	if o.Handler != nil {
		ho = *o.Handler
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: ServerOptions.Addr %q: %w", o.Addr, err)
	}
	loopback := IsLoopback(host)
	if !loopback && ho.Auth == nil {
		return nil, fmt.Errorf("%w (asked for %s)", ErrInsecureBind, o.Addr)
	}
	if loopback && len(ho.AllowedHosts) == 0 {
		ho.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
		if host != "" {
			ho.AllowedHosts = append(ho.AllowedHosts, host)
		}
	}
	h, err := New(ins, &ho)
	if err != nil {
		return nil, err
	}
	if o.MaxConns == 0 {
		o.MaxConns = MaxConnsDefault
		if n := openFileLimit(); n > 0 {
			o.MaxConns = max(min(o.MaxConns, n/2), 1)
		}
	}
	if o.MaxConns < 1 {
		return nil, fmt.Errorf("dashboard: ServerOptions.MaxConns must be at least 1, got %d", o.MaxConns)
	}
	srv := &Server{ins: ins, addr: o.Addr, h: h, log: h.opts.Logger, maxConns: o.MaxConns}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return nil, errors.New("dashboard: ServerOptions.TLSCertFile and TLSKeyFile go together; got one")
	}
	if o.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("dashboard: ServerOptions.TLSCertFile/TLSKeyFile: %w", err)
		}
		srv.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	}
	return srv, nil
}

// IsLoopback reports whether a listen host is loopback only: "localhost" or
// a loopback IP. "" and unspecified addresses listen everywhere: not loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the server's dashboard handler.
func (s *Server) Handler() *Handler { return s.h }

// Start checks that Redis answers, listens and serves in the background. It
// returns once the server accepts connections.
func (s *Server) Start(ctx context.Context) error { //nolint:contextcheck // requests outlive ctx: Close ends them
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("dashboard: server closed")
	}
	if s.started {
		return nil
	}
	if err := s.ins.Ping(ctx); err != nil {
		return fmt.Errorf("start dashboard: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("start dashboard: %w", err)
	}
	// Requests outlive Start's ctx: they end when Close cancels base.
	base, stop := context.WithCancel(context.Background())
	// Slow clients: headers within ReadHeaderTimeoutDefault, bodies within
	// BodyTimeoutDefault (guardRequests), responses within
	// WriteTimeoutDefault, and at most maxConns connections (connGuard).
	ln = newConnGuard(ln, s.maxConns)
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	s.srv = &http.Server{
		Handler:           guardRequests(s.h),
		ReadHeaderTimeout: ReadHeaderTimeoutDefault,
		IdleTimeout:       IdleTimeoutDefault,
		MaxHeaderBytes:    MaxHeaderBytesDefault,
		ConnContext:       connContext,
		// Requests (live-update streams, bulk retries) end when Close begins.
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.ln, s.baseStop, s.done, s.started = ln, stop, make(chan struct{}), true
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("dashboard server stopped", slog.Any(logkey.Error, err))
		}
	}()
	return nil
}

// Addr is the address the server listens on (after Start; the configured
// address before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.addr
}

// URL is the dashboard's address for a browser.
func (s *Server) URL() string {
	if s.tls != nil {
		return "https://" + s.Addr() + "/"
	}
	return "http://" + s.Addr() + "/"
}

// Close stops the server: it ends live-update streams and running requests,
// then waits for handlers to return until ctx is done. It is idempotent and
// safe on a server that never started.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed || !s.started {
		s.closed = true
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv, stop, done := s.srv, s.baseStop, s.done
	s.mu.Unlock()

	stop()
	opsErr := s.h.Close(ctx)
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	if err != nil {
		return fmt.Errorf("close dashboard: %w", err)
	}
	return opsErr
}
