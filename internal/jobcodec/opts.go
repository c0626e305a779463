// Package jobcodec converts between BullMQ's job hash and Go values: the
// flat field list of a job hash to a Record, and job options to the compact
// `opts` JSON Node BullMQ stores (de, kl, fpof, ... renames included).
//
// Decoding is lenient where Node's encoder is quirky (spec §2.2): numbers may
// be floats or in exponent form, "/" may be escaped, an empty array may come
// back as {}. Decoding is strict where Node is: data and opts must be JSON.
package jobcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Backoff is a stored backoff option.
type Backoff struct {
	Type   string
	Delay  int64 // ms
	Jitter float64
}

// Keep is a stored removeOnComplete/removeOnFail option in the shape it
// was given: true, false, a count, or an object with any of age (seconds,
// held here in ms: Node may store a fraction), count and limit. The shape is kept as written (a count of 0 or -1, an
// age or limit of 0 included) so that it is stored back as Node stores it;
// Spec says what it means.
type Keep struct {
	Set      bool // the option was present
	Bool     *bool
	Count    *int64
	AgeMs    int64 // the object's age in ms (stored in seconds)
	Limit    int64
	Object   bool // stored as an object
	HasAge   bool // the object has an age, even 0
	HasLimit bool // the object has a limit, even 0
}

// AgeBound reports whether the option trims by age: it has an age and no
// limit of 0 (BullMQ's moveToFinished.lua removes at most limit expired
// jobs, so 0 turns the age bound off).
func (k *Keep) AgeBound() bool {
	return (k.HasAge || k.AgeMs != 0) && !(k.HasLimit && k.Limit == 0)
}

// Spec is the retention spec finishJobs.lua reads: "" keep all, "0" drop at
// once, else "count,ageMs,limit" with count -1 for "no count bound" and an
// empty ageMs for "no age bound". It means what BullMQ's worker
// (getKeepJobs) and moveToFinished.lua make of the shape: true or a count
// of 0, in either form, removes the job; false or a negative count keeps
// it; an age of 0 or less is a bound like any other (BullMQ removes the
// finished jobs at or before now minus the age: every one, this one
// included, up to the limit, newest first).
func (k *Keep) Spec() string {
	if k == nil || !k.Set {
		return ""
	}
	if k.Bool != nil {
		if *k.Bool {
			return "0"
		}
		return ""
	}
	count := int64(-1)
	if k.Count != nil {
		switch c := *k.Count; {
		case c == 0:
			return "0"
		case c > 0:
			count = c
		}
	}
	age := ""
	if k.AgeBound() {
		age = strconv.FormatInt(k.AgeMs, 10)
	}
	if count == -1 && age == "" {
		return ""
	}
	return strconv.FormatInt(count, 10) + "," + age + "," + strconv.FormatInt(max(k.Limit, 0), 10)
}

// AppendJSON appends the option as stored in opts.
func (k *Keep) AppendJSON(b []byte) []byte {
	if k.Bool != nil {
		return strconv.AppendBool(b, *k.Bool)
	}
	if !k.Object && k.Count != nil {
		return strconv.AppendInt(b, *k.Count, 10)
	}
	b = append(b, '{')
	sep := false
	if k.AgeMs != 0 || k.HasAge {
		b = append(b, `"age":`...)
		if k.AgeMs%1000 == 0 {
			b = strconv.AppendInt(b, k.AgeMs/1000, 10)
		} else {
			b = strconv.AppendFloat(b, float64(k.AgeMs)/1000, 'f', -1, 64)
		}
		sep = true
	}
	if k.Count != nil {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"count":`...)
		b = strconv.AppendInt(b, *k.Count, 10)
		sep = true
	}
	if k.Limit != 0 || k.HasLimit {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"limit":`...)
		b = strconv.AppendInt(b, k.Limit, 10)
	}
	return append(b, '}')
}

