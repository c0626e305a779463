package inspect

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/seed40057009/drover"
)

// JSON: every type of this package marshals with one set of names,
// camelCase, and one rule for time: every instant is a number of
// milliseconds since the Unix epoch ([Instant]), every duration a number of
// milliseconds, as BullMQ's own JSON has them (a job's timestamp,
// processedOn and finishedOn; a backoff's {type, delay, jitter}). A job's
// JSON ([JobSummary], [JobDetail], [ActiveJob]) gives the fields it shares
// with BullMQ's job JSON (JSON.stringify of a BullMQ 6 Job) BullMQ's names:
// timestamp, processedOn, finishedOn, attemptsMade, attemptsStarted,
// stalledCounter, returnvalue, failedReason, progress, delay, priority,
// stacktrace, processedBy, deduplicationId, repeatJobKey, parentKey, and
// opts as stored; drover's own fields (retryState, budget, failedFor,
// nextRun, timeline, ...) keep drover's camelCase names. The dashboard's API
// and the CLI's --json print these types as they are; the Go fields stay
// time.Duration, and Instant embeds a time.Time.

// Instant is a point in time that JSON carries as a number of milliseconds
// since the Unix epoch, as BullMQ's timestamp, processedOn and finishedOn.
// The zero Instant is JSON null; fields of this package that may be zero are
// omitted then (omitzero). Reading JSON gives the instant in UTC.
type Instant struct{ time.Time }

// InstantOf is t as an Instant.
func InstantOf(t time.Time) Instant { return Instant{t} }

// MarshalJSON writes the epoch milliseconds, or null for the zero Instant.
func (t Instant) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, t.UnixMilli(), 10), nil
}

// UnmarshalJSON reads epoch milliseconds; null is the zero Instant.
func (t *Instant) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*t = Instant{}
		return nil
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return fmt.Errorf("an instant is a number of milliseconds since the Unix epoch, got %s", data)
	}
	*t = Instant{time.UnixMilli(n).UTC()}
	return nil
}

// Backoff is a job's backoff option.
type Backoff struct {
	// Type is fixed, exponential or the name of a custom strategy.
	Type string
	// Delay is the base delay (ms in JSON, as BullMQ's "delay").
	Delay time.Duration
	// Jitter is the random share taken off each wait, 0..1.
	Jitter float64
}

type backoffJSON struct {
	Type   string  `json:"type"`
	Delay  int64   `json:"delay"`
	Jitter float64 `json:"jitter,omitempty"`
}

// MarshalJSON writes BullMQ's {type, delay, jitter}, delay in ms.
func (b Backoff) MarshalJSON() ([]byte, error) {
	return json.Marshal(backoffJSON{Type: b.Type, Delay: b.Delay.Milliseconds(), Jitter: b.Jitter})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Backoff) UnmarshalJSON(data []byte) error {
	var v backoffJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*b = Backoff{Type: v.Type, Delay: time.Duration(v.Delay) * time.Millisecond, Jitter: v.Jitter}
	return nil
}

