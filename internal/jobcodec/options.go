package jobcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Limits of the numbers a job option may hold. BullMQ stores options with
// Lua's cjson, which writes numbers with 14 significant digits, so a larger
// integer would come back rounded; drover keeps durations as time.Duration,
// so a time in ms must also fit one (about 292 years).
const (
	// MaxCount bounds counts (attempts, keepLogs, sizeLimit, stackTraceLimit,
	// a retention's count and limit): the largest integer cjson writes exactly.
	MaxCount int64 = 1e14 - 1
	// MaxMillis bounds times in ms (delay, backoff delay, deduplication TTL,
	// timestamp): the largest whole ms a time.Duration holds.
	MaxMillis int64 = math.MaxInt64 / 1_000_000
)

// option is one job option: its name in BullMQ's public options
// (JobsOptions: what `drover add --opts`, ParseJobOptions and the outbox
// read), its name in the stored opts JSON of a job hash, and how a value is
// read into Opts. strict is set for public input: a value of the wrong type
// or out of range is an error; stored values, written by Node or by drover,
// are read as leniently as Node reads them (spec §2.2).
//
// To add an option: a field in Opts, a row here, its case in AppendJSON, and
// its conversion in the root package's options_codec.go. An empty public
// (or stored) name means the row is read only from stored (or public) JSON:
// BullMQ's one public telemetry object is stored as two keys, tm and omc.
type option struct {
	public, stored string
	read           func(o *Opts, v json.RawMessage, strict bool) error
}

var optionTable = []option{
	{"jobId", "jobId", func(o *Opts, v json.RawMessage, _ bool) (err error) {
		o.JobID, err = jsonString(v)
		return err
	}},
	{"delay", "delay", intReader(func(o *Opts) *int64 { return &o.Delay }, MaxMillis)},
	{"priority", "priority", intReader(func(o *Opts) *int64 { return &o.Priority }, 1<<21-1)},
	{"lifo", "lifo", func(o *Opts, v json.RawMessage, strict bool) error {
		if strict {
			err := json.Unmarshal(v, &o.LIFO)
			o.LIFOInLua = o.LIFO
			return err
		}
		o.LIFO, o.LIFOInLua = jsTruthy(v), luaTruthy(v)
		return nil
	}},
	{"attempts", "attempts", func(o *Opts, v json.RawMessage, strict bool) (err error) {
		o.HasAttempts = true
		if !strict {
			// BullMQ retries while attemptsMade < attempts, so a stored
			// fraction (2.5) allows as many runs as the next whole number.
			o.Attempts, err = numRounded(v, math.Ceil)
			return err
		}
		return intReader(func(o *Opts) *int64 { return &o.Attempts }, MaxCount)(o, v, strict)
	}},
	{"backoff", "backoff", func(o *Opts, v json.RawMessage, strict bool) (err error) {
		o.Backoff, err = decodeBackoff(v, strict)
		return err
	}},
	{"removeOnComplete", "removeOnComplete", func(o *Opts, v json.RawMessage, strict bool) (err error) {
		o.RemoveOnComplete, err = decodeKeep(v, strict)
		return err
	}},
	{"removeOnFail", "removeOnFail", func(o *Opts, v json.RawMessage, strict bool) (err error) {
		o.RemoveOnFail, err = decodeKeep(v, strict)
		return err
	}},
	{"timestamp", "timestamp", intReader(func(o *Opts) *int64 { return &o.Timestamp }, MaxMillis)},
	{"stackTraceLimit", "stackTraceLimit", func(o *Opts, v json.RawMessage, strict bool) error {
		var n int64
		if err := readInt(&n, v, strict, MaxCount); err != nil {
			return err
		}
		o.StackTraceLimit = &n
		return nil
	}},
	{"keepLogs", "kl", intReader(func(o *Opts) *int64 { return &o.KeepLogs }, MaxCount)},
	{"sizeLimit", "sizeLimit", intReader(func(o *Opts) *int64 { return &o.SizeLimit }, MaxCount)},
	// timeout (ms) is drover's: BullMQ 6.7 has no such option, keeps the key
	// as it keeps any key it does not know (Job.optsFromJSON copies it
	// through, the scripts never read it), and so does a Node producer given
	// {timeout: ms}. Only drover workers apply it.
	{"timeout", "timeout", intReader(func(o *Opts) *int64 { return &o.Timeout }, MaxMillis)},
	{"deduplication", "de", func(o *Opts, v json.RawMessage, strict bool) (err error) {
		o.Dedup, err = decodeDedup(v, strict)
		return err
	}},
	{"telemetry", "", decodeTelemetry},
	{"", "tm", func(o *Opts, v json.RawMessage, _ bool) error {
		// Node stores whatever string its adapter made; anything else is
		// not a context drover can read, so it stays verbatim in Extra.
		if json.Unmarshal(v, &o.Telemetry) != nil {
			o.keep("tm", v)
		}
		return nil
	}},
	{"", "omc", func(o *Opts, v json.RawMessage, _ bool) error {
		// BullMQ's Job.moveToFailed tests telemetry.omitContext in JS.
		o.OmitContext = jsTruthy(v)
		return nil
	}},
	// A flow child's failure policy toward its parent: four flags, of which
	// BullMQ's Job.validateOptions allows at most one (ParentFlags checks).
	{"failParentOnFailure", "fpof", flagReader(func(o *Opts) *bool { return &o.FailParent })},
	{"continueParentOnFailure", "cpof", flagReader(func(o *Opts) *bool { return &o.ContinueParent })},
	{"ignoreDependencyOnFailure", "idof", flagReader(func(o *Opts) *bool { return &o.IgnoreDependency })},
	{"removeDependencyOnFailure", "rdof", flagReader(func(o *Opts) *bool { return &o.RemoveDependency })},
	{"parent", "parent", func(o *Opts, v json.RawMessage, strict bool) error {
		if strict {
			// A parent is named by the tree a FlowProducer adds, never by
			// options text: Queue.Add does not attach jobs to parents.
			return errors.New("not accepted here: add the job with a FlowProducer (FlowJob.Parent)")
		}
		var p Parent
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		o.Parent = &p
		return nil
	}},
}