// Dedup is the stored deduplication option ("de").
type Dedup struct {
	ID      string
	TTL     int64 // ms
	Extend  bool
	Replace bool
	// KeepLastIfActive: an add that finds the owner active is kept, the
	// newest one only, and queued when the owner finishes (BullMQ 6.7).
	KeepLastIfActive bool
	// Reschedule: an add swallowed by a still-delayed owner moves the
	// owner's due time to the add's timestamp plus its delay (BullMQ 6.7).
	Reschedule bool
	Extra      map[string]json.RawMessage // keys BullMQ may add later
}

// Parent is the stored parent option of a flow child ({"id", "queue"}),
// queue being the parent queue's "<prefix>:<name>".
type Parent struct {
	ID    string `json:"id"`
	Queue string `json:"queue"`
}

// Opts are a job's stored options. Fields are BullMQ's; Extra keeps every
// other key verbatim so a Node-written job round-trips.
type Opts struct {
	Attempts    int64
	HasAttempts bool
	Delay       int64
	Priority    int64
	// LIFO is the lifo option as BullMQ's JS reads it (a retry at once,
	// job.retry()): a stored "false" or "0" is true, 0 and "" are false.
	LIFO bool
	// LIFOInLua is the lifo option as BullMQ's Lua reads it from options
	// passed in msgpack (a job scheduler's next run): 0 and "" are true
	// too. It equals LIFO for a JSON boolean, which is all drover stores.
	LIFOInLua        bool
	Backoff          *Backoff
	RemoveOnComplete *Keep
	RemoveOnFail     *Keep
	StackTraceLimit  *int64
	KeepLogs         int64
	SizeLimit        int64
	Timeout          int64 // ms; drover only (see the option table)
	Timestamp        int64
	JobID            string
	Dedup            *Dedup
	// Telemetry is BullMQ's telemetry.metadata, stored as "tm": a trace
	// context serialized by the producer's telemetry adapter (bullmq-otel
	// writes a JSON object of propagation headers). Opaque here.
	Telemetry string
	// OmitContext is BullMQ's telemetry.omitContext, stored as "omc".
	OmitContext bool
	// Parent is set on a flow child; the job hash's parentKey and parent
	// fields are what the scripts read, this is the option as Node keeps it.
	Parent *Parent
	// The failure policy of a flow child toward its parent (fpof, cpof,
	// idof, rdof); at most one is set.
	FailParent       bool
	ContinueParent   bool
	IgnoreDependency bool
	RemoveDependency bool
	Extra            map[string]json.RawMessage
}

