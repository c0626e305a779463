// Package clock gives drover an injectable notion of "now". Go owns time:
// scripts receive it in ARGV and never call Redis TIME, so tests can move a
// manual clock instead of sleeping. A worker measures its offset to the
// Redis server's TIME now and then and runs on a Corrected clock, so that
// machines whose clocks disagree still agree on when a job is due.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

// Manual is a clock that moves only when told. Safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a manual clock set to t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	m.mu.Unlock()
}

// Set moves the clock to t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	m.now = t
	m.mu.Unlock()
}

// Corrected is Base moved by a measured offset: a worker's reading of the
// Redis server's clock. The offset starts at 0; SetOffset changes it at any
// time. Safe for concurrent use.
type Corrected struct {
	base   Clock
	offset atomic.Int64 // ns
}

// NewCorrected returns base with no offset yet.
func NewCorrected(base Clock) *Corrected { return &Corrected{base: base} }

// Now is the base clock's now plus the offset.
func (c *Corrected) Now() time.Time { return c.base.Now().Add(c.Offset()) }

// Base is the uncorrected clock.
func (c *Corrected) Base() Clock { return c.base }

// Offset is what Now adds to the base clock.
func (c *Corrected) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// SetOffset sets what Now adds to the base clock.
func (c *Corrected) SetOffset(d time.Duration) { c.offset.Store(int64(d)) }

// Offset estimates how far the server's clock is ahead of local (negative:
// behind) from one round trip: local before, the server's time, local
// after. The server read its clock somewhere in between, so the estimate
// takes the midpoint and is off by at most rtt/2.
//
// Both local times are compared as wall-clock readings (Round(0) drops
// the monotonic one): time.Now reads the two separately, and a thread
// descheduled between the reads makes the monotonic span shorter than
// the wall-clock one the server's reading falls in, which put a Redis on
// this very clock 32 µs "ahead" on a loaded 2-core machine.
func Offset(before, server, after time.Time) (offset, rtt time.Duration) {
	before, after = before.Round(0), after.Round(0)
	rtt = after.Sub(before)
	return server.Sub(before.Add(rtt / 2)), rtt
}
