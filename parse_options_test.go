package drover_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
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
				RemoveOnFail:     &drover.Retention{Age: time.Hour, Count: 10, Object: true}, KeepLogs: 20, SizeLimit: 4096,
				Deduplication: &drover.Deduplication{ID: "d", TTL: 5 * time.Second, Extend: true}}, ""},
		{"KeepLastIfActive", `{"deduplication":{"id":"d","ttl":5000,"replace":true,"keepLastIfActive":true}}`,
			&drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d", TTL: 5 * time.Second, Replace: true, KeepLastIfActive: true}}, ""},
		{"Reschedule", `{"delay":60000,"deduplication":{"id":"d","ttl":5000,"reschedule":true}}`,
			&drover.JobOptions{Delay: time.Minute, Deduplication: &drover.Deduplication{ID: "d", TTL: 5 * time.Second, Reschedule: true}}, ""},
		{"DedupUnknownField", `{"deduplication":{"id":"d","rescheduled":true}}`, nil,
			`job option "deduplication": rescheduled: unknown field (want id, ttl, extend, replace, keepLastIfActive, reschedule)`},
		{"NumericBackoffAndCount", `{"backoff":250,"removeOnComplete":100}`,
			&drover.JobOptions{Backoff: &drover.Backoff{Type: "fixed", Delay: 250 * time.Millisecond},
				RemoveOnComplete: &drover.Retention{Count: 100}}, ""},
		{"UnknownOption", `{"attempts":2,"retries":3}`, nil, `unknown job option "retries"`},
		{"UnknownNested", `{"backoff":{"type":"fixed","delay":1,"factor":2}}`, nil, `job option "backoff": json: unknown field "factor"`},
		{"UnknownRetentionField", `{"removeOnFail":{"ages":1}}`, nil, `job option "removeOnFail": ages: unknown field`},
		{"WrongType", `{"attempts":"three"}`, nil, `job option "attempts"`},
		{"NegativeDelay", `{"delay":-5}`, nil, `job option "delay": must be between 0 and 9223372036854, got -5`},
		{"CountZeroRemoves", `{"removeOnComplete":{"count":0}}`,
			&drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true, Object: true}}, ""},
		{"AgeWithCountZeroRemoves", `{"removeOnComplete":{"age":3600,"count":0}}`,
			&drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true, Age: time.Hour, Object: true}}, ""},
		{"CountObject", `{"removeOnFail":{"count":2}}`,
			&drover.JobOptions{RemoveOnFail: &drover.Retention{Count: 2, Object: true}}, ""},
		{"StackTraceLimitZeroKeepsNone", `{"stackTraceLimit":0}`, &drover.JobOptions{StackTraceLimit: -1}, ""},
		{"DelayThatWouldWrap", `{"delay":18446744073710}`, nil, `job option "delay": must be between 0 and 9223372036854, got 18446744073710`},
		{"BackoffDelayThatWouldWrap", `{"backoff":{"type":"fixed","delay":1e16}}`, nil, `job option "backoff": delay: must be between 0 and`},
		{"TTLThatWouldWrap", `{"deduplication":{"id":"d","ttl":99999999999999999}}`, nil, `job option "deduplication": ttl: must be between 0 and`},
		{"AgeThatWouldWrap", `{"removeOnComplete":{"age":9300000000}}`, nil, `job option "removeOnComplete": age: must be between 0 and`},
		{"AttemptsRounded", `{"attempts":100000000000000}`, nil, `job option "attempts": must be between 0 and 99999999999999`},
		{"FractionalAttempts", `{"attempts":1.5}`, nil, `job option "attempts": want a whole number, got 1.5`},
		{"PriorityTooHigh", `{"priority":2097152}`, nil, `job option "priority": must be between 0 and 2097151`},
		{"BadID", `{"jobId":"a:b"}`, nil, `job id "a:b" must not contain ':'`},
		{"DedupWithoutID", `{"deduplication":{"ttl":5}}`, nil, `job option "deduplication": id is required`},
		{"NotAnObject", `[1,2]`, nil, "job options are not a JSON object: got an array"},
		// Said in the user's terms, not the decoder's: "json: cannot
		// unmarshal array into Go value of type map[string]json.RawMessage".
		{"NotAnObjectString", ` "x"`, nil, "job options are not a JSON object: got a string"},
		{"NotAnObjectNull", `null`, nil, "job options are not a JSON object: got null"},
		{"NotJSON", `{bad`, nil, "job options are not valid JSON: invalid character 'b'"},
		{"Telemetry", `{"telemetry":{"metadata":"{\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}","omitContext":true}}`,
			&drover.JobOptions{Telemetry: &drover.Telemetry{Metadata: `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, OmitContext: true}}, ""},
		{"TelemetryUnknownField", `{"telemetry":{"meta":"x"}}`, nil, `job option "telemetry": want {metadata: string, omitContext: bool}`},
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

// TestParsedRetentionRemoves runs BullMQ's "remove" shapes through a drover
// worker: a completed job with removeOnComplete {count:0} or
// {age:3600,count:0}, and a failed one with removeOnFail 0, leave no hash.
func TestParsedRetentionRemoves(t *testing.T) {
	t.Parallel()

	bundle := setupQueue(t)
	ctx := context.Background()
	var ids []string
	for _, text := range []string{
		`{"removeOnComplete":{"count":0}}`,
		`{"removeOnComplete":{"age":3600,"count":0}}`,
		`{"removeOnFail":0,"attempts":1}`,
		`{"removeOnFail":{"count":0,"limit":5}}`,
	} {
		o, err := drover.ParseJobOptions([]byte(text))
		require.NoError(t, err)
		res, err := bundle.queue.Add(ctx, "j", nil, o)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	bundle.startWorker(t, func(_ context.Context, job *drover.Job) (any, error) {
		if job.Opts.RemoveOnFail != nil {
			return nil, errors.New("boom")
		}
		return 1, nil
	}, nil)
	for _, id := range ids {
		testkit.WaitFor(t, 10*time.Second, "job "+id+" removed", func() bool {
			n, err := bundle.rdb.Exists(ctx, bundle.prefix+":q:"+id).Result()
			require.NoError(t, err)
			return n == 0
		})
	}
}

// TestParsedRetentionStoredAsGiven: every removeOnComplete/removeOnFail
// shape BullMQ accepts is stored as Node stores it (Node keeps the option
// as given), also when the options are read back with Job.Opts and added
// again, and means what it means in BullMQ (Job.Opts' fields).
func TestParsedRetentionStoredAsGiven(t *testing.T) {
	t.Parallel()

	bundle := setupQueue(t)
	ctx := context.Background()
	for _, tt := range []struct {
		shape string
		means drover.Retention
	}{
		{`true`, drover.Retention{Remove: true}},
		{`false`, drover.Retention{}},
		{`3`, drover.Retention{Count: 3}},
		{`0`, drover.Retention{Remove: true}},
		{`-1`, drover.Retention{}},
		{`{}`, drover.Retention{Object: true}},
		{`{"count":0}`, drover.Retention{Remove: true, Object: true}},
		{`{"count":2}`, drover.Retention{Count: 2, Object: true}},
		{`{"count":-1}`, drover.Retention{Object: true}},
		{`{"age":3600,"count":0}`, drover.Retention{Remove: true, Age: time.Hour, Object: true}},
		{`{"age":60,"count":-1}`, drover.Retention{Age: time.Minute, Object: true}},
		{`{"age":0}`, drover.Retention{Remove: true, Object: true}},
		{`{"age":60,"limit":0}`, drover.Retention{Object: true}},
		{`{"age":60,"limit":5}`, drover.Retention{Age: time.Minute, Limit: 5, Object: true}},
		{`{"count":0,"limit":5}`, drover.Retention{Remove: true, Limit: 5, Object: true}},
	} {
		o, err := drover.ParseJobOptions([]byte(`{"removeOnComplete":` + tt.shape + `}`))
		require.NoError(t, err, tt.shape)
		for round := range 2 {
			res, err := bundle.queue.Add(ctx, "j", nil, o)
			require.NoError(t, err, tt.shape)
			opts, err := bundle.rdb.HGet(ctx, bundle.prefix+":q:"+res.Job.ID, "opts").Result()
			require.NoError(t, err)
			require.Equal(t, `{"removeOnComplete":`+tt.shape+`,"attempts":0}`, opts, "round %d", round)
			j, err := bundle.queue.GetJob(ctx, res.Job.ID)
			require.NoError(t, err)
			got := *j.Opts.RemoveOnComplete
			require.True(t, got.Remove == tt.means.Remove && got.Count == tt.means.Count && got.Age == tt.means.Age &&
				got.Limit == tt.means.Limit && got.Object == tt.means.Object, "%s read back as %+v", tt.shape, got)
			o = &j.Opts
		}
		// Changed fields win over the remembered shape.
		o.RemoveOnComplete.Count = 7
		o.RemoveOnComplete.Remove = false
		res, err := bundle.queue.Add(ctx, "j", nil, o)
		require.NoError(t, err, tt.shape)
		j, err := bundle.queue.GetJob(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, 7, j.Opts.RemoveOnComplete.Count, tt.shape)
	}
}

// TestOutOfRangeOptionsWriteNothing: a number BullMQ cannot store exactly
// is refused naming the option, before anything reaches Redis.
func TestOutOfRangeOptionsWriteNothing(t *testing.T) {
	t.Parallel()

	bundle := setupQueue(t)
	ctx := context.Background()
	for _, o := range []*drover.JobOptions{
		{Attempts: 1e14},
		{KeepLogs: 1e15},
		{RemoveOnComplete: &drover.Retention{Count: 1e14}},
		{Timestamp: time.UnixMilli(-1)},
	} {
		_, err := bundle.queue.Add(ctx, "x", nil, o)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.Regexp(t, `JobOptions\.\w+`, err.Error())
	}
	keys, err := bundle.rdb.Keys(ctx, bundle.prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
}

// TestBadRepeatOptionsWriteNothing: a job scheduler whose options cannot
// work is refused naming the problem, and nothing reaches Redis. A time
// zone is checked with Every too (BullMQ ignores it there, but a name that
// is no zone is a mistake worth hearing about).
func TestBadRepeatOptionsWriteNothing(t *testing.T) {
	t.Parallel()

	bundle := setupQueue(t)
	ctx := context.Background()
	for _, tt := range []struct {
		repeat drover.RepeatOptions
		want   string
	}{
		{drover.RepeatOptions{}, "set Every or Pattern"},
		{drover.RepeatOptions{Every: time.Second, Pattern: "* * * * *"}, "both set"},
		{drover.RepeatOptions{Every: -time.Second}, "RepeatOptions.Every"},
		{drover.RepeatOptions{Pattern: "bad-cron"}, `cron pattern "bad-cron"`},
		{drover.RepeatOptions{Pattern: "* * * * *", TZ: "Mars/Base"}, `time zone "Mars/Base"`},
		{drover.RepeatOptions{Every: time.Second, TZ: "Mars/Base"}, `time zone "Mars/Base"`},
		{drover.RepeatOptions{Every: time.Second, Limit: -1}, "RepeatOptions.Limit"},
	} {
		_, err := bundle.queue.UpsertJobScheduler(ctx, "s", tt.repeat, nil)
		require.ErrorIs(t, err, drover.ErrInvalidOption, "%+v", tt.repeat)
		require.ErrorContains(t, err, tt.want)
	}
	keys, err := bundle.rdb.Keys(ctx, bundle.prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
}

// TestBadSchedulerTemplatesWriteNothing: a job scheduler's template is
// checked as Add checks a job, before anything is written. Before, a
// template's Backoff.Type that is neither fixed, exponential nor in
// QueueOptions.BackoffTypes was stored (Add refuses it), so every run
// failed for good at its first failure ("unknown backoff strategy").
func TestBadSchedulerTemplatesWriteNothing(t *testing.T) {
	t.Parallel()

	bundle := setupQueue(t)
	ctx := context.Background()
	every := drover.RepeatOptions{Every: time.Hour}
	for _, tt := range []struct {
		name string
		tmpl *drover.JobTemplate
		is   error
		want string
	}{
		{"UnknownBackoff", &drover.JobTemplate{Opts: &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "lineer", Delay: time.Second}}},
			drover.ErrInvalidOption, `unknown JobOptions.Backoff.Type "lineer"`},
		{"EmptyBackoff", &drover.JobTemplate{Opts: &drover.JobOptions{Backoff: &drover.Backoff{}}}, drover.ErrInvalidOption, "JobOptions.Backoff.Type must be"},
		{"JobID", &drover.JobTemplate{Opts: &drover.JobOptions{JobID: "x"}}, drover.ErrInvalidOption, "JobTemplate.Opts must not set JobID"},
		{"Priority", &drover.JobTemplate{Opts: &drover.JobOptions{Priority: -1}}, drover.ErrInvalidOption, "JobOptions.Priority must be between 0 and 2097151"},
		{"RetentionAge", &drover.JobTemplate{Opts: &drover.JobOptions{RemoveOnFail: &drover.Retention{Age: math.MaxInt64}}}, drover.ErrInvalidOption, "JobOptions.RemoveOnFail.Age must be at most"},
		{"Data", &drover.JobTemplate{Data: func() {}}, drover.ErrInvalidData, "unsupported type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bundle.queue.UpsertJobScheduler(ctx, "s", every, tt.tmpl)
			require.ErrorIs(t, err, tt.is)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, `upsert job scheduler "s" in queue "q"`)
		})
	}
	keys, err := bundle.rdb.Keys(ctx, bundle.prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)

	// A type the queue's workers register is taken.
	q, err := drover.NewQueue(bundle.rdb, "custom", &drover.QueueOptions{Prefix: bundle.prefix, BackoffTypes: []string{"lineer"}})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "s", every, &drover.JobTemplate{Opts: &drover.JobOptions{Backoff: &drover.Backoff{Type: "lineer"}}})
	require.NoError(t, err)
}

// TestDefaultJobOptionsBackoffTypeCheckedUpFront: a DefaultJobOptions
// backoff type neither fixed, exponential nor in BackoffTypes is refused
// by NewQueue and NewFlowProducer, naming it. Before, both were made, and
// every Add (every flow node of that queue) then failed on it.
func TestDefaultJobOptionsBackoffTypeCheckedUpFront(t *testing.T) {
	t.Parallel()
	bundle := setupQueue(t)
	bad := &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: "lineer"}}
	_, err := drover.NewQueue(bundle.rdb, "q", &drover.QueueOptions{Prefix: bundle.prefix, DefaultJobOptions: bad})
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, `QueueOptions.DefaultJobOptions: invalid option: unknown JobOptions.Backoff.Type "lineer"`)
	_, err = drover.NewFlowProducer(bundle.rdb, &drover.FlowProducerOptions{Prefix: bundle.prefix, DefaultJobOptions: map[string]*drover.JobOptions{"q": bad}})
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, `FlowProducerOptions.DefaultJobOptions["q"]: unknown JobOptions.Backoff.Type "lineer"`)
	// Listed in BackoffTypes, it is taken.
	_, err = drover.NewQueue(bundle.rdb, "q", &drover.QueueOptions{Prefix: bundle.prefix, DefaultJobOptions: bad, BackoffTypes: []string{"lineer"}})
	require.NoError(t, err)
	_, err = drover.NewFlowProducer(bundle.rdb, &drover.FlowProducerOptions{Prefix: bundle.prefix, DefaultJobOptions: map[string]*drover.JobOptions{"q": bad}, BackoffTypes: []string{"lineer"}})
	require.NoError(t, err)
}