// storedToPublic maps each option stored under a name of its own (kl,
// de, fpof, ...) to its public name, from optionTable.
var storedToPublic = func() map[string]string {
	m := map[string]string{}
	for _, o := range optionTable {
		if o.public != "" && o.stored != "" && o.public != o.stored {
			m[o.stored] = o.public
		}
	}
	return m
}()

// PublicOptNames is stored opts JSON under BullMQ's public option names, as
// Node's Job.optsFromJSON gives them back (a job scheduler's template
// options): a key stored short gets its public name, tm and omc become
// telemetry's metadata and omitContext; every value stays as stored. Text
// that is not a JSON object is returned as it is.
func PublicOptNames(stored string) string {
	var in map[string]json.RawMessage
	if stored == "" || json.Unmarshal([]byte(stored), &in) != nil {
		return stored
	}
	out := make(map[string]json.RawMessage, len(in))
	telemetry := map[string]json.RawMessage{}
	for k, v := range in {
		switch k {
		case "tm":
			telemetry["metadata"] = v
		case "omc":
			telemetry["omitContext"] = v
		default:
			if public, ok := storedToPublic[k]; ok {
				k = public
			}
			out[k] = v
		}
	}
	if len(telemetry) > 0 {
		out["telemetry"], _ = json.Marshal(telemetry) // values are JSON Unmarshal read
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// keep stores an undecoded key verbatim in Extra.
func (o *Opts) keep(k string, v json.RawMessage) {
	if o.Extra == nil {
		o.Extra = make(map[string]json.RawMessage)
	}
	o.Extra[k] = v
}

// decodeTelemetry reads BullMQ's public telemetry option,
// {"metadata": string, "omitContext": bool} (public input only).
func decodeTelemetry(o *Opts, v json.RawMessage, _ bool) error {
	var raw struct {
		Metadata    *string `json:"metadata"`
		OmitContext *bool   `json:"omitContext"`
	}
	if err := strictObject(v, &raw); err != nil {
		return fmt.Errorf("want {metadata: string, omitContext: bool}: %w", err)
	}
	if raw.Metadata != nil {
		o.Telemetry = *raw.Metadata
	}
	if raw.OmitContext != nil {
		o.OmitContext = *raw.OmitContext
	}
	return nil
}

// flagReader reads a flow child's failure-policy flag. Strict: a JSON
// boolean. Lenient: by JS truthiness, as BullMQ's Job constructor copies
// the flag into the job's parent field (which its scripts and drover's
// read) only when the option is truthy in JS: "false" sets it, 0 does not.
func flagReader(field func(*Opts) *bool) func(*Opts, json.RawMessage, bool) error {
	return func(o *Opts, v json.RawMessage, strict bool) error {
		if strict {
			return json.Unmarshal(v, field(o))
		}
		*field(o) = jsTruthy(v)
		return nil
	}
}

// jsTruthy reports whether a stored JSON value is true to JavaScript's `if`:
// everything but false, null, a zero and the empty string. A Node producer
// may store any value for a flag (lifo: "false", from an environment
// variable), and BullMQ's worker tests it so.
func jsTruthy(v json.RawMessage) bool {
	s := bytes.TrimSpace(v)
	switch string(s) {
	case "", "false", "null", `""`:
		return false
	}
	if c := s[0]; c == '-' || (c >= '0' && c <= '9') {
		f, err := strconv.ParseFloat(string(s), 64)
		return err != nil || f != 0
	}
	return true
}

// luaTruthy reports whether a stored JSON value is true to BullMQ's Lua
// after the value went through msgpack: everything but false and null (0
// and "" included). BullMQ's scripts test a flag so when they get the
// options as an argument (a job scheduler's next run, an add).
func luaTruthy(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "false", "null":
		return false
	}
	return true
}

// ParentFlags lists the stored names of the failure-policy flags o sets, in
// the table's order. BullMQ refuses a job with more than one.
func (o *Opts) ParentFlags() []string {
	var names []string
	for _, f := range []struct {
		set  bool
		name string
	}{{o.FailParent, "fpof"}, {o.ContinueParent, "cpof"}, {o.IgnoreDependency, "idof"}, {o.RemoveDependency, "rdof"}} {
		if f.set {
			names = append(names, f.name)
		}
	}
	return names
}

// PublicOptionNames lists the public option names DecodePublicOpts
// accepts: not parent, which it knows only to refuse.
func PublicOptionNames() []string {
	names := make([]string, 0, len(optionTable))
	for _, opt := range optionTable {
		if opt.public != "" && opt.public != "parent" {
			names = append(names, opt.public)
		}
	}
	return names
}

// storedOption is the optionTable row of a stored key, -1 for none.
func storedOption(k string) int {
	for i := range optionTable {
		if optionTable[i].stored == k && k != "" {
			return i
		}
	}
	return -1
}

// DecodeOpts parses a stored opts JSON, tolerating Node's encodings. Keys
// it does not know are kept in Extra.
func DecodeOpts(raw string) (Opts, error) {
	var o Opts
	if raw == "" {
		return o, nil
	}
	ms, err := members([]byte(raw))
	if err != nil {
		return o, fmt.Errorf("opts is not a JSON object: %w", err)
	}
	for _, m := range ms {
		i := storedOption(m.key)
		if i < 0 {
			o.keep(m.key, m.val)
			continue
		}
		if err := optionTable[i].read(&o, m.val, false); err != nil {
			return o, fmt.Errorf("opts.%s: %w", m.key, err)
		}
	}
	return o, nil
}

// DecodePublicOpts parses job options written with BullMQ's public names
// and units (times in ms, a retention's age in seconds), e.g.
// {"attempts":3,"backoff":{"type":"exponential","delay":1000}}. It is
// strict where BullMQ stores whatever it is given: an unknown key, a value
// of the wrong type, a fraction or a number out of range (MaxCount,
// MaxMillis, priority 2^21-1) is an error naming the option, so a bad value
// is refused before anything is written instead of wrapping or rounding.
func DecodePublicOpts(data []byte) (Opts, error) {
	var o Opts
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		if !json.Valid(data) {
			return o, fmt.Errorf("job options are not valid JSON: %w", err)
		}
		// Valid JSON of another kind: say which, not the decoder's Go
		// types ("cannot unmarshal array into Go value of type map[...]").
		return o, fmt.Errorf("job options are not a JSON object: got %s", jsonKind(data))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := slices.IndexFunc(optionTable, func(opt option) bool { return opt.public != "" && opt.public == k })
		if i < 0 {
			return o, fmt.Errorf("unknown job option %q (known: %s)", k, strings.Join(PublicOptionNames(), ", "))
		}
		if err := optionTable[i].read(&o, m[k], true); err != nil {
			return o, fmt.Errorf("job option %q: %w", k, err)
		}
	}
	if flags := o.ParentFlags(); len(flags) > 1 {
		public := make([]string, len(flags))
		for i, f := range flags {
			public[i] = optionTable[slices.IndexFunc(optionTable, func(opt option) bool { return opt.stored == f })].public
		}
		return o, fmt.Errorf("job options %s cannot be used together", strings.Join(public, ", "))
	}
	return o, nil
}

