package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/seed40057009/drover"
)

// The opts column's first format, read only: rows written by drover before
// the column took the stored opts JSON (opts.go) may still wait in users'
// tables when they upgrade. Nothing writes it any more.

// legacyOpts is that format: every field of JobOptions under a fixed JSON
// name, durations and times in milliseconds.
type legacyOpts struct {
	JobID            string           `json:"jobId,omitempty"`
	DelayMs          int64            `json:"delayMs,omitempty"`
	Priority         int              `json:"priority,omitempty"`
	LIFO             bool             `json:"lifo,omitempty"`
	Attempts         int              `json:"attempts,omitempty"`
	Backoff          *legacyBackoff   `json:"backoff,omitempty"`
	RemoveOnComplete *legacyRetention `json:"removeOnComplete,omitempty"`
	RemoveOnFail     *legacyRetention `json:"removeOnFail,omitempty"`
	TimestampMs      int64            `json:"timestampMs,omitempty"`
	StackTraceLimit  int              `json:"stackTraceLimit,omitempty"`
	KeepLogs         int              `json:"keepLogs,omitempty"`
	SizeLimit        int              `json:"sizeLimit,omitempty"`
	Deduplication    *legacyDedup     `json:"deduplication,omitempty"`
}

type legacyBackoff struct {
	Type    string  `json:"type"`
	DelayMs int64   `json:"delayMs,omitempty"`
	Jitter  float64 `json:"jitter,omitempty"`
}

type legacyRetention struct {
	Remove bool  `json:"remove,omitempty"`
	Count  int   `json:"count,omitempty"`
	AgeMs  int64 `json:"ageMs,omitempty"`
	Limit  int   `json:"limit,omitempty"`
}

type legacyDedup struct {
	ID      string `json:"id"`
	TTLMs   int64  `json:"ttlMs,omitempty"`
	Extend  bool   `json:"extend,omitempty"`
	Replace bool   `json:"replace,omitempty"`
}

// decodeLegacyOpts reads a column in the first format.
func decodeLegacyOpts(b []byte) (*drover.JobOptions, error) {
	var s legacyOpts
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, errors.New("opts column is not valid JSON: " + err.Error())
	}
	o := &drover.JobOptions{
		JobID:            s.JobID,
		Delay:            ms(s.DelayMs),
		Priority:         s.Priority,
		LIFO:             s.LIFO,
		Attempts:         s.Attempts,
		RemoveOnComplete: decodeLegacyRetention(s.RemoveOnComplete),
		RemoveOnFail:     decodeLegacyRetention(s.RemoveOnFail),
		StackTraceLimit:  s.StackTraceLimit,
		KeepLogs:         s.KeepLogs,
		SizeLimit:        s.SizeLimit,
	}
	if s.TimestampMs != 0 {
		o.Timestamp = time.UnixMilli(s.TimestampMs)
	}
	if b := s.Backoff; b != nil {
		o.Backoff = &drover.Backoff{Type: b.Type, Delay: ms(b.DelayMs), Jitter: b.Jitter}
	}
	if d := s.Deduplication; d != nil {
		o.Deduplication = &drover.Deduplication{ID: d.ID, TTL: ms(d.TTLMs), Extend: d.Extend, Replace: d.Replace}
	}
	return o, nil
}

func decodeLegacyRetention(r *legacyRetention) *drover.Retention {
	if r == nil {
		return nil
	}
	// An age or a limit was always written in BullMQ's object form.
	return &drover.Retention{Remove: r.Remove, Count: r.Count, Age: ms(r.AgeMs), Limit: r.Limit, Object: r.AgeMs > 0 || r.Limit > 0}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// isLegacyOpts reports whether b is in the first format. The formats share
// jobId, priority, lifo, attempts, sizeLimit, backoff.type and
// backoff.jitter, and a retention object's count and limit, with the same
// meaning; a column is in the first format when it has a key or value only
// that format writes: delayMs, timestampMs, keepLogs, deduplication,
// backoff.delayMs, a retention object with remove or ageMs, or a negative
// stackTraceLimit (the stored form keeps no trace with 0).
func isLegacyOpts(b []byte) (bool, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return false, errors.New("opts column is not a JSON object: " + err.Error())
	}
	for _, k := range []string{"delayMs", "timestampMs", "keepLogs", "deduplication"} {
		if _, ok := m[k]; ok {
			return true, nil
		}
	}
	has := func(v json.RawMessage, keys ...string) bool {
		var o map[string]json.RawMessage
		if bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) && json.Unmarshal(v, &o) == nil {
			for _, k := range keys {
				if _, ok := o[k]; ok {
					return true
				}
			}
		}
		return false
	}
	if has(m["backoff"], "delayMs") || has(m["removeOnComplete"], "remove", "ageMs") || has(m["removeOnFail"], "remove", "ageMs") {
		return true, nil
	}
	var stl float64
	if v, ok := m["stackTraceLimit"]; ok && json.Unmarshal(v, &stl) == nil && stl < 0 {
		return true, nil
	}
	return false, nil
}
