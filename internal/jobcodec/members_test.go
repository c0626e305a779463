package jobcodec

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// memberSeeds are texts members must judge as json.Unmarshal into a map
// does: objects, repeated keys, escapes, every kind of value, and broken
// texts of each kind.
var memberSeeds = []string{
	`{}`, ` { } `, `null`, ` null `, `{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":[1,2,{"c":null}]},"d":"x"}`,
	`{"jobId":"order-1","attempts":3,"backoff":{"type":"exponential","delay":1000,"jitter":0.5}}`,
	`{"de":{"id":"k","ttl":60000,"extend":true},"removeOnComplete":{"age":3600,"count":10}}`,
	`{"k\u00e9y":"v\n","\"":"\\","/":"\/"}`, `{"é":"ü"}`, "{\"a\":\"\xff\"}", "{\"\xff\":1}",
	`{"a":-0.5e+10}`, `{"a":0}`, `{"a":-0}`, `{"a":1E2}`, `{"a":true,"b":false,"c":null}`,
	`{"a":[]}`, `{"a":[ ]}`, `{"a":{}}`, "{\t\"a\"\r\n:\n1 }",
	// Broken: each is refused by both.
	``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{"a":01}`, `{"a":1.}`,
	`{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":nul}`, `{"a":"x}`, "{\"a\":\"\x01\"}",
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{a:1}`, `{'a':1}`, `{"a":1}x`,
	`{"a":1}{}`, `[1]`, `"s"`, `5`, `true`, `nulll`, `{"a":+1}`, `{"a":NaN}`,
}

// FuzzMembers checks members against json.Unmarshal into a
// map[string]json.RawMessage, the decoding it replaces: both refuse the
// same texts, and an accepted text gives the same keys with the same value
// bytes.
func FuzzMembers(f *testing.F) {
	for _, s := range memberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := members(data)
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(data, &want)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: members error %v, json.Unmarshal error %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if len(ms) != len(want) {
			t.Fatalf("%q: %d members, json.Unmarshal %d", data, len(ms), len(want))
		}
		for _, m := range ms {
			w, ok := want[m.key]
			if !ok || !bytes.Equal(m.val, w) {
				t.Fatalf("%q: member %q = %q, json.Unmarshal %q (present %v)", data, m.key, m.val, w, ok)
			}
		}
	})
}

func TestMembersSeeds(t *testing.T) {
	for _, s := range memberSeeds {
		ms, err := members([]byte(s))
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal([]byte(s), &want)
		if (err != nil) != (wantErr != nil) || len(ms) != len(want) {
			t.Errorf("%q: members %v (err %v); json.Unmarshal %v (err %v)", s, ms, err, want, wantErr)
		}
	}
}

// TestMembersDepth: the nesting limit is encoding/json's, 10000 levels.
func TestMembersDepth(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		// depth levels in all: the top object and depth-1 arrays in it.
		text := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		_, err := members([]byte(text))
		var m map[string]json.RawMessage
		wantErr := json.Unmarshal([]byte(text), &m)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("depth %d: members error %v, json.Unmarshal error %v", depth, err, wantErr)
		}
		if depth == 10001 && err == nil {
			t.Errorf("depth %d accepted", depth)
		}
	}
}

// FuzzJSONString checks jsonString against json.Unmarshal into a string.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"a"`, `""`, `"é"`, `"\u00e9"`, "\"\xff\"", `"a\"b"`, `5`, `null`, `"a`, `{}`, ` "a" `, "\"\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // jsonString reads only values members already checked
		}
		got, err := jsonString(data)
		var want string
		wantErr := json.Unmarshal(data, &want)
		if (err != nil) != (wantErr != nil) || got != want {
			t.Fatalf("%q: jsonString %q (err %v), json.Unmarshal %q (err %v)", data, got, err, want, wantErr)
		}
	})
}

// TestDecodeOptsAllocations guards the fetch path's cost for jobs whose
// opts text is new to the process (a custom job id or a deduplication id
// makes every job's new, so the cache never answers): decoding a typical
// opts text allocated 54 times (about 7 µs) with json.Unmarshal into a map
// and reflection. An allocation count does not depend on the machine.
func TestDecodeOptsAllocations(t *testing.T) {
	raw := `{"attempts":3,"backoff":{"type":"exponential","delay":1000},"jobId":"order-123","removeOnComplete":true,"de":{"id":"order-123","ttl":60000}}`
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := DecodeOpts(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 16 {
		t.Fatalf("DecodeOpts allocates %.0f times for a typical opts text, want at most 16", allocs)
	}
}

func BenchmarkDecodeOptsUncached(b *testing.B) {
	raw := `{"attempts":3,"backoff":{"type":"exponential","delay":1000},"jobId":"order-123","removeOnComplete":true,"de":{"id":"order-123","ttl":60000}}`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeOpts(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzStoredBackoff checks the stored backoff fast path against the
// encoding/json path it stands in for, wherever it answers.
func FuzzStoredBackoff(f *testing.F) {
	for _, s := range []string{`{"type":"exponential","delay":1000}`, `{"type":"fixed","delay":0,"jitter":0.5}`, `{}`,
		`{"type":null}`, `{"delay":1.5}`, `{"Type":"x"}`, `{"type":"a","type":"b"}`, `{"jitter":1e400}`, `{"delay":-7}`,
		`{"delay":"5"}`, `{"type":"\u00e9"}`, `{"jitter":-0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := storedBackoff(data)
		if !ok {
			return
		}
		want, err := backoffObject(data, false)
		if err != nil || *got != *want {
			t.Fatalf("%q: fast path %+v, encoding/json %+v (err %v)", data, *got, want, err)
		}
	})
}

// TestOptsCacheSkipsPerJobTexts: an opts text with a custom id or a
// deduplication id is decoded but not cached (no other job shares it); a
// shared text is cached.
func TestOptsCacheSkipsPerJobTexts(t *testing.T) {
	cached := func(raw string) bool {
		optsCache.RLock()
		defer optsCache.RUnlock()
		_, ok := optsCache.m[raw]
		return ok
	}
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"attempts":2,"jobId":"cache-test-1"}`, false},
		{`{"attempts":2,"de":{"id":"cache-test-2"}}`, false},
		{`{"attempts":2,"delay":1234567}`, true},
	} {
		o, err := decodeOptsCached(tc.raw)
		if err != nil || o.Attempts != 2 {
			t.Fatalf("%s: %+v, %v", tc.raw, o, err)
		}
		if got := cached(tc.raw); got != tc.want {
			t.Errorf("%s: cached %v, want %v", tc.raw, got, tc.want)
		}
	}
}