func intReader(field func(*Opts) *int64, limit int64) func(*Opts, json.RawMessage, bool) error {
	return func(o *Opts, v json.RawMessage, strict bool) error {
		return readInt(field(o), v, strict, limit)
	}
}

// readInt reads a number into dst. Strict: a JSON number that is a whole
// value within [0, limit]. Lenient: num's rules.
func readInt(dst *int64, v json.RawMessage, strict bool, limit int64) error {
	if !strict {
		n, err := num(v)
		*dst = n
		return err
	}
	n, err := wholeNumber(v)
	if err != nil {
		return err
	}
	if n < 0 || n > float64(limit) {
		return fmt.Errorf("must be between 0 and %d, got %s", limit, bytes.TrimSpace(v))
	}
	*dst = int64(n)
	return nil
}

// wholeNumber reads a JSON number that must have no fraction.
func wholeNumber(v json.RawMessage) (float64, error) {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return 0, fmt.Errorf("want a number, got %s", bytes.TrimSpace(v))
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("want a whole number, got %s", bytes.TrimSpace(v))
	}
	return f, nil
}

// strictObject decodes a JSON object refusing unknown keys.
func strictObject(v json.RawMessage, into any) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func decodeBackoff(v json.RawMessage, strict bool) (*Backoff, error) {
	s := bytes.TrimSpace(v)
	if len(s) > 0 && s[0] != '{' {
		if string(s) == "null" && !strict {
			return nil, nil
		}
		// BullMQ's number form, stored normalized: a fixed delay.
		b := &Backoff{Type: "fixed"}
		return b, readInt(&b.Delay, v, strict, MaxMillis)
	}
	if !strict {
		if b, ok := storedBackoff(v); ok {
			return b, nil
		}
	}
	return backoffObject(v, strict)
}

