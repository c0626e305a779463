package outbox

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

func TestStoredOpts(t *testing.T) {
	t.Parallel()

	full := &drover.JobOptions{
		JobID:            "order-42",
		Delay:            1500 * time.Millisecond,
		Priority:         7,
		LIFO:             true,
		Attempts:         5,
		Backoff:          &drover.Backoff{Type: drover.BackoffExponential, Delay: 2 * time.Second, Jitter: 0.5},
		RemoveOnComplete: &drover.Retention{Count: 100, Age: time.Hour, Limit: 10, Object: true},
		RemoveOnFail:     &drover.Retention{Remove: true},
		Timestamp:        time.UnixMilli(1_700_000_000_123),
		StackTraceLimit:  -1,
		KeepLogs:         20,
		SizeLimit:        4096,
		Deduplication:    &drover.Deduplication{ID: "d", TTL: time.Minute, Extend: true, Replace: true, KeepLastIfActive: true, Reschedule: true},
		ParentPolicy:     drover.FailParent,
		Timeout:          30 * time.Second,
		Telemetry:        &drover.Telemetry{Metadata: `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, OmitContext: true},
	}

	t.Run("EveryFieldRoundTrips", func(t *testing.T) {
		t.Parallel()

		b, err := encodeOpts(full)
		require.NoError(t, err)
		got, err := decodeOpts(b)
		require.NoError(t, err)
		require.Equal(t, full, got)
	})

	t.Run("ZeroOptionsRoundTrip", func(t *testing.T) {
		t.Parallel()

		b, err := encodeOpts(&drover.JobOptions{})
		require.NoError(t, err)
		require.JSONEq(t, `{"attempts":0}`, string(b))
		got, err := decodeOpts(b)
		require.NoError(t, err)
		require.Equal(t, &drover.JobOptions{}, got)
	})

	// A RunAt has no stored option: the row keeps a timestamp and the delay
	// from it, so the job the relay adds later is due at RunAt.
	t.Run("RunAtKeepsItsDueTime", func(t *testing.T) {
		t.Parallel()

		runAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		for _, ts := range []time.Time{{}, time.UnixMilli(1_700_000_000_123)} {
			b, err := encodeOpts(&drover.JobOptions{RunAt: runAt, Timestamp: ts})
			require.NoError(t, err)
			got, err := decodeOpts(b)
			require.NoError(t, err)
			require.True(t, got.RunAt.IsZero())
			require.False(t, got.Timestamp.IsZero())
			if !ts.IsZero() {
				require.Equal(t, ts, got.Timestamp)
			}
			require.Equal(t, runAt, got.Timestamp.Add(got.Delay))
		}
	})

	t.Run("NilIsNULL", func(t *testing.T) {
		t.Parallel()

		b, err := encodeOpts(nil)
		require.NoError(t, err)
		require.Nil(t, b)
		got, err := decodeOpts(nil)
		require.NoError(t, err)
		require.Nil(t, got)
	})

	t.Run("TheColumnHoldsTheStoredOptsJSON", func(t *testing.T) {
		t.Parallel()

		// The bytes a job hash's opts field holds (BullMQ's stored names:
		// kl, de; retention age in seconds; stackTraceLimit 0 keeps none).
		b, err := encodeOpts(full)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"jobId": "order-42", "delay": 1500, "priority": 7, "lifo": true, "attempts": 5,
			"backoff": {"type": "exponential", "delay": 2000, "jitter": 0.5},
			"removeOnComplete": {"count": 100, "age": 3600, "limit": 10},
			"removeOnFail": true,
			"timestamp": 1700000000123, "stackTraceLimit": 0, "kl": 20, "sizeLimit": 4096,
			"de": {"id": "d", "ttl": 60000, "extend": true, "replace": true, "keepLastIfActive": true, "reschedule": true},
			"fpof": true, "timeout": 30000,
			"tm": "{\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}", "omc": true
		}`, string(b))
	})

	t.Run("RowsInTheFirstFormatStillDecode", func(t *testing.T) {
		t.Parallel()

		// What encodeOpts wrote for full before the column took the stored
		// opts JSON: rows like it wait in users' tables across the upgrade.
		got, err := decodeOpts([]byte(`{
			"jobId": "order-42", "delayMs": 1500, "priority": 7, "lifo": true, "attempts": 5,
			"backoff": {"type": "exponential", "delayMs": 2000, "jitter": 0.5},
			"removeOnComplete": {"count": 100, "ageMs": 3600000, "limit": 10},
			"removeOnFail": {"remove": true},
			"timestampMs": 1700000000123, "stackTraceLimit": -1, "keepLogs": 20, "sizeLimit": 4096,
			"deduplication": {"id": "d", "ttlMs": 60000, "extend": true, "replace": true}
		}`))
		require.NoError(t, err)
		// The first format predates the telemetry, parent policy, timeout
		// and keepLastIfActive and reschedule options.
		want := *full
		want.Telemetry = nil
		want.ParentPolicy = drover.ParentWaits
		want.Timeout = 0
		dedup := *full.Deduplication
		dedup.KeepLastIfActive = false
		dedup.Reschedule = false
		want.Deduplication = &dedup
		require.Equal(t, &want, got)

		// A first-format row with only keys both formats share means the
		// same read either way.
		for _, shared := range []string{
			`{}`,
			`{"jobId":"x","priority":3,"lifo":true,"attempts":2,"sizeLimit":9,"stackTraceLimit":7}`,
			`{"backoff":{"type":"fixed","jitter":0.5},"removeOnComplete":{"count":5,"limit":2},"removeOnFail":{}}`,
		} {
			legacy, err := isLegacyOpts([]byte(shared))
			require.NoError(t, err)
			require.False(t, legacy, shared)
			first, err := decodeLegacyOpts([]byte(shared))
			require.NoError(t, err)
			now, err := decodeOpts([]byte(shared))
			require.NoError(t, err)
			// A first-format retention object is that format's own
			// encoding, not BullMQ's object form: Object may differ.
			for _, r := range []*drover.Retention{first.RemoveOnComplete, first.RemoveOnFail, now.RemoveOnComplete, now.RemoveOnFail} {
				if r != nil {
					r.Object = false
				}
			}
			require.Equal(t, first, now, shared)
		}
	})

	t.Run("UnknownOptionsAreAnError", func(t *testing.T) {
		t.Parallel()

		_, err := decodeOpts([]byte(`{"attempts":2,"repeat":{"every":5}}`))
		require.EqualError(t, err, "opts column has options drover does not know: repeat")
	})

	t.Run("NegativeRetentionIsRefusedNotStoredAsKeepAll", func(t *testing.T) {
		t.Parallel()

		_, err := encodeOpts(&drover.JobOptions{RemoveOnFail: &drover.Retention{Count: -1}})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	})

	t.Run("GarbageIsAnError", func(t *testing.T) {
		t.Parallel()

		_, err := decodeOpts([]byte("{"))
		require.ErrorContains(t, err, "opts column is not a JSON object")
	})
}

