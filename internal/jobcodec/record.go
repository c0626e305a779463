package jobcodec

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TimelineField is the job hash field holding drover's attempt timeline.
// Node BullMQ ignores fields it does not know, and deleting the job hash
// deletes it with the job.
const TimelineField = "drover.attempts"

// Record is a job hash decoded. Times are ms since the epoch (0 = absent).
type Record struct {
	ID              string
	Name            string
	Data            json.RawMessage
	RawOpts         string
	Opts            Opts
	Timestamp       int64
	Delay           int64
	Priority        int64
	ProcessedOn     int64
	FinishedOn      int64
	AttemptsMade    int64
	AttemptsStarted int64
	StalledCounter  int64
	ReturnValue     json.RawMessage
	FailedReason    string
	Stacktrace      []string
	Progress        json.RawMessage
	ProcessedBy     string
	DeferredFailure string
	DedupID         string
	RepeatJobKey    string
	ParentKey       string
	Parent          json.RawMessage
	Timeline        string
}

// FieldError is a job hash field that does not decode: the hash was
// written by another tool, or damaged. Readers of many jobs tell it from a
// failed read (errors.As) and go on with the others.
type FieldError struct {
	ID, Field string
	Err       error
}

func (e *FieldError) Error() string { return fmt.Sprintf("job %s: field %s: %v", e.ID, e.Field, e.Err) }

func (e *FieldError) Unwrap() error { return e.Err }

// Decode reads a job hash given as a flat field/value list (HGETALL, or a
// script reply). An empty list means the job does not exist: ok is false.
// data and opts must be valid JSON, as Node requires; a bad stacktrace or
// returnvalue is tolerated (read as empty), as Node does, and so is a
// numeric field that is no number (read as 0, see intField).
func Decode(id string, flat []any) (rec Record, ok bool, err error) {
	if len(flat) == 0 {
		return rec, false, nil
	}
	rec.ID = id
	for i := 0; i+1 < len(flat); i += 2 {
		f, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		if err := rec.set(f, v); err != nil {
			return rec, true, &FieldError{ID: id, Field: f, Err: err}
		}
	}
	if rec.Data == nil {
		rec.Data = json.RawMessage("{}")
	}
	return rec, true, nil
}

// DecodeMap is Decode for a field map (go-redis HGetAll).
func DecodeMap(id string, m map[string]string) (rec Record, ok bool, err error) {
	if len(m) == 0 {
		return rec, false, nil
	}
	rec.ID = id
	for f, v := range m {
		if err := rec.set(f, v); err != nil {
			return rec, true, &FieldError{ID: id, Field: f, Err: err}
		}
	}
	if rec.Data == nil {
		rec.Data = json.RawMessage("{}")
	}
	return rec, true, nil
}

func (r *Record) set(f, v string) error {
	var err error
	switch f {
	case "name":
		r.Name = v
	case "data":
		var ok bool
		if r.Data, ok = RawJSON(v); !ok {
			return fmt.Errorf("not JSON")
		}
	case "opts":
		r.RawOpts = v
		r.Opts, err = decodeOptsCached(v)
	case "timestamp":
		r.Timestamp = intField(v)
	case "delay":
		r.Delay = intField(v)
	case "priority":
		r.Priority = intField(v)
	case "processedOn":
		r.ProcessedOn = intField(v)
	case "finishedOn":
		r.FinishedOn = intField(v)
	case "atm":
		r.AttemptsMade = intField(v)
	case "attemptsMade": // pre-v5 name, read when atm is absent
		if r.AttemptsMade == 0 {
			r.AttemptsMade = intField(v)
		}
	case "ats":
		r.AttemptsStarted = intField(v)
	case "stc":
		r.StalledCounter = intField(v)
	case "returnvalue":
		r.ReturnValue, _ = RawJSON(v)
	case "failedReason":
		r.FailedReason = v
	case "stacktrace":
		r.Stacktrace = decodeStack(v)
	case "progress":
		r.Progress, _ = RawJSON(v)
	case "pb":
		r.ProcessedBy = v
	case "defa":
		r.DeferredFailure = v
	case "deid":
		r.DedupID = v
	case "rjk":
		r.RepeatJobKey = v
	case "parentKey":
		r.ParentKey = v
	case "parent":
		r.Parent = json.RawMessage(v)
	case TimelineField:
		r.Timeline = v
	}
	return err
}

// intField parses a numeric hash field; Lua may have written it as a float
// in exponent form ("1.2345678901234568e+17"). A value that is no finite
// number in int64's range ("abc", "NaN", "1e400", left by another tool or
// an old version) reads as 0, as if absent: BullMQ's worker parses it to
// NaN and runs the job all the same, and the scripts read such a field as
// 0 (tonumber(...) or 0), so refusing the job would fail one that Node
// runs.
func intField(v string) int64 {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	// -2^63 is an int64, 2^63 is not; NaN fails both comparisons.
	if err != nil || !(f >= math.MinInt64 && f < math.MaxInt64) {
		return 0
	}
	return int64(f)
}

// decodeStack reads the stacktrace array; cjson writes an empty one as {}.
func decodeStack(v string) []string {
	var s []string
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil
	}
	return s
}

// EncodeStack is the stored form of a stacktrace list (never null).
func EncodeStack(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// SchedulerRun reads, from a job hash that Decode refused, what creating
// a job scheduler's next run needs: the run's id, its scheduler (rjk), its
// opts JSON and, read as BullMQ's scheduler scripts read them from those
// opts, its priority and lifo. A worker creates the next run when it takes
// a run, before it looks at the run further, as Node's workers do, so a
// run whose hash has a field drover cannot decode (another option, say)
// must not stop its scheduler. ok is false when the hash names no
// scheduler or its opts are not a JSON object.
func SchedulerRun(id string, flat []any) (rec Record, ok bool) {
	for i := 0; i+1 < len(flat); i += 2 {
		f, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		switch f {
		case "rjk":
			rec.RepeatJobKey = v
		case "opts":
			rec.RawOpts = v
		}
	}
	var opts map[string]json.RawMessage
	if rec.RepeatJobKey == "" || json.Unmarshal([]byte(rec.RawOpts), &opts) != nil || opts == nil {
		return Record{}, false
	}
	rec.ID = id
	if p, ok := opts["priority"]; ok {
		rec.Opts.Priority, _ = num(p)
	}
	if l, ok := opts["lifo"]; ok {
		rec.Opts.LIFO, rec.Opts.LIFOInLua = jsTruthy(l), luaTruthy(l)
	}
	return rec, true
}