// backoffObject reads a backoff object with encoding/json: public input,
// and stored objects storedBackoff does not read.
func backoffObject(v json.RawMessage, strict bool) (*Backoff, error) {
	var raw struct {
		Type   *string         `json:"type"`
		Delay  json.RawMessage `json:"delay"`
		Jitter *float64        `json:"jitter"`
	}
	if strict {
		if err := strictObject(v, &raw); err != nil {
			return nil, err
		}
	} else if err := json.Unmarshal(v, &raw); err != nil {
		return nil, err
	}
	b := &Backoff{}
	if raw.Type != nil {
		b.Type = *raw.Type
	}
	if raw.Jitter != nil {
		b.Jitter = *raw.Jitter
	}
	if raw.Delay != nil {
		if err := readInt(&b.Delay, raw.Delay, strict, MaxMillis); err != nil {
			return nil, fmt.Errorf("delay: %w", err)
		}
	}
	if strict {
		switch {
		case b.Type == "":
			return nil, errors.New(`type is required ("fixed", "exponential" or a custom strategy)`)
		case b.Jitter < 0 || b.Jitter > 1:
			return nil, fmt.Errorf("jitter must be between 0 and 1, got %v", b.Jitter)
		}
	}
	return b, nil
}

// storedBackoff reads a stored backoff object without reflection when it
// has only the keys type (a string), delay (a plain integer) and jitter (a
// number), spelled so (a repeated key counts once, with its last value);
// ok is false for anything else, which backoffObject reads (it also
// matches keys spelled in other cases, as encoding/json does).
func storedBackoff(v []byte) (b *Backoff, ok bool) {
	ms, err := members(v)
	if err != nil || ms == nil {
		return nil, false
	}
	b = &Backoff{}
	for _, m := range ms {
		switch m.key {
		case "type":
			if b.Type, err = jsonString(m.val); err != nil {
				return nil, false
			}
		case "delay":
			if b.Delay, ok = plainInt(m.val); !ok {
				return nil, false
			}
		case "jitter":
			if b.Jitter, err = strconv.ParseFloat(string(m.val), 64); err != nil {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return b, true
}

// decodeKeep reads removeOnComplete/removeOnFail: true, false, a count or
// {age (seconds), count, limit}, keeping the shape as given (Keep.Spec says
// what it means). Public input must be whole numbers BullMQ stores exactly.
func decodeKeep(v json.RawMessage, strict bool) (*Keep, error) {
	s := bytes.TrimSpace(v)
	k := &Keep{Set: true}
	switch {
	case string(s) == "true" || string(s) == "false":
		b := string(s) == "true"
		k.Bool = &b
	case string(s) == "null" && !strict:
		return nil, nil
	case len(s) > 0 && s[0] == '"' && !strict:
		// BullMQ's worker reads any value that is neither an object nor a
		// number by its truthiness: a non-empty string removes the job.
		b := string(s) != `""`
		k.Bool = &b
	case len(s) > 0 && s[0] == '{':
		raw, err := members(s)
		if err != nil {
			return nil, err
		}
		k.Object = true
		for _, m := range raw {
			key, val := m.key, m.val
			var n int64
			var err error
			switch {
			case key == "count" && strict:
				n, err = countOf(val)
			case key == "age" && !strict:
				// Node stores what it was given, a fraction of a second too.
				n, err = ageMillis(val)
			case key == "age" || key == "limit" || key == "count":
				err = readInt(&n, val, strict, map[string]int64{"age": MaxMillis / 1000, "limit": MaxCount, "count": MaxCount}[key])
			default:
				if strict {
					err = errors.New("unknown field (want age, count, limit)")
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			switch key {
			case "age":
				if strict {
					n *= 1000
				}
				k.AgeMs, k.HasAge = n, true
			case "count":
				k.Count = &n
			case "limit":
				k.Limit, k.HasLimit = n, true
			}
		}
	default:
		var n int64
		var err error
		if strict {
			if n, err = countOf(s); err != nil {
				if strings.HasPrefix(err.Error(), "want") {
					err = errors.New("want true, false, a count or {age, count, limit}")
				}
				return nil, err
			}
		} else if n, err = num(s); err != nil {
			return nil, err
		}
		k.Count = &n
	}
	return k, nil
}

// ageMillis reads a stored retention age in seconds, a fraction or an
// exponent included, as whole milliseconds; null is 0. A string holding a
// number is that number, as BullMQ's Lua coerces it.
func ageMillis(v json.RawMessage) (int64, error) {
	s := string(bytes.TrimSpace(v))
	if s == "null" || s == "" {
		return 0, nil
	}
	if s[0] == '"' {
		// A string of digits ("3600" from an environment variable):
		// BullMQ's Lua multiplies it by 1000, coercing it to a number.
		var str string
		if err := json.Unmarshal(v, &str); err != nil || strings.TrimSpace(str) == "" {
			return 0, fmt.Errorf("not a number: %s", s)
		}
		s = strings.TrimSpace(str)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %s", s)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > float64(MaxMillis/1000) {
		return 0, fmt.Errorf("not a finite number of seconds up to %d: %s", MaxMillis/1000, s)
	}
	return int64(math.Round(f * 1000)), nil
}

// countOf reads a public retention count: a whole number of at most
// MaxCount; a negative one (BullMQ: keep every job) down to -MaxCount.
func countOf(v json.RawMessage) (int64, error) {
	f, err := wholeNumber(v)
	if err != nil {
		return 0, err
	}
	if f > float64(MaxCount) || f < -float64(MaxCount) {
		return 0, fmt.Errorf("must be between %d and %d, got %s", -MaxCount, MaxCount, bytes.TrimSpace(v))
	}
	return int64(f), nil
}

func decodeDedup(v json.RawMessage, strict bool) (*Dedup, error) {
	raw, err := members(v)
	if err != nil {
		return nil, err
	}
	d := &Dedup{}
	for _, m := range raw {
		k, val := m.key, m.val
		var err error
		switch k {
		case "id":
			d.ID, err = jsonString(val)
		case "ttl":
			err = readInt(&d.TTL, val, strict, MaxMillis)
		case "extend", "replace", "keepLastIfActive", "reschedule":
			var b bool
			if strict {
				err = json.Unmarshal(val, &b)
			} else {
				// BullMQ's scripts read these flags (Lua truthiness).
				b = luaTruthy(val)
			}
			switch k {
			case "extend":
				d.Extend = b
			case "replace":
				d.Replace = b
			case "reschedule":
				d.Reschedule = b
			default:
				d.KeepLastIfActive = b
			}
		default:
			if strict {
				err = errors.New("unknown field (want id, ttl, extend, replace, keepLastIfActive, reschedule)")
				break
			}
			if d.Extra == nil {
				d.Extra = make(map[string]json.RawMessage)
			}
			d.Extra[k] = val
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if strict && d.ID == "" {
		return nil, errors.New("id is required")
	}
	return d, nil
}

// jsonKind names the kind of the valid JSON value data: "an array", "a
// string", "a number", "a boolean" or "null".
func jsonKind(data []byte) string {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			return "an array"
		case '"':
			return "a string"
		case 't', 'f':
			return "a boolean"
		case 'n':
			return "null"
		case '{':
			return "an object"
		}
		return "a number"
	}
	return "nothing"
}
