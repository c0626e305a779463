package inspect_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/inspect"
)

// TestDurationsInMilliseconds pins the JSON of every type with durations:
// camelCase names, the durations in whole milliseconds after the other
// fields; reading what the readable ones write gives the value again.
func TestDurationsInMilliseconds(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    any
		want string
	}{
		{inspect.Backoff{Type: "exponential", Delay: 1500 * time.Millisecond, Jitter: 0.5}, `{"type":"exponential","delay":1500,"jitter":0.5}`},
		{inspect.Attempt{N: 2, Start: at, End: at.Add(time.Second), Outcome: "retry-delayed", Error: "boom", Worker: "w1",
			Backoff: 2500 * time.Millisecond, NextRun: at.Add(3 * time.Second), Recorded: true}, `{"n":2,"start":"2026-12-02T10:00:00Z","end":"2026-12-02T10:00:01Z","outcome":"retry-delayed","error":"boom","worker":"w1","nextRun":"2026-12-02T10:00:03Z","recorded":true,"backoff":2500}`},
		{inspect.Attempt{N: 1, Outcome: "completed"}, `{"n":1,"outcome":"completed","recorded":false}`},
		{inspect.Lock{Held: true, TTL: 30 * time.Second, Token: "w1:2"}, `{"held":true,"token":"w1:2","ttl":30000}`},
		{inspect.Lock{}, `{"held":false,"ttl":0}`},
		{inspect.JobDetail{Queue: "mail", Data: json.RawMessage(`{"to":"ada"}`), Priority: 3, Delay: 2 * time.Second,
			Stacktrace: []string{"e"}, Timeline: []inspect.Attempt{{N: 1, Outcome: "failed", Backoff: time.Second}}, TimelineSource: "drover",
			Backoff: &inspect.Backoff{Type: "fixed", Delay: time.Second}}, `{"id":"","name":"","state":"","retryState":"","budget":{"made":0,"started":0,"allowed":0,"left":0,"used":0},"stalledCount":0,"queue":"mail","data":{"to":"ada"},"backoff":{"type":"fixed","delay":1000},"priority":3,"stacktrace":["e"],"timeline":[{"n":1,"outcome":"failed","recorded":false,"backoff":1000}],"timelineSource":"drover","timelineOmitted":0,"logs":null,"logCount":0,"delay":2000}`},
		{inspect.DelayedStats{Queue: "q", At: at, Count: 9, Window: 2 * time.Second, Buckets: []inspect.Bucket{{Start: at, Count: 3}}}, `{"queue":"q","at":"2026-12-02T10:00:00Z","count":9,"overdue":0,"later":0,"buckets":[{"start":"2026-12-02T10:00:00Z","count":3}],"considered":0,"peakStart":"0001-01-01T00:00:00Z","peakCount":0,"peakOverdue":false,"clustering":0,"growth":0,"growthKnown":false,"sizes":null,"alerts":null,"window":2000}`},
		{inspect.Conflict{Time: at, Queue: "q", JobID: "7", Op: "retry", Worker: "w", LockTTL: 1200 * time.Millisecond, HeldFor: 90 * time.Second}, `{"time":"2026-12-02T10:00:00Z","queue":"q","jobId":"7","op":"retry","worker":"w","lockTtl":1200,"heldFor":90000}`},
	} {
		b, err := json.Marshal(c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, string(b))
		back := reflect.New(reflect.TypeOf(c.v))
		require.NoError(t, json.Unmarshal(b, back.Interface()))
		require.Equal(t, c.v, back.Elem().Interface())
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{inspect.ThroughputReport{Queue: "q", Step: time.Minute}, `{"queue":"q","buckets":null,"source":"","step":60000}`},
		{inspect.WorkerInfo{Queue: "q", Name: "w", Addr: "1.2.3.4:5", Age: 3 * time.Second, Waiting: true, LastCommand: "bzpopmin"}, `{"queue":"q","name":"w","addr":"1.2.3.4:5","waiting":true,"lastCommand":"bzpopmin","age":3000,"idle":0}`},
		{inspect.SchedulerInfo{ID: "s", Every: 5 * time.Second, Next: at}, `{"id":"s","name":"","next":"2026-12-02T10:00:00Z","iterations":0,"every":5000}`},
		{inspect.SchedulerInfo{ID: "s", Pattern: "* * * * *", Next: at, EndDate: at.Add(time.Hour)}, `{"id":"s","name":"","pattern":"* * * * *","next":"2026-12-02T10:00:00Z","iterations":0,"every":0,"endDate":"2026-12-02T11:00:00Z"}`},
	} {
		b, err := json.Marshal(c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, string(b))
	}
}
