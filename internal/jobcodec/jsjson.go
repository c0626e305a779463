package jobcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// EncodeData is the one encoder of the JSON values drover stores for Node
// to read (job data, return values): the bytes Node's JSON.stringify writes
// for the same value. A nil v is stored as {} (Node stores an undefined
// payload so); a json.RawMessage is taken as the JSON text of the value;
// anything else is encoded with encoding/json first. Either way the text is
// then rewritten as JSON.stringify(JSON.parse(text)) would write it (see
// Stringify), so the stored bytes, and the size SizeLimit checks, do not
// depend on which side wrote the job.
func EncodeData(v any) ([]byte, error) {
	var text []byte
	switch d := v.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		out, err := Stringify(d)
		if err != nil {
			return nil, fmt.Errorf("json.RawMessage data is not valid JSON: %w", err)
		}
		return out, nil
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		text = buf.Bytes()
	}
	return Stringify(text)
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// Stringify returns JSON.stringify(JSON.parse(text)) as Node (V8) computes
// it, or an error where JSON.parse would throw:
//   - no whitespace;
//   - strings: '"', '\\' and the control characters escaped (\b \t \n \f \r
//     short, the rest \u00xx), lone surrogates as \udxxx, everything else,
//     U+2028, U+2029, '<', '>', '&' and '/' included, as UTF-8; invalid
//     UTF-8 reads as U+FFFD;
//   - numbers as Number.prototype.toString writes the double they parse to
//     (1.0 → 1, 1E2 → 100, 1e21 → 1e+21, -0 → 0; out of range → null);
//   - objects: keys that are array indices ("0" … "4294967294") first in
//     ascending order, then the others in the order they first appear; a
//     repeated key keeps its first place and its last value.
func Stringify(text []byte) ([]byte, error) {
	p := stringifier{in: text, out: make([]byte, 0, len(text))}
	p.skipSpace()
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, p.errorf("unexpected %q after the value", p.in[p.pos])
	}
	return p.out, nil
}

type stringifier struct {
	in  []byte
	pos int
	out []byte
	key []byte // scratch for decoded object keys
}

func (p *stringifier) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *stringifier) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *stringifier) value(depth int) error {
	if depth > maxDepth {
		return p.errorf("nested too deeply")
	}
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		p.pos++
		return p.str(false)
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				p.out = append(p.out, lit...)
				return nil
			}
		}
		return p.errorf("unexpected %q", c)
	}
}

func (p *stringifier) array(depth int) error {
	p.pos++
	p.out = append(p.out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return nil
	}
	for {
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errorf("unexpected end of input in an array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case ']':
			p.pos++
			p.out = append(p.out, ']')
			return nil
		default:
			return p.errorf("unexpected %q in an array", p.in[p.pos])
		}
	}
}

// member is one encoded "key":value of an object, as offsets into out.
type member struct {
	key        string // decoded
	start, end int    // "key":value in out
	index      uint32 // array index, when isIndex
	isIndex    bool
}

func (p *stringifier) object(depth int) error {
	p.pos++
	start := len(p.out)
	p.out = append(p.out, '{')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		return nil
	}
	var members []member
	var keys map[string]struct{} // past 16 members, to find repeats
	reorder := false
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.errorf("object key expected")
		}
		p.pos++
		if len(members) > 0 {
			p.out = append(p.out, ',')
		}
		m := member{start: len(p.out)}
		if err := p.str(true); err != nil {
			return err
		}
		m.key = string(p.key)
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.errorf("':' expected after an object key")
		}
		p.pos++
		p.out = append(p.out, ':')
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		m.end = len(p.out)
		m.index, m.isIndex = arrayIndex(m.key)
		if m.isIndex && (len(members) == 0 || !members[len(members)-1].isIndex || members[len(members)-1].index > m.index) {
			reorder = reorder || len(members) > 0
		}
		if !reorder {
			switch {
			case keys != nil:
				_, reorder = keys[m.key]
				keys[m.key] = struct{}{}
			case slices.ContainsFunc(members, func(o member) bool { return o.key == m.key }):
				reorder = true
			case len(members) == 16:
				keys = make(map[string]struct{}, 32)
				for _, o := range members {
					keys[o.key] = struct{}{}
				}
				keys[m.key] = struct{}{}
			}
		}
		members = append(members, m)
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errorf("unexpected end of input in an object")
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		if p.in[p.pos] != ',' {
			return p.errorf("unexpected %q in an object", p.in[p.pos])
		}
		p.pos++
	}
	if reorder {
		p.reorder(start, members)
	}
	p.out = append(p.out, '}')
	return nil
}

// reorder rewrites the members written after out[start] ('{') in
// JavaScript's property order, keeping each repeated key's last value.
func (p *stringifier) reorder(start int, members []member) {
	last := make(map[string]int, len(members))
	for i, m := range members {
		last[m.key] = i
	}
	order := make([]int, 0, len(members))
	seen := make(map[string]bool, len(members))
	for i, m := range members {
		if !seen[m.key] {
			seen[m.key] = true
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ma, mb := members[a], members[b]
		switch {
		case ma.isIndex && mb.isIndex:
			return int(int64(ma.index) - int64(mb.index))
		case ma.isIndex:
			return -1
		case mb.isIndex:
			return 1
		}
		return 0
	})
	region := slices.Clone(p.out[start+1:])
	p.out = p.out[:start+1]
	for i, first := range order {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		m := members[last[members[first].key]]
		p.out = append(p.out, region[m.start-start-1:m.end-start-1]...)
	}
}

