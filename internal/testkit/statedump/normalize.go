package statedump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/seed40057009/drover/internal/keys"
)

// Placeholders Normalize writes in place of values that differ between runs.
const (
	PlaceholderTimestamp = "<ts>"
	PlaceholderStreamID  = "<id>"
	PlaceholderToken     = "<token>"
	PlaceholderVersion   = "<version>"
	PlaceholderPrefix    = "<prefix>"
	PlaceholderUUID      = "<uuid>"
	PlaceholderMasked    = "<masked>"
)

// Default timestamp window: every 13-digit number of milliseconds, i.e.
// 2001-09-09 to 2286-11-20. Job ids, counters, relative delays and
// priorities are far below it.
const (
	TimestampMinDefault int64 = 1_000_000_000_000
	TimestampMaxDefault int64 = 9_999_999_999_999
)

// ScoreMode says what Normalize does with the scores of delayed sets
// (score = dueMs*4096 + sequence).
type ScoreMode int

const (
	// ScoreTimestamp replaces every score with "<ts>"; the member order,
	// which is the due order, still shows.
	ScoreTimestamp ScoreMode = iota
	// ScoreOrder replaces every score with "<due#i>", i being the rank of
	// its due millisecond among the set's distinct due times, so jobs due
	// in the same millisecond share a rank. The sequence part is dropped.
	ScoreOrder
	// ScoreKeep leaves the scores alone.
	ScoreKeep
)

// NormalizeOptions selects what Normalize replaces. The zero value (and a
// nil pointer) normalizes everything listed in the package doc with the
// default timestamp window; each Keep field turns one rule off.
type NormalizeOptions struct {
	// TimestampMin and TimestampMax bound the integers (ms since the epoch)
	// treated as timestamps, inclusive.
	//
	// Default to TimestampMinDefault and TimestampMaxDefault.
	TimestampMin, TimestampMax int64

	// KeepTimestamps leaves timestamp-looking values alone: string values,
	// hash values and stream field values that are an integer in the
	// window, numbers in the window inside JSON values, and the scores of
	// sets other than delayed and prioritized (completed, failed,
	// waiting-children, repeat, marker, :unsuccessful) whose integer part
	// is in the window.
	KeepTimestamps bool

	// DelayedScores is the treatment of `<queue>:delayed` scores.
	//
	// Defaults to ScoreTimestamp.
	DelayedScores ScoreMode

	// KeepStreamIDs leaves stream entry ids alone (default: "<id>").
	KeepStreamIDs bool

	// KeepLockTokens leaves the values of `...:lock` keys alone (default:
	// "<token>").
	KeepLockTokens bool

	// KeepMetaVersion leaves the `version` field of `<queue>:meta` alone
	// (default: "<version>", since Node writes bullmq:6.7.0 and drover its
	// own).
	KeepMetaVersion bool

	// KeepJSON leaves JSON values as stored. By default every value that
	// parses as a JSON object or array is re-encoded canonically: object
	// keys sorted, no insignificant space, "\/" written as "/", numbers
	// kept as written (1.2345678901235e+17 stays).
	KeepJSON bool

	// KeepPrefix leaves occurrences of "<snapshot prefix>:" inside values
	// alone (default: "<prefix>:"), e.g. in parentKey, a parent's
	// :dependencies members and its :processed field names.
	KeepPrefix bool

	// KeepUUIDs leaves UUIDs alone (default: "<uuid>" in values and key
	// names; key names that collide get "#2", "#3"... in original order).
	KeepUUIDs bool

	// MaskHashFields lists hash fields whose value is replaced by
	// "<masked>" in every hash, e.g. "stacktrace" (file paths and line
	// numbers differ between implementations) or "pb".
	MaskHashFields []string

	// DropKeys lists path.Match patterns of key names (relative to the
	// prefix, e.g. "*:events" or "q:stalled-check") to leave out.
	DropKeys []string
}

func (o *NormalizeOptions) withDefaults() NormalizeOptions {
	var c NormalizeOptions
	if o != nil {
		c = *o
	}
	if c.TimestampMin == 0 {
		c.TimestampMin = TimestampMinDefault
	}
	if c.TimestampMax == 0 {
		c.TimestampMax = TimestampMaxDefault
	}
	return c
}

var uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// Normalize returns a copy of s with the values that legitimately differ
// between two runs replaced by placeholders, as opts selects. s is not
// modified. It fails only on a bad DropKeys pattern.
func Normalize(s *Snapshot, opts *NormalizeOptions) (*Snapshot, error) {
	o := opts.withDefaults()
	n := &normalizer{o: o, prefix: s.Prefix + ":", mask: map[string]bool{}}
	for _, f := range o.MaskHashFields {
		n.mask[f] = true
	}
	out := &Snapshot{Prefix: s.Prefix, Keys: make(map[string]*Key, len(s.Keys))}
	for _, name := range s.Names() {
		drop := false
		for _, pat := range o.DropKeys {
			ok, err := path.Match(pat, name)
			if err != nil {
				return nil, fmt.Errorf("DropKeys pattern %q: %w", pat, err)
			}
			drop = drop || ok
		}
		if drop {
			continue
		}
		k := s.Keys[name].clone()
		n.key(name, k)
		newName := name
		if !o.KeepUUIDs {
			newName = uuidRE.ReplaceAllString(name, PlaceholderUUID)
		}
		if _, taken := out.Keys[newName]; taken {
			for i := 2; ; i++ {
				cand := newName + "#" + strconv.Itoa(i)
				if _, taken := out.Keys[cand]; !taken {
					newName = cand
					break
				}
			}
		}
		out.Keys[newName] = k
	}
	return out, nil
}

