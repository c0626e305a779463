package drover

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/seed40057009/drover/internal/jobcodec"
)

// This file is the one place JobOptions meets BullMQ's option JSON:
// jobcodec reads and writes the JSON (both the public names ParseJobOptions
// takes and the stored names of a job hash, from one table); the functions
// here convert between that and the Go struct.

func init() {
	jobcodec.OptionsToOpts = func(v any) (jobcodec.Opts, error) {
		o := v.(*JobOptions)
		// retentionKeep cannot store a negative field: refuse it rather
		// than store keep-all (Add refuses it too, through validate).
		for name, r := range map[string]*Retention{"RemoveOnComplete": o.RemoveOnComplete, "RemoveOnFail": o.RemoveOnFail} {
			if r != nil && (r.Count < 0 || r.Age < 0 || r.Limit < 0) {
				return jobcodec.Opts{}, optionError("JobOptions.%s fields must not be negative, got %+v", name, *r)
			}
		}
		// A RunAt has no stored option: kept as BullMQ keeps it, a
		// timestamp (now when unset) and the delay to RunAt from it, so an
		// outbox row added later is due at the same time.
		if !o.RunAt.IsZero() {
			c := *o
			if c.Timestamp.IsZero() {
				c.Timestamp = time.Now()
			}
			c = c.scheduledFrom(c.Timestamp)
			o = &c
		}
		return o.stored(), nil
	}
	jobcodec.OptsToOptions = func(s *jobcodec.Opts) any {
		o := optsFromStored(s)
		return &o
	}
}