func backoffOf(b *drover.Backoff) *Backoff {
	if b == nil {
		return nil
	}
	return &Backoff{Type: b.Type, Delay: b.Delay, Jitter: b.Jitter}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func fromMs(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// msField is a duration that JSON carries in whole milliseconds under name.
type msField struct {
	name      string
	d         *time.Duration
	omitEmpty bool
}

// marshalMs writes plain, a type's twin without its JSON methods whose
// durations are hidden from encoding/json (json:"-"), followed by fields in
// ms: the bytes json.Marshal writes for struct{ plain; F int64 `json:"name"` }.
func marshalMs(plain any, fields ...msField) ([]byte, error) {
	b, err := json.Marshal(plain)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the object's closing brace
	for _, f := range fields {
		n := ms(*f.d)
		if f.omitEmpty && n == 0 {
			continue
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '}'), nil
}

// unmarshalMs reads what marshalMs writes: data into plain (a pointer to
// the twin), then each field's milliseconds into its duration (0 when
// absent), decoded by encoding/json as a struct field named so would be.
func unmarshalMs(data []byte, plain any, fields ...msField) error {
	if err := json.Unmarshal(data, plain); err != nil {
		return err
	}
	sf := make([]reflect.StructField, len(fields))
	for i, f := range fields {
		sf[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: reflect.TypeFor[int64](), Tag: reflect.StructTag(`json:"` + f.name + `"`)}
	}
	v := reflect.New(reflect.StructOf(sf))
	if err := json.Unmarshal(data, v.Interface()); err != nil {
		return err
	}
	for i, f := range fields {
		*f.d = fromMs(v.Elem().Field(i).Int())
	}
	return nil
}

// MarshalJSON writes Backoff in ms.
func (a Attempt) MarshalJSON() ([]byte, error) {
	type plain Attempt
	return marshalMs(plain(a), msField{name: "backoff", d: &a.Backoff, omitEmpty: true})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Attempt) UnmarshalJSON(data []byte) error {
	type plain Attempt
	return unmarshalMs(data, (*plain)(a), msField{name: "backoff", d: &a.Backoff})
}

// MarshalJSON writes TTL in ms.
func (l Lock) MarshalJSON() ([]byte, error) {
	type plain Lock
	return marshalMs(plain(l), msField{name: "ttl", d: &l.TTL})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Lock) UnmarshalJSON(data []byte) error {
	type plain Lock
	return unmarshalMs(data, (*plain)(l), msField{name: "ttl", d: &l.TTL})
}

// MarshalJSON writes Delay in ms.
func (d JobDetail) MarshalJSON() ([]byte, error) {
	type plain JobDetail
	return marshalMs(plain(d), msField{name: "delay", d: &d.Delay})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *JobDetail) UnmarshalJSON(data []byte) error {
	type plain JobDetail
	return unmarshalMs(data, (*plain)(d), msField{name: "delay", d: &d.Delay})
}

// MarshalJSON writes Window in ms.
func (s DelayedStats) MarshalJSON() ([]byte, error) {
	type plain DelayedStats
	return marshalMs(plain(s), msField{name: "window", d: &s.Window})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *DelayedStats) UnmarshalJSON(data []byte) error {
	type plain DelayedStats
	return unmarshalMs(data, (*plain)(s), msField{name: "window", d: &s.Window})
}

// Event is one event of a queue's events stream, as the dashboard's live
// updates and `drover watch --json` print it. Time and DelayUntil are epoch
// ms; ReturnValue and Data have the names of BullMQ's completed and
// progress event fields, DeduplicationID and DeduplicatedJobID those of its
// deduplicated event's.
type Event struct {
	ID           string           `json:"id"`
	Time         Instant          `json:"time"`
	Queue        string           `json:"queue"`
	Name         drover.EventName `json:"name"`
	JobID        string           `json:"jobId,omitempty"`
	Prev         string           `json:"prev,omitempty"`
	JobName      string           `json:"jobName,omitempty"`
	FailedReason string           `json:"failedReason,omitempty"`
	DelayUntil   Instant          `json:"delayUntil,omitzero"`
	AttemptsMade int              `json:"attemptsMade,omitempty"`
	ReturnValue  json.RawMessage  `json:"returnvalue,omitempty"`
	// Data is a progress event's value (JSON).
	Data json.RawMessage `json:"data,omitempty"`
	// Count is a cleaned event's number of jobs removed, 0 included; nil
	// for the other events.
	Count *int `json:"count,omitempty"`
	// DeduplicationID and DeduplicatedJobID are set on deduplicated: the
	// id the add carried and the job id of the add that was dropped (JobID
	// is the job holding the id).
	DeduplicationID   string `json:"deduplicationId,omitempty"`
	DeduplicatedJobID string `json:"deduplicatedJobId,omitempty"`
}

// EventOf converts an event of queue's stream.
func EventOf(queue string, ev drover.Event) Event {
	e := Event{
		ID: ev.ID, Time: Instant{ev.Time()}, Queue: queue, Name: ev.Name, JobID: ev.JobID, Prev: ev.Prev, JobName: ev.JobName,
		FailedReason: ev.FailedReason, DelayUntil: Instant{ev.DelayUntil}, AttemptsMade: ev.AttemptsMade,
		DeduplicationID: ev.DeduplicationID, DeduplicatedJobID: ev.DeduplicatedJobID,
	}
	if len(ev.ReturnValue) > 0 && json.Valid(ev.ReturnValue) {
		e.ReturnValue = ev.ReturnValue
	}
	if len(ev.Data) > 0 && json.Valid(ev.Data) {
		e.Data = ev.Data
	}
	if _, ok := ev.Fields["count"]; ok && ev.Name == drover.EventCleaned {
		n := ev.Count
		e.Count = &n
	}
	return e
}

// MarshalJSON writes LockTTL and HeldFor in ms.
func (c Conflict) MarshalJSON() ([]byte, error) {
	type plain Conflict
	return marshalMs(plain(c), msField{name: "lockTtl", d: &c.LockTTL}, msField{name: "heldFor", d: &c.HeldFor})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Conflict) UnmarshalJSON(data []byte) error {
	type plain Conflict
	return unmarshalMs(data, (*plain)(c), msField{name: "lockTtl", d: &c.LockTTL}, msField{name: "heldFor", d: &c.HeldFor})
}

// MarshalJSON writes Step in ms.
func (r ThroughputReport) MarshalJSON() ([]byte, error) {
	type plain ThroughputReport
	return marshalMs(plain(r), msField{name: "step", d: &r.Step})
}
