package dashboard

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the standalone Server against slow and greedy clients.
const (
	// MaxConnsDefault caps the connections a Server holds open; the default
	// is this or half the process's open-file limit, whichever is lower.
	MaxConnsDefault = 1000
	// ReadHeaderTimeoutDefault bounds reading a request's headers.
	ReadHeaderTimeoutDefault = 5 * time.Second
	// BodyTimeoutDefault bounds reading a request's body.
	BodyTimeoutDefault = 10 * time.Second
	// WriteTimeoutDefault bounds writing a response (live-update streams
	// get this per event instead).
	WriteTimeoutDefault = time.Minute
	// IdleTimeoutDefault closes a kept-alive connection without requests.
	IdleTimeoutDefault = time.Minute
	// MaxHeaderBytesDefault bounds a request's headers.
	MaxHeaderBytesDefault = 16 << 10
	// MaxBodyBytesDefault bounds a request's body.
	MaxBodyBytesDefault = 1 << 20
)

// connGuard caps the connections a listener hands out. At the cap, a new
// connection closes the oldest one that is not running a request (it is
// still sending its headers or body, or idle between requests): a client
// that sends a byte a second cannot keep a real request out, and the
// server never runs out of file descriptors. Only when every connection
// runs a request is the new one refused.
type connGuard struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[*guardedConn]struct{}
}

func newConnGuard(ln net.Listener, maxConns int) *connGuard {
	return &connGuard{Listener: ln, max: maxConns, conns: make(map[*guardedConn]struct{})}
}

type guardedConn struct {
	net.Conn
	g        *connGuard
	accepted time.Time
	busy     atomic.Int32 // requests running their handler
	once     sync.Once
}

func (c *guardedConn) Close() error {
	c.once.Do(func() {
		c.g.mu.Lock()
		delete(c.g.conns, c)
		c.g.mu.Unlock()
	})
	return c.Conn.Close()
}

func (g *connGuard) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		gc := &guardedConn{Conn: c, g: g, accepted: time.Now()}
		g.mu.Lock()
		var victim *guardedConn
		if len(g.conns) >= g.max {
			for o := range g.conns {
				if o.busy.Load() == 0 && (victim == nil || o.accepted.Before(victim.accepted)) {
					victim = o
				}
			}
			if victim != nil {
				delete(g.conns, victim)
			}
		}
		full := len(g.conns) >= g.max
		if !full {
			g.conns[gc] = struct{}{}
		}
		g.mu.Unlock()
		if victim != nil {
			_ = victim.Conn.Close()
		}
		if full {
			_ = c.Close() // every connection runs a request
			continue
		}
		return gc, nil
	}
}

type guardedConnKey struct{}

// connContext remembers a request's connection for guardRequests.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if gc, ok := c.(*guardedConn); ok {
		return context.WithValue(ctx, guardedConnKey{}, gc)
	}
	return ctx
}

// guardRequests reads a request's body (at most MaxBodyBytesDefault, within
// BodyTimeoutDefault) before the handler runs, marks the connection busy
// while it runs (connGuard closes only idle or still-sending connections)
// and bounds the time to write the response.
func guardRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.ContentLength > MaxBodyBytesDefault {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(BodyTimeoutDefault))
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytesDefault))
			if err != nil {
				var mbe *http.MaxBytesError
				w.Header().Set("Connection", "close")
				if errors.As(err, &mbe) {
					writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
				} else {
					writeError(w, http.StatusRequestTimeout, "request body not received in time")
				}
				return
			}
			_ = rc.SetReadDeadline(time.Time{})
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if gc, ok := r.Context().Value(guardedConnKey{}).(*guardedConn); ok {
			gc.busy.Add(1)
			defer gc.busy.Add(-1)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(WriteTimeoutDefault))
		next.ServeHTTP(w, r)
	})
}
