package jobcodec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// field is one member of a JSON object: its key, unescaped, and the raw
// text of its value.
type field struct {
	key string
	val json.RawMessage
}

// members splits the JSON object in data into its members, in order, a
// repeated key keeping its last value (where it first appeared), as
// json.Unmarshal into a map keeps it (nesting bounded by maxDepth, as
// there). A JSON null is an object without
// members, as it is to json.Unmarshal into a map. It accepts and refuses
// the same texts json.Unmarshal does for a map[string]json.RawMessage.
//
// Why not json.Unmarshal: decoding a job's stored opts runs for every
// fetched job whose opts text is new (a custom job id or a deduplication id
// makes every job's new), and the map and reflection there cost several
// times what the options themselves are worth.
func members(data []byte) ([]field, error) {
	s := scanner{data: data}
	s.space()
	if s.literal("null") {
		s.space()
		if s.i != len(s.data) {
			return nil, s.errorf("after top-level value")
		}
		return nil, nil
	}
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		if err := s.value(0); err != nil {
			return nil, err
		}
		return nil, errors.New("not a JSON object")
	}
	s.i++
	out := make([]field, 0, 8)
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
	} else {
		for {
			s.space()
			key, err := s.key()
			if err != nil {
				return nil, err
			}
			s.space()
			if !s.next(':') {
				return nil, s.errorf("after object key")
			}
			s.space()
			start := s.i
			if err := s.value(1); err != nil {
				return nil, err
			}
			out = setMember(out, key, s.data[start:s.i])
			s.space()
			if s.next(',') {
				continue
			}
			if s.next('}') {
				break
			}
			return nil, s.errorf("after object key:value pair")
		}
	}
	s.space()
	if s.i != len(s.data) {
		return nil, s.errorf("after top-level value")
	}
	return out, nil
}

// setMember sets key to val in ms: a key already there keeps its place and
// takes the later value.
func setMember(ms []field, key string, val []byte) []field {
	for i := range ms {
		if ms[i].key == key {
			ms[i].val = val
			return ms
		}
	}
	return append(ms, field{key, val})
}

// scanner validates JSON text as encoding/json's scanner does.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) errorf(where string) error {
	if s.i >= len(s.data) {
		return errors.New("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %s %s", quoteChar(s.data[s.i]), where)
}

// quoteChar names a byte as encoding/json's errors do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) next(c byte) bool {
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.i >= len(lit) && string(s.data[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// key reads an object key, unescaped.
func (s *scanner) key() (string, error) {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return "", s.errorf("looking for beginning of object key string")
	}
	start := s.i
	plain, err := s.str()
	if err != nil {
		return "", err
	}
	return stringOf(s.data[start:s.i], plain)
}

// stringOf is the Go string of the JSON string text (quotes included);
// plain says it has no escape and no byte outside ASCII, so it is its own
// content.
func stringOf(text []byte, plain bool) (string, error) {
	if plain {
		return knownKey(text[1 : len(text)-1]), nil
	}
	var out string
	err := json.Unmarshal(text, &out)
	return out, err
}

// knownKeys are the keys stored opts use: the table's stored names, then
// the keys inside stored option objects (backoff, deduplication,
// retention). Filled by init: optionTable's readers reach knownKey, so a
// variable initialised from the table would be a cycle.
var knownKeys []string

func init() {
	for _, o := range optionTable {
		if o.stored != "" {
			knownKeys = append(knownKeys, o.stored)
		}
	}
	knownKeys = append(knownKeys, "type", "delay", "jitter", "id", "ttl", "extend", "replace", "keepLastIfActive",
		"reschedule", "age", "count", "limit")
}

// knownKey is string(b), without a copy for one of knownKeys: a job's opts
// are decoded on the fetch path, and their keys are nearly always these.
func knownKey(b []byte) string {
	for _, k := range knownKeys {
		if string(b) == k {
			return k
		}
	}
	return string(b)
}

// str skips the string starting at s.i; plain reports that it has no
// escape and no byte outside ASCII.
func (s *scanner) str() (plain bool, _ error) {
	plain = true
	s.i++ // the opening quote
	for s.i < len(s.data) {
		// Most of a long string is printable ASCII: run through it on
		// locals (a 100 KB payload in a third of the time).
		data, i := s.data, s.i
		for i < len(data) && data[i] >= 0x20 && data[i] < 0x80 && data[i] != '"' && data[i] != '\\' {
			i++
		}
		s.i = i
		if i == len(data) {
			break
		}
		c := data[i]
		switch {
		case c == '"':
			s.i++
			return plain, nil
		case c < 0x20:
			return false, s.errorf("in string literal")
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.data) {
				return false, s.errorf("")
			}
			switch s.data[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					if s.i >= len(s.data) || !isHex(s.data[s.i]) {
						return false, s.errorf("in \\u hexadecimal character escape")
					}
					s.i++
				}
			default:
				return false, s.errorf("in string escape code")
			}
		default:
			if c >= 0x80 {
				plain = false
			}
			s.i++
		}
	}
	return false, s.errorf("")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// value skips the value starting at s.i; depth is the nesting it is in.
