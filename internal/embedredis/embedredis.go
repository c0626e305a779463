// Package embedredis runs an in-process Redis-compatible engine (miniredis)
// on a loopback port, for `drover demo` on a machine without Redis, for the
// smoke suite that runs the core scenarios on it, and for drovertest.
//
// miniredis does not expire keys on its own: TTLs only move when told. The
// Server keeps a clock pump that advances TTLs in real time, so job locks,
// the stalled-check guard and deduplication TTLs expire as on a real server.
// Its Lua has cjson but no cmsgpack and no bit library; drover's scripts use
// neither.
package embedredis

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Server is a running embedded engine.
type Server struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	done sync.WaitGroup
}

// Start runs an engine on 127.0.0.1 at a free port, its TTLs moving with
// the wall clock.
func Start() (*Server, error) {
	s, err := StartManual()
	if err != nil {
		return nil, err
	}
	s.done.Add(1)
	go s.pump(20 * time.Millisecond)
	return s, nil
}

// StartManual runs an engine whose TTLs move only when FastForward says:
// for tests that drive time themselves (drovertest).
func StartManual() (*Server, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	return &Server{m: m, stop: make(chan struct{})}, nil
}

// FastForward moves the engine's TTL clock by d: keys whose TTL runs out
// expire.
func (s *Server) FastForward(d time.Duration) { s.m.FastForward(d) }

// pump moves the engine's TTL clock along with the wall clock.
func (s *Server) pump(every time.Duration) {
	defer s.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr is the engine's host:port.
func (s *Server) Addr() string { return s.m.Addr() }

// Close stops the clock pump and the engine.
func (s *Server) Close() {
	close(s.stop)
	s.done.Wait()
	s.m.Close()
}
