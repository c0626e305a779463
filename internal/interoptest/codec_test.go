package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// codecSeed fixes the generated inputs of the codec differential tests; a
// failure prints the input, so a seed is reproducible by rerunning.
const codecSeed = 20261201

// droverOnlyIDRule reports the custom ids drover refuses on purpose although
// BullMQ accepts them: "." and ".." (no URL can carry them, so no dashboard
// could show the job) and ids that would overwrite a queue key.
func droverOnlyIDRule(id string) bool {
	switch id {
	case ".", "..", "wait", "active", "prioritized", "delayed", "completed", "failed", "paused",
		"waiting-children", "events", "meta", "marker", "pc", "id", "stalled", "stalled-check",
		"limiter", "repeat", "metrics", "priority", "delay":
		return true
	}
	for _, p := range []string{"de:", "dn:", "metrics:", "marker:"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// genJobIDs returns ids around BullMQ's rules: integer-looking strings of
// every length (parseInt's rounding starts past 2^53, exponent rendering at
// 1e21), leading zeros and signs, colons, dots and random mixes.
func genJobIDs(r *rand.Rand, n int) []string {
	digits := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	ids := []string{"0", "-0", "00", "007", "1", "-5", "+5", " 5", "5 ", "1e3", "0x10", "1.0", "1234567890123456",
		"100000000000000000000", "1000000000000000000000", "9007199254740993", "12345678901234567",
		"999999999999999999999", "-100000000000000000000", ".", "..", "a:b", "a:b:c", "a:b:c:d", "0:x", "x:0:y"}
	for k := 1; k <= 25; k++ {
		d := digits(k)
		nz := strings.TrimLeft(d, "0")
		if nz == "" {
			nz = "1"
		}
		ids = append(ids, nz, "-"+nz, "0"+nz, nz+"0", "1"+strings.Repeat("0", k))
	}
	const alphabet = "0123456789-+.:eE x/%é"
	for range n {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
		}
		ids = append(ids, b.String())
	}
	seen := map[string]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// TestCodecJobIDsMatchNode adds generated custom ids with Node BullMQ and
// with drover: each side must accept exactly the ids the other accepts,
// except droverOnlyIDRule's, and an accepted id must be the job's id.
func TestCodecJobIDsMatchNode(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	d := b.sibling(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(codecSeed, 1))
	ids := genJobIDs(r, 300)
	var accepted, refused int
	for _, id := range ids {
		nodeID, nodeErr := b.oracle.Add(ctx, b.prefix, queueName, "n", map[string]any{}, map[string]any{"jobId": id})
		var ne *bullmqoracle.NodeError
		if nodeErr != nil && !errors.As(nodeErr, &ne) {
			require.NoError(t, nodeErr)
		}
		if nodeErr != nil && strings.HasPrefix(ne.Message, "Unknown code ") {
			// BullMQ stores the job, then reads the id the script returns as
			// a negative error code (its `result < 0` coerces "-4.5" or
			// "-0123" to a number) and throws. The job is stored: accepted.
			n, err := b.rdb.Exists(ctx, b.prefix+":"+queueName+":"+id).Result()
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "id %q: node threw %v without storing the job", id, nodeErr)
			nodeErr, nodeID = nil, id
		}
		res, droverErr := d.dq.Add(ctx, "d", nil, &drover.JobOptions{JobID: id})
		if droverErr != nil {
			require.ErrorIs(t, droverErr, drover.ErrInvalidJobID, "id %q", id)
			require.Contains(t, droverErr.Error(), strconv.Quote(id), "the error names the id")
		}
		if droverOnlyIDRule(id) {
			require.Error(t, droverErr, "drover refuses %q on purpose", id)
			continue
		}
		require.Equal(t, nodeErr == nil, droverErr == nil,
			"id %q: node err %v, drover err %v", id, nodeErr, droverErr)
		if nodeErr == nil {
			accepted++
			require.Equal(t, id, nodeID)
			require.Equal(t, id, res.Job.ID)
		} else {
			refused++
		}
	}
	t.Logf("%d ids: %d accepted, %d refused by both", len(ids), accepted, refused)
}

// jsonGen writes random JSON texts that exercise every rule of
// JSON.stringify(JSON.parse(text)): whitespace, every escape form (short,
// \u in either case, \/, surrogate pairs, lone surrogates), U+2028/U+2029,
// '<', '>', '&', control characters, non-ASCII, numbers in every notation
// and range, array-index keys out of order and repeated keys.
type jsonGen struct {
	r *rand.Rand
	b strings.Builder
}

func (g *jsonGen) ws() {
	for g.r.IntN(4) == 0 {
		g.b.WriteByte(" \t\n\r"[g.r.IntN(4)])
	}
}

var genNumbers = []string{"0", "-0", "1", "-1", "1.0", "1.50", "1E2", "1e+2", "1e-7", "1.5e-7", "0.000001", "0.0000001",
	"1e21", "1e20", "123456789012345678901", "9007199254740993", "1234567890123456", "0.1", "-0.0", "1e400", "-1e400",
	"1e-400", "5e-324", "2.5e-324", "1.7976931348623157e308", "123456789.123456789", "100", "4294967295", "3.14159"}

func (g *jsonGen) str() {
	g.b.WriteByte('"')
	for range g.r.IntN(12) {
		switch g.r.IntN(16) {
		case 0:
			g.b.WriteString([]string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`}[g.r.IntN(8)])
		case 1:
			u := []int{0x01, 0x1f, 0x7f, 0x3c, 0x26, 0x2028, 0x2029, 0xe9, 0xfffd, 0xfeff, 0xd800, 0xdbff, 0xdc00, 0xdfff}[g.r.IntN(14)]
			f := "\\u%04x"
			if g.r.IntN(2) == 0 {
				f = "\\u%04X"
			}
			fmt.Fprintf(&g.b, f, u)
		case 2:
			g.b.WriteString(`\ud83d\ude00`) // escaped surrogate pair
		case 3:
			g.b.WriteString([]string{"\u2028", "\u2029", "<", ">", "&", "é", "😀", "\u007f", "\ufeff", "</script>"}[g.r.IntN(10)])
		default:
			g.b.WriteByte("abcxyz 019:/-_.'"[g.r.IntN(16)])
		}
	}
	g.b.WriteByte('"')
}

func (g *jsonGen) value(depth int) {
	g.ws()
	k := g.r.IntN(10)
	if depth > 3 {
		k = 4 + g.r.IntN(6)
	}
	switch {
	case k < 2:
		g.b.WriteByte('{')
		n := g.r.IntN(6)
		for i := range n {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.ws()
			if g.r.IntN(3) == 0 {
				key := []string{"0", "1", "2", "10", "9", "01", "-1", "4294967294", "4294967295", "a", "b", "__proto__", "1.5"}[g.r.IntN(13)]
				g.b.WriteString(`"` + key + `"`)
			} else {
				g.str()
			}
			g.ws()
			g.b.WriteByte(':')
			g.value(depth + 1)
		}
		g.ws()
		g.b.WriteByte('}')
	case k < 4:
		g.b.WriteByte('[')
		for i := range g.r.IntN(5) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.value(depth + 1)
		}
		g.ws()
		g.b.WriteByte(']')
	case k < 7:
		g.str()
	case k < 9:
		g.b.WriteString(genNumbers[g.r.IntN(len(genNumbers))])
	default:
		g.b.WriteString([]string{"true", "false", "null"}[g.r.IntN(3)])
	}
	g.ws()
}

func (g *jsonGen) next() string {
	g.b.Reset()
	g.value(0)
	return g.b.String()
}

// TestCodecDataBytesMatchNode adds generated payloads with Node BullMQ and
// with drover, as JSON text (json.RawMessage) and as the Go value it
// decodes to: the stored data must be byte-identical to Node's, and
// SizeLimit must accept the payload at exactly its stored size and refuse
// it one byte below, on both sides.
func TestCodecDataBytesMatchNode(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	d := b.sibling(t)
	ctx := context.Background()
	g := &jsonGen{r: rand.New(rand.NewPCG(codecSeed, 2))}
	hget := func(prefix, id string) string {
		v, err := b.rdb.HGet(ctx, prefix+":"+queueName+":"+id, "data").Result()
		require.NoError(t, err)
		return v
	}
	const n = 300
	var escapes int
	for i := range n {
		text := g.next()
		nodeID, err := b.oracle.Add(ctx, b.prefix, queueName, "n", json.RawMessage(text), nil)
		require.NoError(t, err, "text %s", text)
		want := hget(b.prefix, nodeID)
		if strings.ContainsAny(want, "\u2028\u2029<>&") {
			escapes++
		}

		res, err := d.dq.Add(ctx, "d", json.RawMessage(text), nil)
		require.NoError(t, err, "text %s", text)
		require.Equal(t, want, hget(d.prefix, res.Job.ID), "json.RawMessage %s", text)

		var v any
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&v))
		if v == nil {
			continue // a nil Go value is BullMQ's undefined, stored as {}
		}
		nodeID, err = b.oracle.Add(ctx, b.prefix, queueName, "n", v, nil)
		require.NoError(t, err)
		res, err = d.dq.Add(ctx, "d", v, nil)
		require.NoError(t, err)
		require.Equal(t, hget(b.prefix, nodeID), hget(d.prefix, res.Job.ID), "Go value of %s", text)

		if i%3 == 0 {
			size := len(want)
			for _, limit := range []int{size, size - 1} {
				if limit < 1 {
					continue
				}
				_, nodeErr := b.oracle.Add(ctx, b.prefix, queueName, "n", json.RawMessage(text), map[string]any{"sizeLimit": limit})
				_, droverErr := d.dq.Add(ctx, "d", json.RawMessage(text), &drover.JobOptions{SizeLimit: limit})
				require.Equal(t, nodeErr == nil, droverErr == nil, "sizeLimit %d for %s: node %v, drover %v", limit, want, nodeErr, droverErr)
				require.Equal(t, limit == size, droverErr == nil)
			}
		}
	}
	t.Logf("%d payloads (%d with U+2028/U+2029/<>&) byte-identical to Node's, as text and as Go values", n, escapes)
}

// genOptions writes random BullMQ job options in every shape BullMQ
// accepts for the options drover knows: retention as a boolean, a count
// (0 and negative included) or an object with any of age/count/limit
// (count 0 included); backoff as a number or an object; zero values given
// explicitly; values at the top of each range.
func genOptions(r *rand.Rand) map[string]any {
	pick := func(vs ...any) any { return vs[r.IntN(len(vs))] }
	keep := func() any {
		switch r.IntN(4) {
		case 0:
			return r.IntN(2) == 0
		case 1:
			return pick(0, -1, -5, 1, 10, 1000)
		}
		m := map[string]any{}
		if r.IntN(2) == 0 {
			m["count"] = pick(0, 0, -1, 3, 100)
		}
		if r.IntN(2) == 0 {
			m["age"] = pick(0, 1, 3600, 86400*365)
		}
		if r.IntN(3) == 0 {
			m["limit"] = pick(0, 1, 500)
		}
		return m
	}
	gens := map[string]func() any{
		"delay":            func() any { return pick(0, 1, 1500, 86_400_000) },
		"priority":         func() any { return pick(0, 1, 7, 2097151) },
		"lifo":             func() any { return r.IntN(2) == 0 },
		"attempts":         func() any { return pick(0, 1, 3, 25, 99999999999999) },
		"removeOnComplete": keep,
		"removeOnFail":     keep,
		"stackTraceLimit":  func() any { return pick(0, 1, 5) },
		"keepLogs":         func() any { return pick(0, 1, 100) },
		"sizeLimit":        func() any { return pick(0, 100000, 99999999999999) },
		"timestamp":        func() any { return pick(1, 1700000000000, 1800000000000) },
		"backoff": func() any {
			if r.IntN(3) == 0 {
				return pick(0, 10, 5000)
			}
			m := map[string]any{"type": pick("fixed", "exponential"), "delay": pick(0, 100, 60000)}
			if r.IntN(2) == 0 {
				m["jitter"] = pick(0, 0.25, 0.5, 1)
			}
			return m
		},
		"deduplication": func() any {
			m := map[string]any{"id": fmt.Sprintf("dd%d", r.Uint64())}
			if r.IntN(2) == 0 {
				m["ttl"] = pick(0, 1000, 3_600_000)
			}
			if r.IntN(2) == 0 {
				m["extend"] = r.IntN(2) == 0
			}
			if r.IntN(2) == 0 {
				m["replace"] = r.IntN(2) == 0
			}
			if r.IntN(3) == 0 {
				m["keepLastIfActive"] = r.IntN(2) == 0
			}
			return m
		},
		"jobId": func() any { return fmt.Sprintf("job-%d", r.Uint64()) },
	}
	opts := map[string]any{}
	for name, gen := range gens {
		if r.IntN(3) == 0 {
			opts[name] = gen()
		}
	}
	return opts
}

// retentionPolicy is what BullMQ does with a stored removeOnComplete or
// removeOnFail value (its worker's getKeepJobs, then moveToFinished.lua):
// "remove", "keep" or the count/age/limit bounds that trim kept jobs.
func retentionPolicy(v any) string {
	var count, age, limit any
	switch x := v.(type) {
	case nil:
		return "keep"
	case bool:
		if x {
			return "remove"
		}
		return "keep"
	case json.Number:
		count = x
	case map[string]any:
		count, age, limit = x["count"], x["age"], x["limit"]
	}
	f := func(v any) float64 {
		n, _ := v.(json.Number).Float64()
		return n
	}
	if count != nil && f(count) == 0 {
		return "remove"
	}
	if limit != nil && f(limit) == 0 {
		age = nil // at most 0 jobs trimmed by age: no age bound
	}
	if age != nil && f(age) == 0 {
		return "remove" // every finished job, this one included, is past age 0
	}
	c := "none"
	if count != nil && f(count) > 0 {
		c = fmt.Sprint(f(count))
	}
	a := "none"
	if age != nil {
		a = fmt.Sprint(f(age))
	}
	if c == "none" && a == "none" {
		return "keep"
	}
	l := "1000"
	if limit != nil && a != "none" {
		l = fmt.Sprint(f(limit))
	}
	if a == "none" {
		l = "-"
	}
	return "count=" + c + " age=" + a + " limit=" + l
}

// normalizeStoredOpts reads a stored opts JSON as BullMQ acts on it:
// retention as its policy, numbers as numbers (cjson's 1e+14 and 100000000000000
// alike), and options given as 0 or false dropped (BullMQ reads them as
// absent; drover does not store them).
func normalizeStoredOpts(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), "opts %s", raw)
	var norm func(v any) any
	norm = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			require.NoError(t, err)
			return f
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				e = norm(e)
				if e == 0.0 && k != "attempts" && k != "stackTraceLimit" && k != "delay" || e == false {
					continue
				}
				out[k] = e
			}
			return out
		}
		return v
	}
	out := norm(m).(map[string]any)
	for _, k := range []string{"removeOnComplete", "removeOnFail"} {
		if v, ok := m[k]; ok {
			out[k] = retentionPolicy(v)
		}
	}
	if v, ok := out["delay"]; ok && v == 0.0 {
		delete(out, "delay") // top-level delay 0 is absent; backoff's delay 0 is kept
	}
	return out
}

// TestCodecOptionsMatchNode adds jobs with generated BullMQ options through
// Node's Queue.add and through drover's ParseJobOptions + Queue.Add: both
// must accept them, store opts BullMQ reads the same way (retention by its
// policy, see normalizeStoredOpts) and the same delay, priority and
// timestamp fields.
func TestCodecOptionsMatchNode(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	d := b.sibling(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(codecSeed, 3))
	const n = 300
	shapes := map[string]int{}
	named := []map[string]any{ // issue 10 item 5 and issue 15 item 16, then generated
		{"removeOnComplete": map[string]any{"count": 0}},
		{"removeOnComplete": map[string]any{"age": 3600, "count": 0}},
		{"removeOnFail": -1},
		{"removeOnFail": map[string]any{"age": 60, "limit": 0}},
		{"delay": 9223372036854},
		{"telemetry": map[string]any{"metadata": `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, "omitContext": true}},
		{"telemetry": map[string]any{"metadata": `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00","tracestate":"k=v"}`}},
	}
	for i := range n {
		opts := genOptions(r)
		if i < len(named) {
			opts = named[i]
		}
		text, err := json.Marshal(opts)
		require.NoError(t, err)
		for _, k := range []string{"removeOnComplete", "removeOnFail"} {
			if v, ok := opts[k]; ok {
				shapes[fmt.Sprintf("%s=%s", k, mustJSON(t, v))]++
			}
		}
		nodeID, err := b.oracle.Add(ctx, b.prefix, queueName, "n", map[string]any{}, opts)
		require.NoError(t, err, "node opts %s", text)
		parsed, err := drover.ParseJobOptions(text)
		require.NoError(t, err, "drover opts %s", text)
		res, err := d.dq.Add(ctx, "n", map[string]any{}, parsed)
		require.NoError(t, err, "drover opts %s", text)
		if res.Outcome != drover.AddCreated {
			continue // a repeated deduplication or job id: nothing new stored
		}
		nodeHash, err := b.rdb.HGetAll(ctx, b.prefix+":"+queueName+":"+nodeID).Result()
		require.NoError(t, err)
		droverHash, err := b.rdb.HGetAll(ctx, d.prefix+":"+queueName+":"+res.Job.ID).Result()
		require.NoError(t, err)
		require.Equal(t, normalizeStoredOpts(t, nodeHash["opts"]), normalizeStoredOpts(t, droverHash["opts"]),
			"options %s\nnode   opts %s\ndrover opts %s", text, nodeHash["opts"], droverHash["opts"])
		// Retention is stored in the shape given, as Node stores it (key
		// order aside: Node's own differs from the order given).
		var nodeOpts, droverOpts map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(nodeHash["opts"]), &nodeOpts))
		require.NoError(t, json.Unmarshal([]byte(droverHash["opts"]), &droverOpts))
		for _, k := range []string{"removeOnComplete", "removeOnFail"} {
			if nodeOpts[k] == nil || droverOpts[k] == nil {
				require.Equal(t, nodeOpts[k] == nil, droverOpts[k] == nil, "%s for options %s", k, text)
				continue
			}
			require.JSONEq(t, string(nodeOpts[k]), string(droverOpts[k]), "%s for options %s", k, text)
		}
		for _, f := range []string{"delay", "priority", "deid"} {
			require.Equal(t, nodeHash[f], droverHash[f], "field %s for options %s", f, text)
		}
		if _, ok := opts["timestamp"]; ok {
			require.Equal(t, nodeHash["timestamp"], droverHash["timestamp"], "options %s", text)
		}
	}
	t.Logf("%d option sets agree; retention shapes tried: %d", n, len(shapes))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
