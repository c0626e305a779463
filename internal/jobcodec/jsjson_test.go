package jobcodec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStringify(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name, in, want, wantErr string
	}{
		{"Whitespace", " { \"a\" : [ 1 , 2 ] } ", `{"a":[1,2]}`, ""},
		{"HTMLAndLineSeparatorsRaw", `"\u003c\u003E\u0026\u2028\u2029"`, "\"<>&\u2028\u2029\"", ""},
		{"ShortEscapes", `"\b\f\n\r\t\/\"\\"`, `"\b\f\n\r\t/\"\\"`, ""},
		{"ControlLowerHex", `"\u001F\u0001"`, `"\u001f\u0001"`, ""},
		{"SurrogatePair", `"\uD83D\uDE00"`, "\"😀\"", ""},
		{"LoneSurrogates", `"\uDC00x\ud800"`, `"\udc00x\ud800"`, ""},
		{"InvalidUTF8", "\"a\xffb\"", "\"a\ufffdb\"", ""},
		{"Numbers", `[1.0,1E2,-0,1e21,1e-7,0.000001,1e400,123456789012345678901,5e-324,0.1]`,
			`[1,100,0,1e+21,1e-7,0.000001,null,123456789012345680000,5e-324,0.1]`, ""},
		{"IndexKeysFirst", `{"b":1,"10":2,"a":3,"9":4,"01":5,"4294967295":6,"4294967294":7}`,
			`{"9":4,"10":2,"4294967294":7,"b":1,"a":3,"01":5,"4294967295":6}`, ""},
		{"SignsAndLettersAreNotIndexes", `{"1a":1,"+1":2,"-1":3,"2":4,"0":5,"9999999999":6}`,
			`{"0":5,"2":4,"1a":1,"+1":2,"-1":3,"9999999999":6}`, ""},
		{"RepeatedKeyFirstPlaceLastValue", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`, ""},
		{"NestedReorder", `{"x":{"1":1,"0":0},"y":[{"b":1,"b":2}]}`, `{"x":{"0":0,"1":1},"y":[{"b":2}]}`, ""},
		{"Trailing", `{} x`, "", "after the value"},
		{"LeadingZero", `01`, "", "leading zero"},
		{"RawControl", "\"\x01\"", "", "control character"},
		{"Unterminated", `{"a":`, "", "unexpected end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := Stringify([]byte(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestEncodeData(t *testing.T) {
	t.Parallel()

	got, err := EncodeData(map[string]any{"h": "<&>\u2028", "10": 1, "9": 2.5})
	require.NoError(t, err)
	require.Equal(t, "{\"9\":2.5,\"10\":1,\"h\":\"<&>\u2028\"}", string(got))
	got, err = EncodeData(nil)
	require.NoError(t, err)
	require.Equal(t, "{}", string(got))
	_, err = EncodeData(json.RawMessage(`{`))
	require.ErrorContains(t, err, "json.RawMessage data is not valid JSON")
}

func FuzzStringify(f *testing.F) {
	for _, s := range []string{`{"a":[1,"\u2028"]}`, `{"1":0,"0":1,"0":2}`, `"\ud800"`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Stringify([]byte(in))
		if err != nil {
			return
		}
		require.True(t, json.Valid(out), "%q gave %q", in, out)
		again, err := Stringify(out)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again), "stringify is idempotent")
	})
}