// AppendJSON appends the stored form of o to b. Key order is fixed; Node
// readers do not care about it.
func (o *Opts) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k)
		b = append(b, ':')
	}
	if o.JobID != "" {
		key("jobId")
		b = appendString(b, o.JobID)
	}
	if o.Delay != 0 {
		key("delay")
		b = strconv.AppendInt(b, o.Delay, 10)
	}
	if o.Priority != 0 {
		key("priority")
		b = strconv.AppendInt(b, o.Priority, 10)
	}
	if o.LIFO {
		key("lifo")
		b = append(b, "true"...)
	}
	if o.Timestamp != 0 {
		key("timestamp")
		b = strconv.AppendInt(b, o.Timestamp, 10)
	}
	if o.Backoff != nil {
		key("backoff")
		b = append(b, `{"type":`...)
		b = appendString(b, o.Backoff.Type)
		b = append(b, `,"delay":`...)
		b = strconv.AppendInt(b, o.Backoff.Delay, 10)
		if o.Backoff.Jitter != 0 {
			b = append(b, `,"jitter":`...)
			b = strconv.AppendFloat(b, o.Backoff.Jitter, 'g', -1, 64)
		}
		b = append(b, '}')
	}
	if o.RemoveOnComplete != nil && o.RemoveOnComplete.Set {
		key("removeOnComplete")
		b = o.RemoveOnComplete.AppendJSON(b)
	}
	if o.RemoveOnFail != nil && o.RemoveOnFail.Set {
		key("removeOnFail")
		b = o.RemoveOnFail.AppendJSON(b)
	}
	if o.StackTraceLimit != nil {
		key("stackTraceLimit")
		b = strconv.AppendInt(b, *o.StackTraceLimit, 10)
	}
	if o.KeepLogs != 0 {
		key("kl")
		b = strconv.AppendInt(b, o.KeepLogs, 10)
	}
	if o.SizeLimit != 0 {
		key("sizeLimit")
		b = strconv.AppendInt(b, o.SizeLimit, 10)
	}
	if o.Timeout != 0 {
		key("timeout")
		b = strconv.AppendInt(b, o.Timeout, 10)
	}
	if o.Dedup != nil {
		key("de")
		b = append(b, `{"id":`...)
		b = appendString(b, o.Dedup.ID)
		if o.Dedup.TTL != 0 {
			b = append(b, `,"ttl":`...)
			b = strconv.AppendInt(b, o.Dedup.TTL, 10)
		}
		if o.Dedup.Extend {
			b = append(b, `,"extend":true`...)
		}
		if o.Dedup.Replace {
			b = append(b, `,"replace":true`...)
		}
		if o.Dedup.KeepLastIfActive {
			b = append(b, `,"keepLastIfActive":true`...)
		}
		if o.Dedup.Reschedule {
			b = append(b, `,"reschedule":true`...)
		}
		for _, k := range sortedKeys(o.Dedup.Extra) {
			b = append(b, ',')
			b = appendString(b, k)
			b = append(b, ':')
			b = append(b, o.Dedup.Extra[k]...)
		}
		b = append(b, '}')
	}
	if o.Telemetry != "" {
		key("tm")
		b = appendString(b, o.Telemetry)
	}
	if o.OmitContext {
		key("omc")
		b = append(b, "true"...)
	}
	if o.Parent != nil {
		key("parent")
		b = append(b, `{"id":`...)
		b = appendString(b, o.Parent.ID)
		b = append(b, `,"queue":`...)
		b = appendString(b, o.Parent.Queue)
		b = append(b, '}')
	}
	for _, f := range o.ParentFlags() {
		key(f)
		b = append(b, "true"...)
	}
	for _, k := range sortedKeys(o.Extra) {
		key(k)
		b = append(b, o.Extra[k]...)
	}
	key("attempts")
	b = strconv.AppendInt(b, o.Attempts, 10)
	return append(b, '}')
}

func sortedKeys(m map[string]json.RawMessage) []string {
	if len(m) == 0 {
		return nil
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// num reads a JSON number that may be a float or use an exponent; null is 0.
// A string holding a decimal number counts as that number, as a Node
// producer's `attempts: process.env.ATTEMPTS` does in BullMQ: its worker
// compares the string as a number in JS and its Lua reads it with tonumber.
// A fraction is dropped.
func num(v json.RawMessage) (int64, error) { return numRounded(v, math.Trunc) }

// numRounded is num with a fraction rounded by round.
func numRounded(v json.RawMessage, round func(float64) float64) (int64, error) {
	if n, ok := plainInt(v); ok {
		return n, nil
	}
	s := string(bytes.TrimSpace(v))
	if s == "null" || s == "" {
		return 0, nil
	}
	if s[0] == '"' {
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return 0, fmt.Errorf("not a number: %s", s)
		}
		if t := strings.TrimSpace(str); t != "" && t != "null" && t[0] != '"' {
			n, err := numRounded(json.RawMessage(t), round)
			if err != nil {
				return 0, fmt.Errorf("not a number: %s", s)
			}
			return n, nil
		}
		return 0, fmt.Errorf("not a number: %s", s)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %s", s)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("not a finite number: %s", s)
	}
	return int64(round(f)), nil
}

// plainInt reads v when it is a plain decimal integer of up to 18 digits
// (what stored counts and times nearly always are) without the string
// strconv needs; ok is false for anything else.
func plainInt(v []byte) (n int64, ok bool) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
