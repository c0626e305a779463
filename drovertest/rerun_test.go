package drovertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/drovertest"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does, without failing the real test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runRecorded runs f in a goroutine of its own (Fatalf ends it) and
// returns the Fatalf message, "" when there was none.
func runRecorded(r *fatalRecorder, f func()) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	return r.fatal
}

// TestRunAddsNothing: a Run whose job id (or deduplication id) matches a job
// an earlier Run left in RunQueue adds no job; it used to wait out its 30 s
// limit for a finish that could not come and then blame the processor
// ("did not finish within 30s"). It now fails at once, saying why.
func TestRunAddsNothing(t *testing.T) {
	t.Parallel()
	ok := drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return "ok", nil })
	for _, tc := range []struct {
		name string
		opts *drover.JobOptions
		want string
	}{
		{"SameJobID", &drover.JobOptions{JobID: "order-1"},
			`drovertest: Run added no job (duplicate): job order-1 ("charge") is already in queue "drovertest", completed`},
		{"SameDeduplicationIDInItsTTL", &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "order-1", TTL: time.Hour}},
			`drovertest: Run added no job (deduplicated): job 1 ("charge") is already in queue "drovertest", completed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &fatalRecorder{TB: t}
			k := drovertest.New(rec)
			first := k.Run(ok, "charge", nil, tc.opts)
			require.Equal(t, drover.OutcomeCompleted, first.Outcome)
			msg := runRecorded(rec, func() { k.Run(ok, "charge", nil, tc.opts) })
			require.Contains(t, msg, tc.want)
		})
	}
}

// TestRequireAddedArgsPointer: RequireAddedArgs with a pointer type, whose
// Kind is declared on the value receiver, used to panic calling Kind
// through a nil pointer.
func TestRequireAddedArgsPointer(t *testing.T) {
	t.Parallel()
	k := drovertest.New(t)
	_, err := k.Queue("receipts").AddArgs(context.Background(), &Receipt{Order: "A-1", Cents: 5}, nil)
	require.NoError(t, err)
	require.Equal(t, &Receipt{Order: "A-1", Cents: 5}, drovertest.RequireAddedArgs[*Receipt](t, k, "receipts"))
}

type noKind struct{}

func (noKind) Kind() string { return "" }

// TestRunArgsNil: nil args, or a nil pointer whose Kind is declared on
// the value receiver, fail the test with a message; the nil pointer used
// to panic calling Kind.
func TestRunArgsNil(t *testing.T) {
	t.Parallel()
	ok := drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil })
	for _, tc := range []struct {
		name string
		args drover.JobArgs
		want string
	}{
		{"Nil", nil, "drovertest: RunArgs needs args, got nil"},
		{"NilPointer", (*Receipt)(nil), "drovertest: RunArgs needs args, got a nil *drovertest_test.Receipt"},
		// An empty Kind used to run a job named "", which no drover.Kinds
		// routes (Work refuses an empty kind).
		{"EmptyKind", noKind{}, "drovertest: invalid job data: drovertest_test.noKind.Kind() is empty: a typed job needs a kind, its name, which Kinds routes it by"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &fatalRecorder{TB: t}
			require.Equal(t, tc.want, runRecorded(rec, func() { drovertest.RunArgs(rec, ok, tc.args, nil) }))
		})
	}
}

// TestRunWithRetention: a job whose options (or the worker's) remove it once
// it finishes is still read back into the Result. Run used to fail the test
// with `drovertest: get job "1" in queue "drovertest": job not found`, so a
// processor whose production options carry RemoveOnComplete could not be
// run with its real options.
func TestRunWithRetention(t *testing.T) {
	t.Parallel()
	remove := &drover.Retention{Remove: true}
	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if _, err := job.Log(ctx, "working"); err != nil {
			return nil, err
		}
		if job.Name == "fail" {
			return nil, drover.Unrecoverable(errors.New("bad card"))
		}
		return "sent", nil
	})
	for _, tc := range []struct {
		name    string
		job     string
		opts    *drover.JobOptions
		wopts   *drover.WorkerOptions
		outcome drover.Outcome
	}{
		{"JobRemoveOnComplete", "ok", &drover.JobOptions{RemoveOnComplete: remove}, nil, drover.OutcomeCompleted},
		{"JobRemoveOnFail", "fail", &drover.JobOptions{RemoveOnFail: remove}, nil, drover.OutcomeFailedUnrecoverable},
		{"WorkerRemoveOnComplete", "ok", nil, &drover.WorkerOptions{RemoveOnComplete: remove}, drover.OutcomeCompleted},
		{"WorkerRemoveOnFail", "fail", nil, &drover.WorkerOptions{RemoveOnFail: remove}, drover.OutcomeFailedUnrecoverable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := drovertest.New(t).RunWith(proc, tc.job, nil, tc.opts, tc.wopts)
			require.Equal(t, tc.outcome, res.Outcome)
			require.Equal(t, []string{"working"}, res.Logs)
			require.NotNil(t, res.Job)
			if tc.outcome == drover.OutcomeCompleted {
				require.JSONEq(t, `"sent"`, string(res.Value))
			} else {
				require.Equal(t, "bad card", res.Job.FailedReason)
			}
		})
	}
}

// TestRequireAddedMessages: a failing RequireAdded says what the queue does
// hold, so a misspelt name or queue shows at once. It used to say only
// "found 0".
func TestRequireAddedMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &fatalRecorder{TB: t}
	k := drovertest.New(rec)
	q := k.Queue("audit")
	for _, name := range []string{"welcome-sent", "welcome-sent", "receipt"} {
		_, err := q.Add(ctx, name, nil, nil)
		require.NoError(t, err)
	}
	require.Equal(t, `drovertest: want 1 job named "welcome" in queue "audit", found 0; the queue holds 3 jobs: "receipt" (1), "welcome-sent" (2)`,
		runRecorded(rec, func() { drovertest.RequireAdded(rec, k, "audit", "welcome") }))
	require.Equal(t, `drovertest: want 1 job named "welcome-sent" in queue "audit", found 2 (ids 1, 2)`,
		runRecorded(rec, func() { drovertest.RequireAdded(rec, k, "audit", "welcome-sent") }))
	require.Equal(t, `drovertest: want 1 job named "receipt" in queue "audits", found 0; the queue holds no jobs`,
		runRecorded(rec, func() { drovertest.RequireAdded(rec, k, "audits", "receipt") }))
}

// TestRunPanicOneAttempt: a processor that panics gets one attempt, as one
// that returns an error does. Run paused its queue only when the processor
// returned, so the panic's retry was fetched again at once: the processor
// ran two or three times and the Result's job showed the later attempts.
func TestRunPanicOneAttempt(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	res := drovertest.Run(t, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		runs.Add(1)
		panic("boom")
	}), "charge", nil, &drover.JobOptions{Attempts: 3})
	require.Equal(t, drover.OutcomeRetried, res.Outcome)
	require.EqualError(t, res.Err, "panic: boom")
	require.EqualValues(t, 1, runs.Load())
	require.Equal(t, 1, res.Job.AttemptsMade)
}

// TestConcurrentRuns: a Kit's methods are safe for concurrent use, Run
// included: Runs from several goroutines (say parallel subtests sharing a
// Kit) each run their own job. They used to share RunQueue unguarded, each
// Run draining and pausing it under the others, and all of them waited out
// 30 s: `drovertest: job 2 ("n") did not finish within 30s`.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	k := drovertest.New(t)
	proc := drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		var n int
		if err := job.DecodeData(&n); err != nil {
			return nil, err
		}
		return n * 10, nil
	})
	results := make([]*drovertest.Result, 16)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = k.Run(proc, "n", i, nil) })
	}
	wg.Wait()
	for i, res := range results {
		require.Equal(t, drover.OutcomeCompleted, res.Outcome, i)
		require.JSONEq(t, fmt.Sprint(i*10), string(res.Value), i)
	}
}

// Refund is a kind with its own options (drover.JobArgsWithOptions),
// including the Delay and retention that Run drops.
type Refund struct {
	Order string `json:"order"`
}

func (Refund) Kind() string { return "refund" }
func (Refund) JobOptions() *drover.JobOptions {
	return &drover.JobOptions{Attempts: 3, Delay: time.Hour, RemoveOnFail: &drover.Retention{Remove: true}}
}

// TestRunArgsKindOptions: RunArgs adds a JobArgsWithOptions with its
// kind's options, as Queue.AddArgs does, so a failing first attempt of a
// kind with 3 attempts is retried (not failed for good), runs at once
// despite the kind's Delay, and is read back despite its RemoveOnFail; the
// call's options still come first. A kind with bad options fails the test
// naming the type.
func TestRunArgsKindOptions(t *testing.T) {
	t.Parallel()
	fail := drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, errors.New("bank down") })
	res := drovertest.RunArgs(t, fail, Refund{Order: "A-1"}, nil)
	require.Equal(t, drover.OutcomeRetried, res.Outcome)
	require.Equal(t, 3, res.Job.Opts.Attempts)
	res = drovertest.RunArgs(t, fail, Refund{Order: "A-1"}, &drover.JobOptions{Attempts: 1})
	require.Equal(t, drover.OutcomeRetriesExhausted, res.Outcome)

	rec := &fatalRecorder{TB: t}
	msg := runRecorded(rec, func() { drovertest.RunArgs(rec, fail, badKind{}, nil) })
	require.Equal(t, `drovertest: the options of kind "bad" (drovertest_test.badKind.JobOptions): invalid option: JobOptions.Priority must be between 0 and 2097151, got -1`, msg)
}

type badKind struct{}

func (badKind) Kind() string                   { return "bad" }
func (badKind) JobOptions() *drover.JobOptions { return &drover.JobOptions{Priority: -1} }

// TestCheckStalledNil: CheckStalled with a nil worker fails the test with
// a message; it used to panic (nil pointer dereference in the seam).
func TestCheckStalledNil(t *testing.T) {
	t.Parallel()
	rec := &fatalRecorder{TB: t}
	var panicked any
	msg := runRecorded(rec, func() {
		defer func() { panicked = recover() }()
		drovertest.New(rec).CheckStalled(nil)
	})
	require.Nil(t, panicked)
	require.Equal(t, "drovertest: CheckStalled needs a worker, got nil", msg)
}

// TestRequireAddedArgsInterface: RequireAddedArgs with an interface type
// (here drover.JobArgs itself) fails the test naming the type; it used to
// panic calling Kind on the nil interface.
func TestRequireAddedArgsInterface(t *testing.T) {
	t.Parallel()
	k := drovertest.New(t)
	rec := &fatalRecorder{TB: t}
	var panicked any
	msg := runRecorded(rec, func() {
		defer func() { panicked = recover() }()
		drovertest.RequireAddedArgs[drover.JobArgs](rec, k, "receipts")
	})
	require.Nil(t, panicked)
	require.Equal(t, "drovertest: RequireAddedArgs: drover.JobArgs.Kind() panicked on a zero value (runtime error: invalid memory address or nil pointer dereference)", msg)
}

// TestAdvanceNegative: Advance with a negative duration fails the test
// with a message and leaves the clock where it was; it used to move the
// kit's clock back and lengthen every key's time to live, so jobs due by
// the old clock were not due any more.
func TestAdvanceNegative(t *testing.T) {
	t.Parallel()
	rec := &fatalRecorder{TB: t}
	k := drovertest.New(rec)
	before := k.Now()
	msg := runRecorded(rec, func() { k.Advance(-time.Second) })
	require.Equal(t, "drovertest: Advance needs a duration >= 0, got -1s", msg)
	require.Equal(t, before, k.Now())
	k.Advance(0)
	require.Equal(t, before, k.Now())
}

// TestRequireAddedArgsNullData: a job of T's kind whose data is JSON null
// fails the test, value T or pointer T, as drover.Work fails such a job;
// RequireAddedArgs used to return T's zero value (or a nil pointer) as if
// the job had been added with empty fields.
func TestRequireAddedArgsNullData(t *testing.T) {
	t.Parallel()
	k := drovertest.New(t)
	_, err := k.Queue("receipts").Add(context.Background(), "receipt", json.RawMessage("null"), &drover.JobOptions{JobID: "n"})
	require.NoError(t, err)
	rec := &fatalRecorder{TB: t}
	msg := runRecorded(rec, func() { drovertest.RequireAddedArgs[Receipt](rec, k, "receipts") })
	require.Equal(t, `drovertest: job n ("receipt") in queue "receipts": data does not decode as drovertest_test.Receipt: the data is null`, msg)
	rec = &fatalRecorder{TB: t}
	msg = runRecorded(rec, func() { drovertest.RequireAddedArgs[*Receipt](rec, k, "receipts") })
	require.Equal(t, `drovertest: job n ("receipt") in queue "receipts": data does not decode as *drovertest_test.Receipt: the data is null`, msg)
}