// arrayIndex reports whether key is an array index: the canonical decimal
// form of an integer in [0, 2^32-2].
func arrayIndex(key string) (uint32, bool) {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return 0, false
	}
	// Digits only, checked here: most keys are words, and ParseUint's
	// refusal of one allocates an error (an add's data has several keys).
	var n uint64
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxUint32-1 {
		return 0, false
	}
	return uint32(n), true
}

// str reads a string whose opening quote was consumed and writes it to out
// in JSON.stringify's form. With asKey it also leaves the decoded text in
// p.key.
func (p *stringifier) str(asKey bool) error {
	p.out = append(p.out, '"')
	p.key = p.key[:0]
	for {
		if p.pos >= len(p.in) {
			return p.errorf("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.out = append(p.out, '"')
			return nil
		case c < 0x20:
			return p.errorf("control character %#x in a string", c)
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return err
			}
			p.rune(r, asKey)
		case c < utf8.RuneSelf:
			// A run of ASCII that needs no escape is copied as it is.
			end := p.pos + 1
			for end < len(p.in) && p.in[end] >= 0x20 && p.in[end] < utf8.RuneSelf && p.in[end] != '"' && p.in[end] != '\\' {
				end++
			}
			p.out = append(p.out, p.in[p.pos:end]...)
			if asKey {
				p.key = append(p.key, p.in[p.pos:end]...)
			}
			p.pos = end
		default:
			r, size := utf8.DecodeRune(p.in[p.pos:])
			p.pos += size
			p.rune(r, asKey) // utf8.RuneError for invalid UTF-8: U+FFFD
		}
	}
}

// loneSurrogate marks a \uXXXX escape of an unpaired surrogate, which
// JSON.stringify writes back escaped: the code unit is r - loneSurrogate.
const loneSurrogate = 0x7000_0000

// escape reads one backslash escape (a surrogate pair as one rune).
func (p *stringifier) escape() (rune, error) {
	if p.pos+1 >= len(p.in) {
		return 0, p.errorf("unterminated escape")
	}
	c := p.in[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		return 0, p.errorf("bad escape \\%c", c)
	}
	u, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if !utf16.IsSurrogate(rune(u)) {
		return rune(u), nil
	}
	if u < 0xdc00 && p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
		save := p.pos
		p.pos += 2
		lo, err := p.hex4()
		if err == nil && lo >= 0xdc00 && lo <= 0xdfff {
			return utf16.DecodeRune(rune(u), rune(lo)), nil
		}
		p.pos = save
	}
	return loneSurrogate + rune(u), nil
}

func (p *stringifier) hex4() (uint16, error) {
	if p.pos+4 > len(p.in) {
		return 0, p.errorf("short \\u escape")
	}
	n, err := strconv.ParseUint(string(p.in[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, p.errorf("bad \\u escape %q", p.in[p.pos:p.pos+4])
	}
	p.pos += 4
	return uint16(n), nil
}

const hexDigits = "0123456789abcdef"

// rune writes r as JSON.stringify does.
func (p *stringifier) rune(r rune, asKey bool) {
	if r >= loneSurrogate {
		u := r - loneSurrogate
		p.out = append(p.out, '\\', 'u', hexDigits[u>>12&0xf], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
		if asKey {
			// Keys only need to compare: 0xff (never in UTF-8) and the unit.
			p.key = append(p.key, 0xff, byte(u>>8), byte(u))
		}
		return
	}
	if asKey {
		p.key = utf8.AppendRune(p.key, r)
	}
	switch r {
	case '"':
		p.out = append(p.out, '\\', '"')
	case '\\':
		p.out = append(p.out, '\\', '\\')
	case '\b':
		p.out = append(p.out, '\\', 'b')
	case '\f':
		p.out = append(p.out, '\\', 'f')
	case '\n':
		p.out = append(p.out, '\\', 'n')
	case '\r':
		p.out = append(p.out, '\\', 'r')
	case '\t':
		p.out = append(p.out, '\\', 't')
	default:
		if r < 0x20 {
			p.out = append(p.out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
			return
		}
		p.out = utf8.AppendRune(p.out, r)
	}
}

// number reads a JSON number and writes it as JavaScript prints the double
// it parses to.
func (p *stringifier) number() error {
	start := p.pos
	if p.in[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	switch n := digits(); {
	case n == 0:
		return p.errorf("digit expected")
	case n > 1 && p.in[intStart] == '0':
		return p.errorf("leading zero in a number")
	}
	plain := true
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		plain = false
		if digits() == 0 {
			return p.errorf("digit expected after '.'")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		plain = false
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.errorf("digit expected in an exponent")
		}
	}
	tok := p.in[start:p.pos]
	// Integers of up to 15 digits print as written (but -0 prints as 0).
	if plain && p.pos-intStart <= 15 && !bytes.Equal(tok, []byte("-0")) {
		p.out = append(p.out, tok...)
		return nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return p.errorf("bad number %q", tok)
	}
	p.out = AppendJSNumber(p.out, f)
	return nil
}

// AppendJSNumber appends f as JSON.stringify writes a number: shortest
// round-trip digits, plain notation for 1e-6 <= |f| < 1e21, else
// d.ddde±x; 0 for -0 and null for NaN and ±Infinity.
func AppendJSNumber(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(b, "null"...)
	case f == 0:
		return append(b, '0')
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	n := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	// Go writes at least two exponent digits (1e-07); JavaScript does not.
	e := bytes.LastIndexByte(b[n:], 'e') + n
	if e+3 < len(b) && b[e+2] == '0' {
		b = append(b[:e+2], b[e+3:]...)
	}
	return b
}

// IsNull reports whether data is the JSON text null (Node's
// queue.add(name, null)): no value of any typed job's args, which
// drover.Work and drovertest.RequireAddedArgs refuse alike.
func IsNull(data []byte) bool { return string(bytes.TrimSpace(data)) == "null" }
