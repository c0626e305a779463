package jobcodec

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// nodeHash is a job hash as Node BullMQ 6.7.0 writes it after a failed attempt.
var nodeHash = []any{
	"name", "charge", "data", `{"order":"A-17","cents":1250}`,
	"opts", `{"kl":5,"stackTraceLimit":3,"removeOnFail":{"age":3600,"count":10},"lifo":true,"removeOnComplete":true,"backoff":{"type":"exponential","delay":1000,"jitter":0.5},"attempts":3,"jobId":"x\/y"}`,
	"timestamp", "1796023760708", "delay", "0", "priority", "0",
	"processedOn", "1796023760710", "ats", "2", "atm", "1", "stc", "1",
	"failedReason", "card declined", "stacktrace", `["Error: card declined\n    at x"]`,
	"finishedOn", "1.7960237607110000e+12", "pb", "node-1",
}

func TestDecodeNodeHash(t *testing.T) {
	t.Parallel()
	rec, ok, err := Decode("x/y", nodeHash)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "charge", rec.Name)
	require.JSONEq(t, `{"order":"A-17","cents":1250}`, string(rec.Data))
	require.Equal(t, int64(3), rec.Opts.Attempts)
	require.Equal(t, "x/y", rec.Opts.JobID)
	require.Equal(t, &Backoff{Type: "exponential", Delay: 1000, Jitter: 0.5}, rec.Opts.Backoff)
	require.Equal(t, "0", rec.Opts.RemoveOnComplete.Spec())
	require.Equal(t, "10,3600000,0", rec.Opts.RemoveOnFail.Spec())
	require.Equal(t, int64(1796023760711), rec.FinishedOn, "Lua's float rendering is read as ms")
	require.Equal(t, int64(1), rec.AttemptsMade)
	require.Equal(t, int64(2), rec.AttemptsStarted)
	require.Equal(t, int64(1), rec.StalledCounter)
	require.Equal(t, []string{"Error: card declined\n    at x"}, rec.Stacktrace)
	require.Equal(t, "node-1", rec.ProcessedBy)
}