// ParseJobOptions reads job options written as JSON with BullMQ's option
// names, e.g. {"attempts":3,"backoff":{"type":"exponential","delay":1000}},
// for tools that take options as text (the CLI, configuration files). Times
// are milliseconds, except removeOnX's age, in seconds. Every shape BullMQ
// accepts for the options drover knows means what it means in BullMQ:
// removeOnComplete/removeOnFail true, false, a count (0 removes, negative
// keeps all) or {age, count, limit} (count 0 removes); backoff as a number
// (a fixed delay) or {type, delay, jitter}; stackTraceLimit 0 keeps no
// trace. An unknown key, a value of the wrong type, a fraction, or a number
// BullMQ cannot store exactly (over 14 digits; a time over about 292 years)
// is an error that names the option (errors.Is ErrInvalidOption).
func ParseJobOptions(data []byte) (*JobOptions, error) {
	s, err := jobcodec.DecodePublicOpts(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	o := optsFromStored(&s)
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &o, nil
}

// stackTraceLimitToStored and stackTraceLimitFromStored are the one
// translation of the StackTraceLimit rule: drover's 0 means
// StackTraceLimitDefault and a negative value keeps no trace; BullMQ's
// stackTraceLimit 0 keeps no trace and absent keeps all (drover applies
// its default then).
func stackTraceLimitToStored(n int) int64 { return int64(max(n, 0)) }

func stackTraceLimitFromStored(n int64) int {
	if n <= 0 {
		return -1
	}
	return int(n)
}

// stored converts validated options to the stored opts.
func (o *JobOptions) stored() jobcodec.Opts {
	s := jobcodec.Opts{
		Attempts:  int64(o.Attempts),
		Delay:     o.Delay.Milliseconds(),
		Priority:  int64(o.Priority),
		LIFO:      o.LIFO,
		LIFOInLua: o.LIFO,
		KeepLogs:  int64(o.KeepLogs),
		JobID:     o.JobID,
	}
	if o.SizeLimit > 0 {
		s.SizeLimit = int64(o.SizeLimit)
	}
	s.Timeout = o.Timeout.Milliseconds()
	if !o.Timestamp.IsZero() {
		s.Timestamp = o.Timestamp.UnixMilli()
	}
	if b := o.Backoff; b != nil {
		s.Backoff = &jobcodec.Backoff{Type: b.Type, Delay: b.Delay.Milliseconds(), Jitter: b.Jitter}
	}
	s.RemoveOnComplete = retentionKeep(o.RemoveOnComplete)
	s.RemoveOnFail = retentionKeep(o.RemoveOnFail)
	if o.StackTraceLimit != 0 {
		n := stackTraceLimitToStored(o.StackTraceLimit)
		s.StackTraceLimit = &n
	}
	if d := o.Deduplication; d != nil {
		s.Dedup = &jobcodec.Dedup{ID: d.ID, TTL: d.TTL.Milliseconds(), Extend: d.Extend, Replace: d.Replace,
			KeepLastIfActive: d.KeepLastIfActive, Reschedule: d.Reschedule}
	}
	if t := o.Telemetry; t != nil {
		s.Telemetry, s.OmitContext = t.Metadata, t.OmitContext
	}
	switch o.ParentPolicy {
	case FailParent:
		s.FailParent = true
	case ContinueParent:
		s.ContinueParent = true
	case IgnoreDependency:
		s.IgnoreDependency = true
	case RemoveDependency:
		s.RemoveDependency = true
	}
	return s
}

// parentPolicyFromStored reads the policy flags; a Node job can carry only
// one (BullMQ refuses more), and the order here is the one parent.lua
// applies them in should one carry several.
func parentPolicyFromStored(s *jobcodec.Opts) ParentPolicy {
	switch {
	case s.FailParent:
		return FailParent
	case s.ContinueParent:
		return ContinueParent
	case s.IgnoreDependency:
		return IgnoreDependency
	case s.RemoveDependency:
		return RemoveDependency
	}
	return ParentWaits
}

// retentionKeep converts a Retention to the stored option: the shape it was
// read from while its fields still say the same, else the shortest shape
// that says it (or the object form, see Retention.Object).
func retentionKeep(r *Retention) *jobcodec.Keep {
	if r == nil {
		return nil
	}
	if r.form != nil && sameRetention(retentionFields(r.form), r) {
		return r.form
	}
	k := &jobcodec.Keep{Set: true}
	switch {
	case r.Object || r.Age > 0 || r.Limit > 0:
		k.Object = true
		k.AgeMs = r.Age.Milliseconds()
		k.Limit = int64(r.Limit)
		switch {
		case r.Remove:
			var zero int64
			k.Count = &zero
		case r.Count > 0:
			c := int64(r.Count)
			k.Count = &c
		}
	case r.Remove:
		t := true
		k.Bool = &t
	case r.Count > 0:
		c := int64(r.Count)
		k.Count = &c
	default:
		f := false
		k.Bool = &f
	}
	return k
}

// retentionFromKeep converts a stored option back (ParseJobOptions,
// Job.Opts), remembering its shape when the fields alone would store it
// differently.
func retentionFromKeep(k *jobcodec.Keep) *Retention {
	if k == nil || !k.Set {
		return nil
	}
	r := retentionFields(k)
	if !bytes.Equal(retentionKeep(r).AppendJSON(nil), k.AppendJSON(nil)) {
		r.form = k
	}
	return r
}

// retentionFields is what a stored option means (jobcodec.Keep.Spec) as
// Retention fields.
func retentionFields(k *jobcodec.Keep) *Retention {
	if k.Bool != nil {
		return &Retention{Remove: *k.Bool}
	}
	r := &Retention{Object: k.Object, Limit: int(max(k.Limit, 0))}
	if k.Count != nil {
		if *k.Count == 0 {
			r.Remove = true
		} else if *k.Count > 0 {
			r.Count = int(*k.Count)
		}
	}
	if k.AgeBound() {
		if k.AgeMs <= 0 {
			r.Remove = true
		} else {
			r.Age = msDuration(k.AgeMs)
		}
	}
	return r
}

// msDuration is a stored count of milliseconds as a Duration, clamped to
// the longest whole-ms Duration (about 292 years) either way. Node BullMQ
// stores any JavaScript number (a backoff delay of Number.MAX_SAFE_INTEGER
// ms, say); converted as it was, a value past that wrapped round, a backoff
// of 1e13 ms (317 years) coming out negative: retried at once.
func msDuration(ms int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(min(max(ms, -most), most)) * time.Millisecond
}

func sameRetention(a, b *Retention) bool {
	return a.Remove == b.Remove && a.Count == b.Count && a.Age == b.Age && a.Limit == b.Limit && a.Object == b.Object
}

func optsFromStored(s *jobcodec.Opts) JobOptions {
	o := JobOptions{
		JobID:            s.JobID,
		Delay:            msDuration(s.Delay),
		Priority:         int(s.Priority),
		LIFO:             s.LIFO,
		Attempts:         int(s.Attempts),
		RemoveOnComplete: retentionFromKeep(s.RemoveOnComplete),
		RemoveOnFail:     retentionFromKeep(s.RemoveOnFail),
		KeepLogs:         int(s.KeepLogs),
		SizeLimit:        int(s.SizeLimit),
		ParentPolicy:     parentPolicyFromStored(s),
		Timeout:          msDuration(s.Timeout),
	}
	if s.Timestamp != 0 {
		o.Timestamp = msTime(s.Timestamp)
	}
	if s.Backoff != nil {
		o.Backoff = &Backoff{Type: s.Backoff.Type, Delay: msDuration(s.Backoff.Delay), Jitter: s.Backoff.Jitter}
	}
	if s.StackTraceLimit != nil {
		o.StackTraceLimit = stackTraceLimitFromStored(*s.StackTraceLimit)
	}
	if s.Dedup != nil {
		o.Deduplication = &Deduplication{ID: s.Dedup.ID, TTL: msDuration(s.Dedup.TTL), Extend: s.Dedup.Extend, Replace: s.Dedup.Replace,
			KeepLastIfActive: s.Dedup.KeepLastIfActive, Reschedule: s.Dedup.Reschedule}
	}
	if s.Telemetry != "" || s.OmitContext {
		o.Telemetry = &Telemetry{Metadata: s.Telemetry, OmitContext: s.OmitContext}
	}
	return o
}
