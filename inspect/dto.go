package inspect

import (
	"encoding/json"
	"time"

	"github.com/seed40057009/drover"
)

// JSON: every type of this package marshals with one set of names,
// camelCase, and durations in milliseconds, as BullMQ's own JSON does (a
// job's backoff is {type, delay, jitter} with delay in ms). The dashboard's
// API and the CLI's --json print these types as they are; the Go fields stay
// time.Duration.

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

// MarshalJSON writes Backoff in ms.
func (a Attempt) MarshalJSON() ([]byte, error) {
	type plain Attempt
	return json.Marshal(struct {
		plain
		Backoff int64 `json:"backoff,omitempty"`
	}{plain(a), ms(a.Backoff)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Attempt) UnmarshalJSON(data []byte) error {
	type plain Attempt
	v := struct {
		*plain
		Backoff int64 `json:"backoff"`
	}{plain: (*plain)(a)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	a.Backoff = fromMs(v.Backoff)
	return nil
}

// MarshalJSON writes TTL in ms.
func (l Lock) MarshalJSON() ([]byte, error) {
	type plain Lock
	return json.Marshal(struct {
		plain
		TTL int64 `json:"ttl"`
	}{plain(l), ms(l.TTL)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Lock) UnmarshalJSON(data []byte) error {
	type plain Lock
	v := struct {
		*plain
		TTL int64 `json:"ttl"`
	}{plain: (*plain)(l)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	l.TTL = fromMs(v.TTL)
	return nil
}

// MarshalJSON writes Delay in ms.
func (d JobDetail) MarshalJSON() ([]byte, error) {
	type plain JobDetail
	return json.Marshal(struct {
		plain
		Delay int64 `json:"delay"`
	}{plain(d), ms(d.Delay)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *JobDetail) UnmarshalJSON(data []byte) error {
	type plain JobDetail
	v := struct {
		*plain
		Delay int64 `json:"delay"`
	}{plain: (*plain)(d)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	d.Delay = fromMs(v.Delay)
	return nil
}

// MarshalJSON writes Window in ms.
func (s DelayedStats) MarshalJSON() ([]byte, error) {
	type plain DelayedStats
	return json.Marshal(struct {
		plain
		Window int64 `json:"window"`
	}{plain(s), ms(s.Window)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *DelayedStats) UnmarshalJSON(data []byte) error {
	type plain DelayedStats
	v := struct {
		*plain
		Window int64 `json:"window"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	s.Window = fromMs(v.Window)
	return nil
}

// Event is one event of a queue's events stream, as the dashboard's live
// updates and `drover watch --json` print it.
type Event struct {
	ID           string           `json:"id"`
	Time         time.Time        `json:"time"`
	Queue        string           `json:"queue"`
	Name         drover.EventName `json:"name"`
	JobID        string           `json:"jobId,omitempty"`
	Prev         string           `json:"prev,omitempty"`
	JobName      string           `json:"jobName,omitempty"`
	FailedReason string           `json:"failedReason,omitempty"`
	DelayUntil   time.Time        `json:"delayUntil,omitzero"`
	AttemptsMade int              `json:"attemptsMade,omitempty"`
	ReturnValue  json.RawMessage  `json:"returnValue,omitempty"`
}

// EventOf converts an event of queue's stream.
func EventOf(queue string, ev drover.Event) Event {
	e := Event{
		ID: ev.ID, Time: ev.Time(), Queue: queue, Name: ev.Name, JobID: ev.JobID, Prev: ev.Prev, JobName: ev.JobName,
		FailedReason: ev.FailedReason, DelayUntil: ev.DelayUntil, AttemptsMade: ev.AttemptsMade,
	}
	if len(ev.ReturnValue) > 0 && json.Valid(ev.ReturnValue) {
		e.ReturnValue = ev.ReturnValue
	}
	return e
}

// MarshalJSON writes LockTTL and HeldFor in ms.
func (c Conflict) MarshalJSON() ([]byte, error) {
	type plain Conflict
	return json.Marshal(struct {
		plain
		LockTTL int64 `json:"lockTtl"`
		HeldFor int64 `json:"heldFor"`
	}{plain(c), ms(c.LockTTL), ms(c.HeldFor)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Conflict) UnmarshalJSON(data []byte) error {
	type plain Conflict
	v := struct {
		*plain
		LockTTL int64 `json:"lockTtl"`
		HeldFor int64 `json:"heldFor"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.LockTTL, c.HeldFor = fromMs(v.LockTTL), fromMs(v.HeldFor)
	return nil
}

// MarshalJSON writes Step in ms.
func (r ThroughputReport) MarshalJSON() ([]byte, error) {
	type plain ThroughputReport
	return json.Marshal(struct {
		plain
		Step int64 `json:"step"`
	}{plain(r), ms(r.Step)})
}
