package statedump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Redis types a Key can have, as reported by TYPE.
const (
	TypeString = "string"
	TypeList   = "list"
	TypeSet    = "set"
	TypeZSet   = "zset"
	TypeHash   = "hash"
	TypeStream = "stream"
)

// Snapshot is every key under one prefix at one moment.
type Snapshot struct {
	// Prefix is the key prefix the snapshot was taken under (without the
	// trailing ':').
	Prefix string `json:"prefix"`
	// Keys maps a key name relative to the prefix ("q:wait" for
	// "<prefix>:q:wait") to its contents.
	Keys map[string]*Key `json:"keys"`
}

// Key is one key's type, expiry and contents. Only the field of its Type is
// set.
type Key struct {
	Type string `json:"type"`
	// TTL is true when the key has an expiry (the remaining time is not
	// kept: it differs between any two runs).
	TTL bool `json:"ttl,omitempty"`

	String string            `json:"string,omitempty"`
	List   []string          `json:"list,omitempty"`   // in list order, head first
	Set    []string          `json:"set,omitempty"`    // sorted
	ZSet   []ZMember         `json:"zset,omitempty"`   // in score order, as ZRANGE
	Hash   map[string]string `json:"hash,omitempty"`   // field -> value
	Stream []StreamEntry     `json:"stream,omitempty"` // in id order
}

// ZMember is one sorted-set member with its score, written as Redis would
// print it ("7356513323859968", "0.5") or, after Normalize, a placeholder.
type ZMember struct {
	Member string `json:"member"`
	Score  string `json:"score"`
}

// StreamEntry is one stream entry: its id and its field/value list in
// order.
type StreamEntry struct {
	ID     string   `json:"id"`
	Fields []string `json:"fields"`
}