// TestStoredOptsCoversJobOptions fails when drover.JobOptions (or a struct
// it holds) gains a field, so that full in TestStoredOpts sets it and
// EveryFieldRoundTrips proves the column keeps it.
func TestStoredOptsCoversJobOptions(t *testing.T) {
	t.Parallel()

	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	require.ElementsMatch(t, []string{
		"JobID", "Delay", "Priority", "LIFO", "Attempts", "Backoff", "RemoveOnComplete", "RemoveOnFail",
		"Timestamp", "StackTraceLimit", "KeepLogs", "SizeLimit", "Deduplication", "ParentPolicy",
		"Timeout", "Telemetry",
		"RunAt", // stored as Timestamp + Delay: RunAtKeepsItsDueTime
	}, fields(drover.JobOptions{}), "set the new field in TestStoredOpts's full, then update this list")
	require.ElementsMatch(t, []string{"Type", "Delay", "Jitter"}, fields(drover.Backoff{}))
	// form is the shape ParseJobOptions read: the column holds the stored
	// opts JSON, so it round-trips with it.
	require.ElementsMatch(t, []string{"Remove", "Count", "Age", "Limit", "Object", "form"}, fields(drover.Retention{}))
	require.ElementsMatch(t, []string{"ID", "TTL", "Extend", "Replace", "KeepLastIfActive", "Reschedule"}, fields(drover.Deduplication{}))
}

func TestEncodeData(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		data    any
		want    string
		wantErr string
	}{
		{"NilIsAnEmptyObject", nil, `{}`, ""},
		{"StructViaEncodingJSON", struct{ N int }{3}, `{"N":3}`, ""},
		{"RawMessageKeepsKeyOrder", json.RawMessage(`{"b":1,"a":2}`), `{"b":1,"a":2}`, ""},
		{"AsNodeWritesIt", json.RawMessage(`{ "h": "<a&b>\u2028", "n": 1.0 }`), "{\"h\":\"<a&b>\u2028\",\"n\":1}", ""},
		{"StructLikeQueueAdd", struct{ H string }{"<&>\u2029"}, "{\"H\":\"<&>\u2029\"}", ""},
		{"InvalidRawMessage", json.RawMessage(`{`), "", "json.RawMessage data is not valid JSON"},
		{"Unencodable", make(chan int), "", "json: unsupported type: chan int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := encodeData(tt.data)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}
