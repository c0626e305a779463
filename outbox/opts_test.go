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
		RemoveOnComplete: &drover.Retention{Count: 100, Age: time.Hour, Limit: 10},
		RemoveOnFail:     &drover.Retention{Remove: true},
		Timestamp:        time.UnixMilli(1_700_000_000_123),
		StackTraceLimit:  -1,
		KeepLogs:         20,
		SizeLimit:        4096,
		Deduplication:    &drover.Deduplication{ID: "d", TTL: time.Minute, Extend: true, Replace: true},
	}

	t.Run("EveryFieldRoundTrips", func(t *testing.T) {
		t.Parallel()

		b, err := encodeOpts(full)
		require.NoError(t, err)
		got, err := decodeOpts(b)
		require.NoError(t, err)
		require.Equal(t, full, got)
	})

	t.Run("ZeroOptionsRoundTripAsEmptyObject", func(t *testing.T) {
		t.Parallel()

		b, err := encodeOpts(&drover.JobOptions{})
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(b))
		got, err := decodeOpts(b)
		require.NoError(t, err)
		require.Equal(t, &drover.JobOptions{}, got)
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

	t.Run("TheStoredNamesAreFixed", func(t *testing.T) {
		t.Parallel()

		// Rows outlive deploys: renaming a stored key would drop the option
		// of every pending row. Change this test only with a migration.
		b, err := encodeOpts(full)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"jobId": "order-42", "delayMs": 1500, "priority": 7, "lifo": true, "attempts": 5,
			"backoff": {"type": "exponential", "delayMs": 2000, "jitter": 0.5},
			"removeOnComplete": {"count": 100, "ageMs": 3600000, "limit": 10},
			"removeOnFail": {"remove": true},
			"timestampMs": 1700000000123, "stackTraceLimit": -1, "keepLogs": 20, "sizeLimit": 4096,
			"deduplication": {"id": "d", "ttlMs": 60000, "extend": true, "replace": true}
		}`, string(b))
	})

	t.Run("GarbageIsAnError", func(t *testing.T) {
		t.Parallel()

		_, err := decodeOpts([]byte("{"))
		require.ErrorContains(t, err, "opts column is not valid JSON")
	})
}

// TestStoredOptsCoversJobOptions fails when drover.JobOptions (or a struct
// it holds) gains a field that the outbox would silently drop.
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
		"Timestamp", "StackTraceLimit", "KeepLogs", "SizeLimit", "Deduplication",
	}, fields(drover.JobOptions{}), "update storedOpts, encodeOpts and decodeOpts, then this list")
	require.ElementsMatch(t, []string{"Type", "Delay", "Jitter"}, fields(drover.Backoff{}))
	require.ElementsMatch(t, []string{"Remove", "Count", "Age", "Limit"}, fields(drover.Retention{}))
	require.ElementsMatch(t, []string{"ID", "TTL", "Extend", "Replace"}, fields(drover.Deduplication{}))
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