type normalizer struct {
	o      NormalizeOptions
	prefix string
	mask   map[string]bool
}

// role is the last ':' segment of a key name: "wait", "delayed", "lock"...
func role(name string) string {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func (n *normalizer) key(name string, k *Key) {
	r := role(name)
	switch k.Type {
	case TypeString:
		if r == "lock" && !n.o.KeepLockTokens {
			k.String = PlaceholderToken
		} else {
			k.String = n.value(k.String)
		}
	case TypeList:
		for i, v := range k.List {
			k.List[i] = n.text(v)
		}
	case TypeSet:
		for i, v := range k.Set {
			k.Set[i] = n.text(v)
		}
		sort.Strings(k.Set)
	case TypeZSet:
		n.zset(r, k.ZSet)
	case TypeHash:
		// Field names get the prefix and UUID replacements too: a flow
		// parent's :processed and :failed hashes are keyed by child job keys.
		out := make(map[string]string, len(k.Hash))
		for f, v := range k.Hash {
			switch {
			case n.mask[f]:
				v = PlaceholderMasked
			case r == "meta" && f == "version" && !n.o.KeepMetaVersion:
				v = PlaceholderVersion
			default:
				v = n.value(v)
			}
			out[n.text(f)] = v
		}
		k.Hash = out
	case TypeStream:
		for i := range k.Stream {
			e := &k.Stream[i]
			if !n.o.KeepStreamIDs {
				e.ID = PlaceholderStreamID
			}
			for j := 1; j < len(e.Fields); j += 2 {
				e.Fields[j] = n.value(e.Fields[j])
			}
		}
	}
}

func (n *normalizer) zset(r string, zs []ZMember) {
	for i := range zs {
		zs[i].Member = n.text(zs[i].Member)
	}
	switch r {
	case "prioritized":
		return
	case "delayed":
		switch n.o.DelayedScores {
		case ScoreTimestamp:
			for i := range zs {
				zs[i].Score = PlaceholderTimestamp
			}
		case ScoreOrder:
			rank, last := -1, math.NaN()
			for i := range zs {
				f, err := strconv.ParseFloat(zs[i].Score, 64)
				if err != nil {
					continue
				}
				due := float64(keys.DueOfScore(f))
				if due != last {
					rank++
					last = due
				}
				zs[i].Score = fmt.Sprintf("<due#%d>", rank)
			}
		}
		return
	}
	if n.o.KeepTimestamps {
		return
	}
	for i := range zs {
		if f, err := strconv.ParseFloat(zs[i].Score, 64); err == nil && n.inWindow(math.Floor(f)) {
			zs[i].Score = PlaceholderTimestamp
		}
	}
}

func (n *normalizer) inWindow(f float64) bool {
	return f >= float64(n.o.TimestampMin) && f <= float64(n.o.TimestampMax)
}

// value normalizes a stored value: a whole timestamp, a JSON object/array,
// or text.
func (n *normalizer) value(v string) string {
	if !n.o.KeepTimestamps {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil && n.inWindow(float64(i)) {
			return PlaceholderTimestamp
		}
	}
	if !n.o.KeepJSON && len(v) > 0 && (v[0] == '{' || v[0] == '[') {
		if c, ok := n.canonicalJSON(v); ok {
			return c
		}
	}
	return n.text(v)
}

// text applies the prefix and UUID replacements.
func (n *normalizer) text(v string) string {
	if !n.o.KeepPrefix && n.prefix != ":" {
		v = strings.ReplaceAll(v, n.prefix, PlaceholderPrefix+":")
	}
	if !n.o.KeepUUIDs {
		v = uuidRE.ReplaceAllString(v, PlaceholderUUID)
	}
	return v
}

func (n *normalizer) canonicalJSON(v string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil || dec.More() {
		return "", false
	}
	x = n.walkJSON(x)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

func (n *normalizer) walkJSON(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			t[k] = n.walkJSON(v)
		}
	case []any:
		for i, v := range t {
			t[i] = n.walkJSON(v)
		}
	case json.Number:
		if !n.o.KeepTimestamps {
			if i, err := t.Int64(); err == nil && n.inWindow(float64(i)) {
				return PlaceholderTimestamp
			}
		}
	case string:
		return n.text(t)
	}
	return x
}
