package drover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// jobOptionNames are the keys ParseJobOptions knows: BullMQ's public option
// names, with times in milliseconds (age in seconds) as in BullMQ.
var jobOptionNames = []string{
	"jobId", "delay", "priority", "lifo", "attempts", "backoff", "removeOnComplete",
	"removeOnFail", "timestamp", "stackTraceLimit", "keepLogs", "sizeLimit", "deduplication",
}

// ParseJobOptions reads job options written as JSON with BullMQ's option
// names, e.g. {"attempts":3,"backoff":{"type":"exponential","delay":1000}},
// for tools that take options as text (the CLI, configuration files). Times
// are milliseconds, except removeOnX's age, in seconds. An unknown key, a
// value of the wrong type or a value drover refuses is an error that names
// the option.
func ParseJobOptions(data []byte) (*JobOptions, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: job options are not a JSON object: %w", ErrInvalidOption, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var o JobOptions
	for _, k := range keys {
		v := m[k]
		var err error
		switch k {
		case "jobId":
			err = json.Unmarshal(v, &o.JobID)
		case "delay":
			o.Delay, err = parseMillis(v)
		case "priority":
			err = json.Unmarshal(v, &o.Priority)
		case "lifo":
			err = json.Unmarshal(v, &o.LIFO)
		case "attempts":
			err = json.Unmarshal(v, &o.Attempts)
		case "backoff":
			o.Backoff, err = parseBackoff(v)
		case "removeOnComplete":
			o.RemoveOnComplete, err = parseRetention(v)
		case "removeOnFail":
			o.RemoveOnFail, err = parseRetention(v)
		case "timestamp":
			var ms int64
			if err = json.Unmarshal(v, &ms); err == nil {
				o.Timestamp = time.UnixMilli(ms)
			}
		case "stackTraceLimit":
			err = json.Unmarshal(v, &o.StackTraceLimit)
			if err == nil && o.StackTraceLimit == 0 {
				o.StackTraceLimit = -1 // BullMQ's 0 keeps none
			}
		case "keepLogs":
			err = json.Unmarshal(v, &o.KeepLogs)
		case "sizeLimit":
			err = json.Unmarshal(v, &o.SizeLimit)
		case "deduplication":
			o.Deduplication, err = parseDeduplication(v)
		default:
			return nil, fmt.Errorf("%w: unknown job option %q (known: %s)", ErrInvalidOption, k, strings.Join(jobOptionNames, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: job option %q: %w", ErrInvalidOption, k, err)
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &o, nil
}

func parseMillis(v json.RawMessage) (time.Duration, error) {
	var ms int64
	if err := json.Unmarshal(v, &ms); err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func strictObject(v json.RawMessage, into any) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func parseBackoff(v json.RawMessage) (*Backoff, error) {
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] != '{' {
		d, err := parseMillis(v) // BullMQ's number form: a fixed delay
		if err != nil {
			return nil, err
		}
		return &Backoff{Type: BackoffFixed, Delay: d}, nil
	}
	var b struct {
		Type   string  `json:"type"`
		Delay  int64   `json:"delay"`
		Jitter float64 `json:"jitter"`
	}
	if err := strictObject(v, &b); err != nil {
		return nil, err
	}
	return &Backoff{Type: b.Type, Delay: time.Duration(b.Delay) * time.Millisecond, Jitter: b.Jitter}, nil
}

func parseRetention(v json.RawMessage) (*Retention, error) {
	t := bytes.TrimSpace(v)
	switch {
	case len(t) > 0 && t[0] == '{':
		var r struct {
			Age   int64 `json:"age"`
			Count int   `json:"count"`
			Limit int   `json:"limit"`
		}
		if err := strictObject(v, &r); err != nil {
			return nil, err
		}
		return &Retention{Age: time.Duration(r.Age) * time.Second, Count: r.Count, Limit: r.Limit}, nil
	case string(t) == "true" || string(t) == "false":
		return &Retention{Remove: string(t) == "true"}, nil
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return nil, err
	}
	if n == 0 {
		return &Retention{Remove: true}, nil // BullMQ: keep 0 = remove
	}
	return &Retention{Count: n}, nil
}

func parseDeduplication(v json.RawMessage) (*Deduplication, error) {
	var d struct {
		ID      string `json:"id"`
		TTL     int64  `json:"ttl"`
		Extend  bool   `json:"extend"`
		Replace bool   `json:"replace"`
	}
	if err := strictObject(v, &d); err != nil {
		return nil, err
	}
	return &Deduplication{ID: d.ID, TTL: time.Duration(d.TTL) * time.Millisecond, Extend: d.Extend, Replace: d.Replace}, nil
}
