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
//
// A step of the base clock (an NTP step, someone setting the date, a
// resumed virtual machine) makes base + offset wrong by the step until the
// next measurement, which may be a ClockCheckInterval away: delayed jobs
// run early or late by the step, jobs are stamped by it. So Corrected
// compares how far the base clock moved since the offset was set with how
// far the monotonic clock moved; when they differ by more than
// StepTolerance, Now extrapolates the last measurement by the monotonic
// clock instead (it cannot jump), and Stepped and Steps say a measurement
// is due now.
type Corrected struct {
	base  Clock
	at    atomic.Pointer[anchor]
	noted atomic.Bool // a step was signalled on steps since the last SetOffset
	steps chan struct{}
}

// anchor is one offset and the readings of both clocks when it was set.
type anchor struct {
	offset time.Duration
	base   time.Time // the base clock's reading, wall clock only
	mono   time.Time // time.Now(), for its monotonic reading
}

// StepTolerance is how far the base clock may move apart from the
// monotonic clock between two measurements before Corrected takes it for
// a step. A slewing NTP daemon moves a clock at most 0.5 ms per second
// (30 ms over a one-minute interval), well inside it.
const StepTolerance = 100 * time.Millisecond

// NewCorrected returns base with no offset yet.
func NewCorrected(base Clock) *Corrected {
	c := &Corrected{base: base, steps: make(chan struct{}, 1)}
	c.SetOffset(0)
	return c
}

// Now is the base clock's now plus the offset; after a step of the base
// clock, the time of the last SetOffset plus the offset plus the monotonic
// time since then.
func (c *Corrected) Now() time.Time {
	now := c.base.Now()
	a := c.at.Load()
	since := time.Since(a.mono)
	if stepped(now, a, since) {
		if c.noted.CompareAndSwap(false, true) {
			select {
			case c.steps <- struct{}{}:
			default:
			}
		}
		return a.base.Add(since + a.offset)
	}
	return now.Add(a.offset)
}

// Stepped says whether the base clock stepped since the last SetOffset.
func (c *Corrected) Stepped() bool {
	a := c.at.Load()
	return stepped(c.base.Now(), a, time.Since(a.mono))
}

// Steps receives when Now first sees a step of the base clock after a
// SetOffset: the owner of the offset measures it again.
func (c *Corrected) Steps() <-chan struct{} { return c.steps }

func stepped(now time.Time, a *anchor, since time.Duration) bool {
	d := now.Round(0).Sub(a.base) - since
	return d > StepTolerance || d < -StepTolerance
}

// Base is the uncorrected clock.
func (c *Corrected) Base() Clock { return c.base }

// Offset is what Now adds to the base clock.
func (c *Corrected) Offset() time.Duration { return c.at.Load().offset }

// SetOffset sets what Now adds to the base clock, from now on.
func (c *Corrected) SetOffset(d time.Duration) {
	c.at.Store(&anchor{offset: d, base: c.base.Now().Round(0), mono: time.Now()})
	c.noted.Store(false)
}

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

// monoStart anchors Mono.
var monoStart = time.Now()

// Mono is the monotonic time since the process started: for deadlines that
// a step of the wall clock must not move (a wall-clock deadline set before
// the clock stepped back an hour is not reached for an hour).
func Mono() time.Duration { return time.Since(monoStart) }