func (s *scanner) value(depth int) error {
	if s.i >= len(s.data) {
		return s.errorf("")
	}
	switch c := s.data[s.i]; {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return errors.New("exceeded max depth")
		}
		return s.composite(depth + 1)
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	}
	return s.errorf("looking for beginning of value")
}

func (s *scanner) word(lit string) error {
	for j := 0; j < len(lit); j++ {
		if s.i >= len(s.data) {
			return s.errorf("")
		}
		if s.data[s.i] != lit[j] {
			return s.errorf("in literal " + lit + " (expecting " + quoteChar(lit[j]) + ")")
		}
		s.i++
	}
	return nil
}

// composite skips the object or array starting at s.i.
func (s *scanner) composite(depth int) error {
	object := s.data[s.i] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	s.i++
	s.space()
	if s.next(closer) {
		return nil
	}
	for {
		s.space()
		if object {
			if s.i >= len(s.data) || s.data[s.i] != '"' {
				return s.errorf("looking for beginning of object key string")
			}
			if _, err := s.str(); err != nil {
				return err
			}
			s.space()
			if !s.next(':') {
				return s.errorf("after object key")
			}
			s.space()
		}
		if err := s.value(depth); err != nil {
			return err
		}
		s.space()
		if s.next(',') {
			continue
		}
		if s.next(closer) {
			return nil
		}
		if object {
			return s.errorf("after object key:value pair")
		}
		return s.errorf("after array element")
	}
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	s.next('-')
	switch {
	case s.next('0'):
	case s.i < len(s.data) && '1' <= s.data[s.i] && s.data[s.i] <= '9':
		s.digits()
	default:
		return s.errorf("in numeric literal")
	}
	if s.next('.') {
		if !s.digits() {
			return s.errorf("after decimal point in numeric literal")
		}
	}
	if s.next('e') || s.next('E') {
		if !s.next('+') {
			s.next('-')
		}
		if !s.digits() {
			return s.errorf("in exponent of numeric literal")
		}
	}
	return nil
}

// digits skips a run of digits and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.data) && '0' <= s.data[s.i] && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// jsonString reads a JSON string value into a Go string, as json.Unmarshal
// into a string does (anything else is its error).
func jsonString(v []byte) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		plain := true
		for _, c := range v[1 : len(v)-1] {
			if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
				plain = false
				break
			}
		}
		if plain {
			return string(v[1 : len(v)-1]), nil
		}
	}
	var out string
	err := json.Unmarshal(v, &out)
	return out, err
}

// RawJSON is s as a json.RawMessage (one copy) when it is JSON (validJSON),
// else nil and false: how a JSON text read from Redis (a job's data,
// return value or progress, an event's) becomes one.
func RawJSON(s string) (json.RawMessage, bool) {
	b := []byte(s)
	if !validJSON(b) {
		return nil, false
	}
	return b, true
}

// validJSON reports whether data is one JSON value with only white space
// around it: the texts encoding/json.Valid accepts (FuzzValidJSON checks
// the two against each other), on the scanner members uses. Decode checks
// every fetched job's data with it, so a processor never gets data that is
// not JSON; encoding/json.Valid steps a state machine through a function
// call per byte, which made the check a third of a worker's CPU for 100 KB
// payloads.
func validJSON(data []byte) bool {
	s := scanner{data: data}
	s.space()
	if s.value(0) != nil {
		return false
	}
	s.space()
	return s.i == len(data)
}
