package jobcodec

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are texts at the edges of the grammar; each is checked
// against encoding/json.Valid and seeds FuzzValidJSON.
var validCases = []string{
	``, ` `, `{}`, ` { } `, `[]`, `[1,2]`, `[1,]`, `[,1]`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	`{"a":1 "b":2}`, `"x"`, `"x`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`,
	`"\x"`, "\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"", `"é"`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`,
	`1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`, `true`, `tru`, `truex`, `false`, `null`, `nul`,
	`1 2`, `{} {}`, "\t[\n1\r]\n", `[[[[]]]]`, `[[[[]]]`, `{"a":{"b":[1,{"c":null}]}}`, "\v1", `"a"x`,
	`{"a":}`, `{"":""}`, `[true,false,null]`, `-01`, `2.e3`, `1e05`, "\"\u2028\"",
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	cases := append([]string{}, validCases...)
	// encoding/json refuses nesting deeper than 10,000.
	for _, d := range []int{9999, 10000, 10001} {
		cases = append(cases, strings.Repeat("[", d)+strings.Repeat("]", d))
		cases = append(cases, strings.Repeat(`{"a":`, d)+"1"+strings.Repeat("}", d))
	}
	for _, s := range cases {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.40q) = %t, encoding/json.Valid says %t", s, got, want)
		}
	}
}

// FuzzValidJSON: validJSON and encoding/json.Valid agree on every text
// (go test -fuzz FuzzValidJSON ./internal/jobcodec/ to search beyond the
// seeds).
func FuzzValidJSON(f *testing.F) {
	for _, s := range validCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %t, encoding/json.Valid says %t", s, got, want)
		}
	})
}

// BenchmarkValidJSON100KB: the check Decode makes of a 100 KB job payload.
func BenchmarkValidJSON100KB(b *testing.B) {
	s := []byte(`{"i":1,"p":"` + strings.Repeat("x", 100<<10) + `"}`)
	b.Run("validJSON", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if !validJSON(s) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding/json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if !json.Valid(s) {
				b.Fatal("refused")
			}
		}
	})
}