// Names returns the snapshot's key names, sorted.
func (s *Snapshot) Names() []string {
	names := make([]string, 0, len(s.Keys))
	for n := range s.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Dump reads every key whose name starts with prefix + ":". It is not
// atomic: take it when the queues under the prefix are quiescent (no worker
// running, or workers stopped). A key that disappears during the dump is
// left out, and so are drover's add-call reply keys (see isAddCallKey).
func Dump(ctx context.Context, rdb redis.UniversalClient, prefix string) (*Snapshot, error) {
	snap := &Snapshot{Prefix: prefix, Keys: map[string]*Key{}}
	full := prefix + ":"
	var names []string
	iter := rdb.Scan(ctx, 0, globEscape(full)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		if rel := strings.TrimPrefix(iter.Val(), full); isAddCallKey(rel) || strings.HasPrefix(rel, ":") {
			// "<prefix>::...": drover's keys of no queue (the queue
			// registry, the published discovery list), no BullMQ
			// counterpart.
			continue
		}
		names = append(names, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan keys under %q: %w", full, err)
	}
	sort.Strings(names)
	names = slices.Compact(names) // SCAN may return a key twice
	for _, name := range names {
		k, err := dumpKey(ctx, rdb, name)
		if err != nil {
			return nil, fmt.Errorf("dump %q: %w", name, err)
		}
		if k != nil {
			snap.Keys[strings.TrimPrefix(name, full)] = k
		}
	}
	return snap, nil
}

// isAddCallKey reports whether rel (a key name relative to the prefix) is
// one of drover's add-call reply keys, "<queue>:add:<token>": short-lived
// bookkeeping that makes an add exactly-once under client retries, with no
// BullMQ counterpart, so Dump leaves it out. No queue name and no token
// contains ':'.
func isAddCallKey(rel string) bool {
	q, rest, ok := strings.Cut(rel, ":")
	if !ok || q == "" {
		return false
	}
	token, ok := strings.CutPrefix(rest, "add:")
	return ok && token != "" && !strings.Contains(token, ":")
}

func dumpKey(ctx context.Context, rdb redis.UniversalClient, name string) (*Key, error) {
	typ, err := rdb.Type(ctx, name).Result()
	if err != nil {
		return nil, err
	}
	k := &Key{Type: typ}
	switch typ {
	case "none":
		return nil, nil
	case TypeString:
		k.String, err = rdb.Get(ctx, name).Result()
	case TypeList:
		k.List, err = rdb.LRange(ctx, name, 0, -1).Result()
	case TypeSet:
		k.Set, err = rdb.SMembers(ctx, name).Result()
		sort.Strings(k.Set)
	case TypeZSet:
		var zs []redis.Z
		zs, err = rdb.ZRangeWithScores(ctx, name, 0, -1).Result()
		for _, z := range zs {
			k.ZSet = append(k.ZSet, ZMember{Member: fmt.Sprint(z.Member), Score: FormatScore(z.Score)})
		}
	case TypeHash:
		k.Hash, err = rdb.HGetAll(ctx, name).Result()
	case TypeStream:
		k.Stream, err = dumpStream(ctx, rdb, name)
	default:
		return nil, fmt.Errorf("unsupported key type %q", typ)
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ttl, err := rdb.PTTL(ctx, name).Result()
	if err != nil {
		return nil, err
	}
	k.TTL = ttl > 0
	return k, nil
}

// dumpStream reads a stream with a raw XRANGE so the field order of each
// entry is kept (go-redis' XMessage uses a map).
func dumpStream(ctx context.Context, rdb redis.UniversalClient, name string) ([]StreamEntry, error) {
	raw, err := rdb.Do(ctx, "XRANGE", name, "-", "+").Slice()
	if err != nil {
		return nil, err
	}
	entries := make([]StreamEntry, 0, len(raw))
	for _, r := range raw {
		pair, ok := r.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("unexpected XRANGE entry %v", r)
		}
		id, _ := pair[0].(string)
		fv, _ := pair[1].([]any)
		e := StreamEntry{ID: id, Fields: make([]string, 0, len(fv))}
		for _, f := range fv {
			e.Fields = append(e.Fields, fmt.Sprint(f))
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// FormatScore writes a sorted-set score the way Dump does: the shortest
// decimal that round-trips, never in exponent form.
func FormatScore(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '^':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Format writes the snapshot as indented text, one key per block in name
// order, for test logs and golden files.
func (s *Snapshot) Format(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# prefix %s, %d keys\n", s.Prefix, len(s.Keys))
	for _, name := range s.Names() {
		k := s.Keys[name]
		ttl := ""
		if k.TTL {
			ttl = " (ttl)"
		}
		switch k.Type {
		case TypeString:
			fmt.Fprintf(&b, "%s string%s = %q\n", name, ttl, k.String)
		case TypeList:
			fmt.Fprintf(&b, "%s list%s [%d]\n", name, ttl, len(k.List))
			for _, v := range k.List {
				fmt.Fprintf(&b, "    %q\n", v)
			}
		case TypeSet:
			fmt.Fprintf(&b, "%s set%s [%d]\n", name, ttl, len(k.Set))
			for _, v := range k.Set {
				fmt.Fprintf(&b, "    %q\n", v)
			}
		case TypeZSet:
			fmt.Fprintf(&b, "%s zset%s [%d]\n", name, ttl, len(k.ZSet))
			for _, z := range k.ZSet {
				fmt.Fprintf(&b, "    %s %q\n", z.Score, z.Member)
			}
		case TypeHash:
			fmt.Fprintf(&b, "%s hash%s [%d]\n", name, ttl, len(k.Hash))
			fields := make([]string, 0, len(k.Hash))
			for f := range k.Hash {
				fields = append(fields, f)
			}
			sort.Strings(fields)
			for _, f := range fields {
				fmt.Fprintf(&b, "    %s = %q\n", f, k.Hash[f])
			}
		case TypeStream:
			fmt.Fprintf(&b, "%s stream%s [%d]\n", name, ttl, len(k.Stream))
			for _, e := range k.Stream {
				fmt.Fprintf(&b, "    %s %s\n", e.ID, formatFields(e.Fields))
			}
		default:
			fmt.Fprintf(&b, "%s %s%s\n", name, k.Type, ttl)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String returns Format's output.
func (s *Snapshot) String() string {
	var b strings.Builder
	_ = s.Format(&b)
	return b.String()
}

func formatFields(fv []string) string {
	parts := make([]string, 0, len(fv)/2+1)
	for i := 0; i < len(fv); i += 2 {
		if i+1 < len(fv) {
			parts = append(parts, fv[i]+"="+strconv.Quote(fv[i+1]))
		} else {
			parts = append(parts, strconv.Quote(fv[i]))
		}
	}
	return strings.Join(parts, " ")
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() *Snapshot {
	c := &Snapshot{Prefix: s.Prefix, Keys: make(map[string]*Key, len(s.Keys))}
	for n, k := range s.Keys {
		c.Keys[n] = k.clone()
	}
	return c
}

func (k *Key) clone() *Key {
	c := *k
	c.List = slices.Clone(k.List)
	c.Set = slices.Clone(k.Set)
	c.ZSet = slices.Clone(k.ZSet)
	if k.Hash != nil {
		c.Hash = make(map[string]string, len(k.Hash))
		for f, v := range k.Hash {
			c.Hash[f] = v
		}
	}
	if k.Stream != nil {
		c.Stream = make([]StreamEntry, len(k.Stream))
		for i, e := range k.Stream {
			c.Stream[i] = StreamEntry{ID: e.ID, Fields: slices.Clone(e.Fields)}
		}
	}
	return &c
}

// Raw is every key matching pattern (a SCAN pattern, e.g. prefix + ":*")
// with its DUMP bytes: unlike [Dump] it leaves nothing out and normalises
// nothing, so any write under the pattern changes it. Tests that promise
// "Redis untouched" compare two of them.
func Raw(ctx context.Context, rdb redis.UniversalClient, pattern string) (map[string]string, error) {
	out := map[string]string{}
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		d, err := rdb.Dump(ctx, iter.Val()).Result()
		if errors.Is(err, redis.Nil) {
			continue // gone since the scan
		}
		if err != nil {
			return nil, fmt.Errorf("dump %q: %w", iter.Val(), err)
		}
		out[iter.Val()] = d
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan %q: %w", pattern, err)
	}
	return out, nil
}
