// Package clock gives drover an injectable notion of "now". Go owns time:
// scripts receive it in ARGV and never call Redis TIME, so tests can move a
// manual clock instead of sleeping.
package clock

import (
	"sync"
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

// Millis is t as BullMQ stores times: milliseconds since the Unix epoch.
func Millis(t time.Time) int64 { return t.UnixMilli() }
