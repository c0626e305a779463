package inspect_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/inspect"
)

// TestDurationsInMilliseconds pins the JSON of every type with durations
// or instants: camelCase names (BullMQ's for the fields a job's JSON shares
// with BullMQ's), instants in epoch milliseconds, the durations in whole
// milliseconds after the other fields; reading what the readable ones write
// gives the value again.
func TestDurationsInMilliseconds(t *testing.T) {
	t.Parallel()
	utc := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) // 1796205600000 ms
	at := inspect.InstantOf(utc)
	after := func(d time.Duration) inspect.Instant { return inspect.InstantOf(utc.Add(d)) }
	for _, c := range []struct {
		v    any
		want string
	}{
		{inspect.Backoff{Type: "exponential", Delay: 1500 * time.Millisecond, Jitter: 0.5}, `{"type":"exponential","delay":1500,"jitter":0.5}`},
		{inspect.Attempt{N: 2, Start: at, End: after(time.Second), Outcome: "retry-delayed", Error: "boom", Worker: "w1",
			Backoff: 2500 * time.Millisecond, NextRun: after(3 * time.Second), Recorded: true}, `{"n":2,"start":1796205600000,"end":1796205601000,"outcome":"retry-delayed","error":"boom","worker":"w1","nextRun":1796205603000,"recorded":true,"backoff":2500}`},
		{inspect.Attempt{N: 1, Outcome: "completed"}, `{"n":1,"outcome":"completed","recorded":false}`},
		{inspect.Lock{Held: true, TTL: 30 * time.Second, Token: "w1:2"}, `{"held":true,"token":"w1:2","ttl":30000}`},
		{inspect.Lock{}, `{"held":false,"ttl":0}`},
		{inspect.JobDetail{Queue: "mail", Data: json.RawMessage(`{"to":"ada"}`), Priority: 3, Delay: 2 * time.Second,
			Stacktrace: []string{"e"}, Timeline: []inspect.Attempt{{N: 1, Outcome: "failed", Backoff: time.Second}}, TimelineSource: "drover",
			Backoff: &inspect.Backoff{Type: "fixed", Delay: time.Second}}, `{"id":"","name":"","state":"","retryState":"","budget":{"made":0,"started":0,"allowed":0,"left":0,"used":0},"attemptsMade":0,"attemptsStarted":0,"stalledCounter":0,"queue":"mail","data":{"to":"ada"},"backoff":{"type":"fixed","delay":1000},"priority":3,"stacktrace":["e"],"timeline":[{"n":1,"outcome":"failed","recorded":false,"backoff":1000}],"timelineSource":"drover","timelineOmitted":0,"logs":null,"logCount":0,"delay":2000}`},
		{inspect.JobDetail{JobSummary: inspect.JobSummary{ID: "7", Name: "send", State: "completed", RetryState: "completed",
			Budget: inspect.Budget{Made: 1, Started: 2, Allowed: 3, Left: 2, Used: 1.0 / 3}, AttemptsMade: 1, AttemptsStarted: 2, StalledCount: 1,
			Timestamp: at, ProcessedOn: after(time.Second), FinishedOn: after(2 * time.Second), ProcessedBy: "w", Progress: json.RawMessage(`42`)},
			Queue: "mail", Data: json.RawMessage(`{}`), Opts: json.RawMessage(`{"attempts":3}`), ReturnValue: json.RawMessage(`"sent"`),
			Stacktrace: []string{}, Timeline: []inspect.Attempt{}, TimelineSource: "derived", Logs: []string{},
			DeduplicationID: "d1", RepeatJobKey: "s1", ParentKey: "bull:p:1"}, `{"id":"7","name":"send","state":"completed","retryState":"completed","budget":{"made":1,"started":2,"allowed":3,"left":2,"used":0.3333333333333333},"attemptsMade":1,"attemptsStarted":2,"stalledCounter":1,"timestamp":1796205600000,"processedOn":1796205601000,"finishedOn":1796205602000,"processedBy":"w","progress":42,"queue":"mail","data":{},"opts":{"attempts":3},"priority":0,"returnvalue":"sent","deduplicationId":"d1","repeatJobKey":"s1","parentKey":"bull:p:1","stacktrace":[],"timeline":[],"timelineSource":"derived","timelineOmitted":0,"logs":[],"logCount":0,"delay":0}`},
		{inspect.JobSummary{ID: "8", State: "delayed", NextRun: after(time.Hour), FailedFor: ""}, `{"id":"8","name":"","state":"delayed","retryState":"","budget":{"made":0,"started":0,"allowed":0,"left":0,"used":0},"attemptsMade":0,"attemptsStarted":0,"stalledCounter":0,"nextRun":1796209200000}`},
		{inspect.Event{ID: "1-0", Time: at, Queue: "q", Name: "delayed", JobID: "9", DelayUntil: after(time.Hour)}, `{"id":"1-0","time":1796205600000,"queue":"q","name":"delayed","jobId":"9","delayUntil":1796209200000}`},
		{inspect.Event{ID: "2-0", Time: at, Queue: "q", Name: "completed", JobID: "9", ReturnValue: json.RawMessage(`{"ok":true}`)}, `{"id":"2-0","time":1796205600000,"queue":"q","name":"completed","jobId":"9","returnvalue":{"ok":true}}`},
		{inspect.FailureGroup{Error: "e", Example: "e", Count: 1, FirstSeen: at, LastSeen: after(time.Second), Filter: "x"}, `{"error":"e","example":"e","count":1,"unrecoverable":0,"firstSeen":1796205600000,"lastSeen":1796205601000,"filter":"x"}`},
		{inspect.DelayedStats{Queue: "q", At: at, Count: 9, Window: 2 * time.Second, Buckets: []inspect.Bucket{{Start: at, Count: 3}}, Sizes: []inspect.SizeSample{{At: at, Count: 9}}}, `{"queue":"q","at":1796205600000,"count":9,"overdue":0,"later":0,"buckets":[{"start":1796205600000,"count":3}],"considered":0,"peakStart":null,"peakCount":0,"peakOverdue":false,"peakSampled":0,"peakRetries":0,"clustering":0,"growth":0,"growthKnown":false,"sizes":[{"at":1796205600000,"count":9}],"alerts":null,"window":2000}`},
		{inspect.Conflict{Time: at, Queue: "q", JobID: "7", Op: "retry", Worker: "w", LockTTL: 1200 * time.Millisecond, HeldFor: 90 * time.Second}, `{"time":1796205600000,"queue":"q","jobId":"7","op":"retry","worker":"w","lockTtl":1200,"heldFor":90000}`},
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
		{inspect.ThroughputReport{Queue: "q", Step: time.Minute, Buckets: []inspect.ThroughputBucket{{Start: at, Completed: 2}}}, `{"queue":"q","buckets":[{"start":1796205600000,"completed":2,"failed":0}],"source":"","step":60000}`},
		{inspect.WorkerInfo{Queue: "q", Name: "w", Addr: "1.2.3.4:5", Age: 3 * time.Second, Waiting: true, LastCommand: "bzpopmin"}, `{"queue":"q","name":"w","addr":"1.2.3.4:5","waiting":true,"lastCommand":"bzpopmin","running":0,"age":3000,"idle":0}`},
		{inspect.SchedulerInfo{ID: "s", Every: 5 * time.Second, Next: at}, `{"id":"s","name":"","next":1796205600000,"iterations":0,"every":5000}`},
		{inspect.SchedulerInfo{ID: "s", Pattern: "* * * * *", Next: at, EndDate: after(time.Hour)}, `{"id":"s","name":"","pattern":"* * * * *","next":1796205600000,"iterations":0,"every":0,"endDate":1796209200000}`},
	} {
		b, err := json.Marshal(c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, string(b))
	}
}

// TestInstant pins Instant's JSON: epoch milliseconds, null for zero, read
// back in UTC; anything else is refused.
func TestInstant(t *testing.T) {
	t.Parallel()
	in := inspect.InstantOf(time.UnixMilli(1796205600123))
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Equal(t, `1796205600123`, string(b))
	var back inspect.Instant
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.Equal(in.Time))
	require.Equal(t, time.UTC, back.Location())
	b, err = json.Marshal(inspect.Instant{})
	require.NoError(t, err)
	require.Equal(t, `null`, string(b))
	require.NoError(t, json.Unmarshal([]byte(`null`), &back))
	require.True(t, back.IsZero())
	require.Error(t, json.Unmarshal([]byte(`"2026-12-02T10:00:00Z"`), &back))
}
