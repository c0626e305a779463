package outbox

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/jobcodec"
)

// storedOpts is how a row keeps its *drover.JobOptions in the opts column:
// every field of JobOptions under a fixed JSON name, durations and times in
// milliseconds as drover stores them in Redis. The names are part of the
// table's format (rows written by one drover version are relayed by the
// next), so they never change; a JobOptions field without a counterpart here
// fails TestStoredOptsCoversJobOptions.
type storedOpts struct {
	JobID            string           `json:"jobId,omitempty"`
	DelayMs          int64            `json:"delayMs,omitempty"`
	Priority         int              `json:"priority,omitempty"`
	LIFO             bool             `json:"lifo,omitempty"`
	Attempts         int              `json:"attempts,omitempty"`
	Backoff          *storedBackoff   `json:"backoff,omitempty"`
	RemoveOnComplete *storedRetention `json:"removeOnComplete,omitempty"`
	RemoveOnFail     *storedRetention `json:"removeOnFail,omitempty"`
	TimestampMs      int64            `json:"timestampMs,omitempty"`
	StackTraceLimit  int              `json:"stackTraceLimit,omitempty"`
	KeepLogs         int              `json:"keepLogs,omitempty"`
	SizeLimit        int              `json:"sizeLimit,omitempty"`
	Deduplication    *storedDedup     `json:"deduplication,omitempty"`
}

type storedBackoff struct {
	Type    string  `json:"type"`
	DelayMs int64   `json:"delayMs,omitempty"`
	Jitter  float64 `json:"jitter,omitempty"`
}

type storedRetention struct {
	Remove bool  `json:"remove,omitempty"`
	Count  int   `json:"count,omitempty"`
	AgeMs  int64 `json:"ageMs,omitempty"`
	Limit  int   `json:"limit,omitempty"`
}

type storedDedup struct {
	ID      string `json:"id"`
	TTLMs   int64  `json:"ttlMs,omitempty"`
	Extend  bool   `json:"extend,omitempty"`
	Replace bool   `json:"replace,omitempty"`
}

// encodeOpts returns the opts column for o: nil for nil.
func encodeOpts(o *drover.JobOptions) ([]byte, error) {
	if o == nil {
		return nil, nil
	}
	s := storedOpts{
		JobID:            o.JobID,
		DelayMs:          o.Delay.Milliseconds(),
		Priority:         o.Priority,
		LIFO:             o.LIFO,
		Attempts:         o.Attempts,
		RemoveOnComplete: encodeRetention(o.RemoveOnComplete),
		RemoveOnFail:     encodeRetention(o.RemoveOnFail),
		StackTraceLimit:  o.StackTraceLimit,
		KeepLogs:         o.KeepLogs,
		SizeLimit:        o.SizeLimit,
	}
	if !o.Timestamp.IsZero() {
		s.TimestampMs = o.Timestamp.UnixMilli()
	}
	if b := o.Backoff; b != nil {
		s.Backoff = &storedBackoff{Type: b.Type, DelayMs: b.Delay.Milliseconds(), Jitter: b.Jitter}
	}
	if d := o.Deduplication; d != nil {
		s.Deduplication = &storedDedup{ID: d.ID, TTLMs: d.TTL.Milliseconds(), Extend: d.Extend, Replace: d.Replace}
	}
	return json.Marshal(s)
}

func encodeRetention(r *drover.Retention) *storedRetention {
	if r == nil {
		return nil
	}
	return &storedRetention{Remove: r.Remove, Count: r.Count, AgeMs: r.Age.Milliseconds(), Limit: r.Limit}
}

// decodeOpts reads an opts column back: nil for NULL.
func decodeOpts(b []byte) (*drover.JobOptions, error) {
	if b == nil {
		return nil, nil
	}
	var s storedOpts
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, errors.New("opts column is not valid JSON: " + err.Error())
	}
	o := &drover.JobOptions{
		JobID:            s.JobID,
		Delay:            ms(s.DelayMs),
		Priority:         s.Priority,
		LIFO:             s.LIFO,
		Attempts:         s.Attempts,
		RemoveOnComplete: decodeRetention(s.RemoveOnComplete),
		RemoveOnFail:     decodeRetention(s.RemoveOnFail),
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

func decodeRetention(r *storedRetention) *drover.Retention {
	if r == nil {
		return nil
	}
	return &drover.Retention{Remove: r.Remove, Count: r.Count, Age: ms(r.AgeMs), Limit: r.Limit}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// encodeData is the data column: the bytes Queue.Add stores for data, from
// the same encoder (jobcodec.EncodeData), so a job relayed from the outbox
// stores what a direct add stores.
func encodeData(v any) ([]byte, error) { return jobcodec.EncodeData(v) }

// jsonData hands a row's stored JSON to Queue.AddBulk as it is.
func jsonData(b []byte) json.RawMessage { return json.RawMessage(b) }
