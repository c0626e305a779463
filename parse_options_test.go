package drover_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

func TestParseJobOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		want    *drover.JobOptions
		wantErr string
	}{
		{"Empty", `{}`, &drover.JobOptions{}, ""},
		{"Full", `{"jobId":"order-7","delay":1500,"priority":3,"lifo":true,"attempts":5,
			"backoff":{"type":"exponential","delay":1000,"jitter":0.2},"removeOnComplete":true,
			"removeOnFail":{"age":3600,"count":10},"keepLogs":20,"sizeLimit":4096,
			"deduplication":{"id":"d","ttl":5000,"extend":true}}`,
			&drover.JobOptions{JobID: "order-7", Delay: 1500 * time.Millisecond, Priority: 3, LIFO: true, Attempts: 5,
				Backoff:          &drover.Backoff{Type: "exponential", Delay: time.Second, Jitter: 0.2},
				RemoveOnComplete: &drover.Retention{Remove: true},
				RemoveOnFail:     &drover.Retention{Age: time.Hour, Count: 10}, KeepLogs: 20, SizeLimit: 4096,
				Deduplication: &drover.Deduplication{ID: "d", TTL: 5 * time.Second, Extend: true}}, ""},
		{"NumericBackoffAndCount", `{"backoff":250,"removeOnComplete":100}`,
			&drover.JobOptions{Backoff: &drover.Backoff{Type: "fixed", Delay: 250 * time.Millisecond},
				RemoveOnComplete: &drover.Retention{Count: 100}}, ""},
		{"UnknownOption", `{"attempts":2,"retries":3}`, nil, `unknown job option "retries"`},
		{"UnknownNested", `{"backoff":{"type":"fixed","delay":1,"factor":2}}`, nil, `job option "backoff": json: unknown field "factor"`},
		{"WrongType", `{"attempts":"three"}`, nil, `job option "attempts"`},
		{"NegativeDelay", `{"delay":-5}`, nil, "JobOptions.Delay must not be negative"},
		{"BadID", `{"jobId":"a:b"}`, nil, `job id "a:b" must not contain ':'`},
		{"DedupWithoutID", `{"deduplication":{"ttl":5}}`, nil, "Deduplication.ID must not be empty"},
		{"NotAnObject", `[1,2]`, nil, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := drover.ParseJobOptions([]byte(tt.json))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