func TestDecodeTolerance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		hash    []any
		wantErr string
		check   func(t *testing.T, r Record)
	}{
		{"MissingAttemptsIsZero", []any{"name", "n", "data", "{}", "opts", `{"repeatJobKey":"sch"}`}, "", func(t *testing.T, r Record) {
			require.Zero(t, r.Opts.Attempts)
			require.False(t, r.Opts.HasAttempts)
			require.Contains(t, r.Opts.Extra, "repeatJobKey")
		}},
		{"EmptyArrayAsObject", []any{"name", "n", "stacktrace", `{}`}, "", func(t *testing.T, r Record) {
			require.Empty(t, r.Stacktrace)
		}},
		{"ExponentNumbersInOpts", []any{"name", "n", "opts", `{"timestamp":1.2345678901235e+17,"attempts":2.0}`}, "", func(t *testing.T, r Record) {
			require.Equal(t, int64(123456789012350000), r.Opts.Timestamp)
			require.Equal(t, int64(2), r.Opts.Attempts)
		}},
		{"NumericBackoff", []any{"name", "n", "opts", `{"backoff":200}`}, "", func(t *testing.T, r Record) {
			require.Equal(t, &Backoff{Type: "fixed", Delay: 200}, r.Opts.Backoff)
		}},
		{"NumericStringsInOpts", []any{"name", "n", "opts", `{"attempts":" 3 ","backoff":{"type":"fixed","delay":"1e3"},"kl":"2","removeOnComplete":"yes","removeOnFail":""}`}, "", func(t *testing.T, r Record) {
			require.Equal(t, int64(3), r.Opts.Attempts)
			require.Equal(t, int64(1000), r.Opts.Backoff.Delay)
			require.Equal(t, int64(2), r.Opts.KeepLogs)
			require.Equal(t, "0", r.Opts.RemoveOnComplete.Spec(), "a non-empty string is truthy: keep none")
			require.Empty(t, r.Opts.RemoveOnFail.Spec(), "an empty string is falsy: keep all")
		}},
		{"FractionalAttemptsRoundUp", []any{"name", "n", "opts", `{"attempts":2.5,"kl":2.5}`}, "", func(t *testing.T, r Record) {
			require.Equal(t, int64(3), r.Opts.Attempts, "BullMQ runs a job with attempts 2.5 three times")
			require.Equal(t, int64(2), r.Opts.KeepLogs)
		}},
		{"NonNumericStringRefused", []any{"name", "n", "opts", `{"attempts":"three"}`}, `opts.attempts: not a number: "three"`, nil},
		{"NullStringRefused", []any{"name", "n", "opts", `{"attempts":"null"}`}, `opts.attempts: not a number: "null"`, nil},
		{"BadReturnValueTolerated", []any{"name", "n", "returnvalue", `{oops`}, "", func(t *testing.T, r Record) {
			require.Nil(t, r.ReturnValue)
		}},
		{"MissingDataIsEmptyObject", []any{"name", "n"}, "", func(t *testing.T, r Record) {
			require.Equal(t, json.RawMessage("{}"), r.Data)
		}},
		{"BadDataRefused", []any{"name", "n", "data", `{oops`}, "field data: not JSON", nil},
		{"BadOptsRefused", []any{"name", "n", "opts", `[1]`}, "opts is not a JSON object", nil},
		// A numeric field that is no number reads as absent, where BullMQ's
		// worker reads NaN and runs the job (TestDifferentialOddNumericHashFields).
		{"OddNumbersReadAsZero", []any{"name", "n", "atm", "many", "ats", "NaN", "stc", "Infinity", "timestamp", "1e400",
			"delay", "-1e19", "priority", "12abc", "processedOn", "", "finishedOn", " 7 "}, "", func(t *testing.T, r Record) {
			require.Equal(t, Record{ID: "j", Name: "n", Data: json.RawMessage("{}"), FinishedOn: 7}, r)
		}},
		{"OddAtmFallsBackToAttemptsMade", []any{"name", "n", "atm", "many", "attemptsMade", "3"}, "", func(t *testing.T, r Record) {
			require.Equal(t, int64(3), r.AttemptsMade)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, ok, err := Decode("j", tt.hash)
			require.True(t, ok)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, err, "job j")
				return
			}
			require.NoError(t, err)
			tt.check(t, rec)
		})
	}
	_, ok, err := Decode("gone", nil)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestOptsRoundTrip(t *testing.T) {
	t.Parallel()
	ten, zero := int64(10), int64(0)
	tests := []struct {
		name string
		opts Opts
		want string
	}{
		{"Plain", Opts{}, `{"attempts":0}`},
		{"Full", Opts{JobID: "a/\"b", Delay: 5, Priority: 2, LIFO: true, Timestamp: 7, Attempts: 3,
			Backoff:          &Backoff{Type: "fixed", Delay: 100, Jitter: 0.25},
			RemoveOnComplete: &Keep{Set: true, Count: &ten},
			RemoveOnFail:     &Keep{Set: true, Object: true, AgeMs: 60000, Count: &ten, Limit: 5},
			StackTraceLimit:  &zero, KeepLogs: 4, SizeLimit: 1000,
			Dedup: &Dedup{ID: "d1", TTL: 500, Extend: true}},
			`{"jobId":"a/\"b","delay":5,"priority":2,"lifo":true,"timestamp":7,"backoff":{"type":"fixed","delay":100,"jitter":0.25},"removeOnComplete":10,"removeOnFail":{"age":60,"count":10,"limit":5},"stackTraceLimit":0,"kl":4,"sizeLimit":1000,"de":{"id":"d1","ttl":500,"extend":true},"attempts":3}`},
		// BullMQ's telemetry option: one public object, two stored keys.
		{"Telemetry", Opts{Telemetry: `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, OmitContext: true},
			`{"tm":"{\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}","omc":true,"attempts":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := string(tt.opts.AppendJSON(nil))
			require.Equal(t, tt.want, got)
			require.True(t, json.Valid([]byte(got)))
			back, err := DecodeOpts(got)
			require.NoError(t, err)
			require.Equal(t, got, string(back.AppendJSON(nil)), "decode(encode(o)) re-encodes identically")
		})
	}
}

// TestTelemetryOption reads BullMQ's telemetry option in both of its
// forms: public {"telemetry":{metadata, omitContext}} and stored tm/omc.
func TestTelemetryOption(t *testing.T) {
	t.Parallel()
	const md = `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	pub, err := DecodePublicOpts([]byte(`{"telemetry":{"metadata":` + strconv.Quote(md) + `,"omitContext":false}}`))
	require.NoError(t, err)
	require.Equal(t, md, pub.Telemetry)
	require.False(t, pub.OmitContext)
	stored, err := DecodeOpts(`{"tm":` + strconv.Quote(md) + `,"omc":true,"attempts":0}`)
	require.NoError(t, err)
	require.Equal(t, md, stored.Telemetry)
	require.True(t, stored.OmitContext)
	require.Empty(t, stored.Extra, "tm and omc are modelled, not carried as unknown keys")
	// tm and omc are stored names only; a public object with other keys is refused.
	_, err = DecodePublicOpts([]byte(`{"tm":"x"}`))
	require.ErrorContains(t, err, `unknown job option "tm"`)
	_, err = DecodePublicOpts([]byte(`{"telemetry":{"metadata":"x","trace":1}}`))
	require.ErrorContains(t, err, `job option "telemetry": want {metadata: string, omitContext: bool}`)
	// A stored tm that is not a string is no context drover can use: it
	// stays verbatim so the job round-trips.
	odd, err := DecodeOpts(`{"tm":{"a":1}}`)
	require.NoError(t, err)
	require.Empty(t, odd.Telemetry)
	require.JSONEq(t, `{"a":1}`, string(odd.Extra["tm"]))
	require.NotContains(t, PublicOptionNames(), "")
	require.NotContains(t, PublicOptionNames(), "parent", "listed as known, then refused")
}

func TestKeepSpec(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	five, zero, neg := int64(5), int64(0), int64(-1)
	tests := []struct {
		name string
		keep *Keep
		want string
	}{
		{"Nil", nil, ""},
		{"True", &Keep{Set: true, Bool: &yes}, "0"},
		{"False", &Keep{Set: true, Bool: &no}, ""},
		{"Count", &Keep{Set: true, Count: &five}, "5,,0"},
		{"CountZero", &Keep{Set: true, Count: &zero}, "0"},
		{"CountNegative", &Keep{Set: true, Count: &neg}, ""},
		{"Age", &Keep{Set: true, Object: true, AgeMs: 30000}, "-1,30000,0"},
		{"AgeCountLimit", &Keep{Set: true, Object: true, AgeMs: 30000, Count: &five, Limit: 9}, "5,30000,9"},
		// BullMQ removes every job finished by now (this one too) for an
		// age of 0 or less; a limit of 0 turns the age bound off.
		{"AgeZero", &Keep{Set: true, Object: true, HasAge: true}, "-1,0,0"},
		{"AgeZeroCount", &Keep{Set: true, Object: true, HasAge: true, Count: &five}, "5,0,0"},
		{"AgeNegative", &Keep{Set: true, Object: true, AgeMs: -2000}, "-1,-2000,0"},
		{"AgeZeroLimitZero", &Keep{Set: true, Object: true, HasAge: true, HasLimit: true, Count: &five}, "5,,0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.keep.Spec())
		})
	}
}

// TestKeepFractionalAge: Node stores a retention age as given, a fraction
// of a second too, and BullMQ's finish bounds by age * 1000 ms. The decoder
// kept whole seconds, so {"age":0.5} read as an age of 0: every finished
// job expired at once instead of those older than half a second.
func TestKeepFractionalAge(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ stored, spec, back string }{
		{`{"removeOnComplete":{"age":0.5}}`, "-1,500,0", `"removeOnComplete":{"age":0.5}`},
		{`{"removeOnComplete":{"age":1.25,"count":3}}`, "3,1250,0", `"removeOnComplete":{"age":1.25,"count":3}`},
		{`{"removeOnComplete":{"age":2e1}}`, "-1,20000,0", `"removeOnComplete":{"age":20}`},
		{`{"removeOnComplete":{"age":3600}}`, "-1,3600000,0", `"removeOnComplete":{"age":3600}`},
	} {
		o, err := DecodeOpts(tt.stored)
		require.NoError(t, err, tt.stored)
		require.Equal(t, tt.spec, o.RemoveOnComplete.Spec(), tt.stored)
		require.Contains(t, string(o.AppendJSON(nil)), tt.back, tt.stored)
	}
	// Public input stays whole seconds.
	_, err := DecodePublicOpts([]byte(`{"removeOnComplete":{"age":0.5}}`))
	require.Error(t, err)
}

// FuzzDecode feeds other people's bytes to the hash decoder: it may refuse
// them, never panic.
func FuzzDecode(f *testing.F) {
	f.Add(`{"attempts":3,"backoff":{"type":"fixed","delay":1}}`, `{"a":1}`, "12", `["x"]`)
	f.Add(`{"de":{"id":"x","ttl":1e3},"removeOnFail":{"age":1.5}}`, `null`, "1.7e12", `{}`)
	f.Add(`{"removeOnComplete":true,"backoff":5}`, `"s"`, "", "")
	f.Fuzz(func(t *testing.T, opts, data, ts, stack string) {
		rec, _, err := Decode("f", []any{"opts", opts, "data", data, "timestamp", ts, "stacktrace", stack})
		if err == nil {
			_ = rec.Opts.AppendJSON(nil)
			_ = rec.Opts.RemoveOnComplete.Spec()
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode("x/y", nodeHash); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeOpts(b *testing.B) {
	ten := int64(10)
	o := Opts{Attempts: 3, Backoff: &Backoff{Type: "exponential", Delay: 1000}, RemoveOnComplete: &Keep{Set: true, Count: &ten}}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = o.AppendJSON(buf[:0])
	}
}

// TestStoredFlagTruthiness: a stored flag of any JSON value reads as BullMQ
// reads it: lifo and the failure policy flags by JS truthiness (its worker,
// job.retry() and Job constructor), lifo for a scheduler's next run and the
// deduplication flags by Lua truthiness (its scripts).
func TestStoredFlagTruthiness(t *testing.T) {
	for _, c := range []struct {
		raw     string
		js, lua bool
	}{
		{`true`, true, true}, {`false`, false, false}, {`null`, false, false},
		{`"false"`, true, true}, {`"0"`, true, true}, {`"true"`, true, true}, {`""`, false, true},
		{`0`, false, true}, {`0.0`, false, true}, {`-0`, false, true}, {`1`, true, true}, {`-1.5`, true, true},
		{`{}`, true, true}, {`[]`, true, true},
	} {
		t.Run(c.raw, func(t *testing.T) {
			o, err := DecodeOpts(`{"lifo":` + c.raw + `,"fpof":` + c.raw + `,"rdof":` + c.raw + `,"omc":` + c.raw +
				`,"de":{"id":"d","keepLastIfActive":` + c.raw + `,"extend":` + c.raw + `}}`)
			require.NoError(t, err)
			require.Equal(t, c.js, o.LIFO, "lifo")
			require.Equal(t, c.lua, o.LIFOInLua, "lifo in Lua")
			require.Equal(t, c.js, o.FailParent, "fpof")
			require.Equal(t, c.js, o.RemoveDependency, "rdof")
			require.Equal(t, c.js, o.OmitContext, "omc")
			require.Equal(t, c.lua, o.Dedup.KeepLastIfActive, "de.keepLastIfActive")
			require.Equal(t, c.lua, o.Dedup.Extend, "de.extend")
		})
	}
}
