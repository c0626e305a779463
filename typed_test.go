package drover_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

type Email struct {
	To      string  `json:"to"`
	Subject string  `json:"subject"`
	Retries int     `json:"retries"`
	Weight  float64 `json:"weight"`
}

func (Email) Kind() string { return "email" }

type Invoice struct {
	Number int `json:"number"`
	Lines  []struct {
		Cents int `json:"cents"`
	} `json:"lines"`
}

func (Invoice) Kind() string { return "invoice" }

type unnamed struct{}

func (unnamed) Kind() string { return "" }

func TestTypedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("RoutesByNameAndEncodesOnce", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var k drover.Kinds
		drover.Work(&k, func(_ context.Context, job *drover.Job, e Email) (any, error) {
			return "sent " + e.Subject + " to " + e.To, nil
		})
		drover.Work(&k, func(_ context.Context, job *drover.Job, inv Invoice) (any, error) {
			total := 0
			for _, l := range inv.Lines {
				total += l.Cents
			}
			return total, nil
		})
		k.Default = drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
			return "untyped " + job.Name, nil
		})

		res, err := b.queue.AddArgs(ctx, Email{To: "ada@example.com", Subject: "<b>hi</b>", Weight: 1.0}, &drover.JobOptions{JobID: "e"})
		require.NoError(t, err)
		require.Equal(t, "email", res.Job.Name)
		// The one data encoder: JSON.stringify's bytes (no HTML escaping, 1.0 as 1).
		require.Equal(t, `{"to":"ada@example.com","subject":"<b>hi</b>","retries":0,"weight":1}`, string(res.Job.Data))
		_, err = b.queue.AddArgs(ctx, Invoice{Number: 7, Lines: []struct {
			Cents int `json:"cents"`
		}{{100}, {250}}}, &drover.JobOptions{JobID: "i"})
		require.NoError(t, err)
		_, err = b.queue.Add(ctx, "legacy", map[string]int{"x": 1}, &drover.JobOptions{JobID: "l"})
		require.NoError(t, err)

		b.startWorker(t, k.Process, nil)
		for id, want := range map[string]string{"e": `"sent <b>hi</b> to ada@example.com"`, "i": `350`, "l": `"untyped legacy"`} {
			b.waitState(t, id, drover.StateCompleted)
			job, err := b.queue.GetJob(ctx, id)
			require.NoError(t, err)
			require.JSONEq(t, want, string(job.ReturnValue), id)
		}
	})

	t.Run("WrongPayloadFailsForGoodNamingJobTypeAndField", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var k drover.Kinds
		ran := make(chan struct{}, 4)
		drover.Work(&k, func(context.Context, *drover.Job, Email) (any, error) { ran <- struct{}{}; return nil, nil })
		drover.Work(&k, func(context.Context, *drover.Job, Invoice) (any, error) { ran <- struct{}{}; return nil, nil })
		for id, data := range map[string]string{
			"field":  `{"to":42,"subject":"secret-subject"}`,
			"nested": `{"number":1,"lines":[{"cents":"12"}]}`,
			"whole":  `["not","an","object"]`,
		} {
			name := "email"
			if id == "nested" {
				name = "invoice"
			}
			_, err := b.queue.Add(ctx, name, json.RawMessage(data), &drover.JobOptions{JobID: id, Attempts: 5})
			require.NoError(t, err)
		}
		b.startWorker(t, k.Process, nil)
		for id, want := range map[string]string{
			"field":  `invalid job data: job field ("email"): data does not decode as drover_test.Email: field "to" is a JSON number, want string`,
			"nested": `invalid job data: job nested ("invoice"): data does not decode as drover_test.Invoice: field "lines.cents" is a JSON string, want int`,
			"whole":  `invalid job data: job whole ("email"): data does not decode as drover_test.Email: the data is a JSON array, want drover_test.Email`,
		} {
			b.waitState(t, id, drover.StateFailed)
			job, err := b.queue.GetJob(ctx, id)
			require.NoError(t, err)
			require.Equal(t, want, job.FailedReason, id)
			require.Equal(t, 1, job.AttemptsMade, "unrecoverable: no retry although 5 attempts")
			require.Equal(t, drover.OutcomeFailedUnrecoverable, job.Timeline[0].Outcome)
			require.NotContains(t, job.FailedReason, "secret-subject", "data is never echoed")
		}
		require.Empty(t, ran)
	})

	t.Run("UnknownNameFailsTheAttempt", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var k drover.Kinds
		drover.Work(&k, func(context.Context, *drover.Job, Email) (any, error) { return nil, nil })
		_, err := b.queue.Add(ctx, "sms", nil, &drover.JobOptions{JobID: "u", Attempts: 2})
		require.NoError(t, err)
		b.startWorker(t, k.Process, nil)
		b.waitState(t, "u", drover.StateFailed)
		job, err := b.queue.GetJob(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, `no processor for job u named "sms" in this worker (it knows "email")`, job.FailedReason)
		require.Equal(t, 2, job.AttemptsMade, "retried: a worker that knows the kind may come")
	})

	t.Run("RegistrationMistakesRefusedByNewWorker", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := redistest.Client(t)
		var dup drover.Kinds
		drover.Work(&dup, func(context.Context, *drover.Job, Email) (any, error) { return nil, nil })
		drover.Work(&dup, func(context.Context, *drover.Job, Email) (any, error) { return nil, nil })
		_, err := drover.NewWorker(rdb, "q", &dup, &drover.WorkerOptions{Prefix: prefix})
		require.EqualError(t, err, `drover.Work: kind "email" registered twice (the second time for drover_test.Email)`)

		var empty drover.Kinds
		drover.Work(&empty, func(context.Context, *drover.Job, unnamed) (any, error) { return nil, nil })
		_, err = drover.NewWorker(rdb, "q", &empty, &drover.WorkerOptions{Prefix: prefix})
		require.EqualError(t, err, `drover.Work: drover_test.unnamed.Kind() is empty`)

		_, err = drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		q, _ := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
		_, err = q.AddArgs(ctx, nil, nil)
		require.ErrorIs(t, err, drover.ErrInvalidData)
		_, err = q.AddArgs(ctx, (*Email)(nil), nil)
		require.ErrorIs(t, err, drover.ErrInvalidData)
		require.ErrorContains(t, err, "AddArgs needs args, got a nil *drover_test.Email")

		var iface drover.Kinds
		drover.Work(&iface, func(context.Context, *drover.Job, drover.JobArgs) (any, error) { return nil, nil })
		_, err = drover.NewWorker(rdb, "q", &iface, &drover.WorkerOptions{Prefix: prefix})
		require.ErrorContains(t, err, `drover.Work: drover.JobArgs.Kind() panicked on a zero value`)
		n, err := rdb.Exists(ctx, prefix+":q:id").Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing was added")
	})

	// Kinds handed to NewWorker as a method value (k.Process) hides its
	// registration mistakes from NewWorker: the worker used to run the
	// jobs with whatever did register (here the first function of a kind
	// registered twice) and nobody heard of the mistake. Every attempt now
	// fails with it (retried: a fixed deploy takes the job).
	t.Run("RegistrationMistakeBehindMethodValue", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var k drover.Kinds
		drover.Work(&k, func(context.Context, *drover.Job, Email) (any, error) { return "first", nil })
		drover.Work(&k, func(context.Context, *drover.Job, Email) (any, error) { return "second", nil })
		_, err := b.queue.AddArgs(ctx, Email{To: "ada@example.com"}, &drover.JobOptions{JobID: "m", Attempts: 2})
		require.NoError(t, err)
		b.startWorker(t, k.Process, nil)
		b.waitState(t, "m", drover.StateFailed)
		job, err := b.queue.GetJob(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, `job m ("email") not run: drover.Work: kind "email" registered twice (the second time for drover_test.Email)`, job.FailedReason)
		require.Equal(t, 2, job.AttemptsMade)
	})

	// A pointer type as T, its Kind declared on the value receiver: Work
	// used to call Kind on a nil pointer and panic ("value method
	// drover_test.Email.Kind called using nil *Email pointer").
	t.Run("PointerArgs", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var k drover.Kinds
		drover.Work(&k, func(_ context.Context, _ *drover.Job, e *Email) (any, error) {
			return "sent to " + e.To, nil
		})
		_, err := b.queue.AddArgs(ctx, &Email{To: "ada@example.com"}, &drover.JobOptions{JobID: "p"})
		require.NoError(t, err)
		b.startWorker(t, k.Process, nil)
		b.waitState(t, "p", drover.StateCompleted)
		job, err := b.queue.GetJob(ctx, "p")
		require.NoError(t, err)
		require.Equal(t, "email", job.Name)
		require.JSONEq(t, `"sent to ada@example.com"`, string(job.ReturnValue))
	})
}

// BenchmarkDecode compares what a processor pays to get its data: an
// untyped processor calling job.DecodeData itself, and a typed one behind
// Kinds (route by name + decode into T). The difference is the cost of the
// typed API on the processing hot path.
func BenchmarkDecode(b *testing.B) {
	data := json.RawMessage(`{"to":"ada@example.com","subject":"Your invoice 2026-117","retries":2,"weight":0.5}`)
	job := &drover.Job{ID: "1", Name: "email", Data: data}
	ctx := context.Background()
	var k drover.Kinds
	drover.Work(&k, func(_ context.Context, _ *drover.Job, e Email) (any, error) { return e.Retries, nil })
	drover.Work(&k, func(context.Context, *drover.Job, Invoice) (any, error) { return nil, nil })
	untyped := drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		var e Email
		if err := job.DecodeData(&e); err != nil {
			return nil, drover.Unrecoverable(err)
		}
		return e.Retries, nil
	})
	for _, c := range []struct {
		name string
		proc drover.Processor
	}{{"untyped", untyped}, {"typed", &k}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.proc.Process(ctx, job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAddArgsEmptyKind: a JobArgs whose Kind is empty is refused, naming
// the type, and nothing is stored. AddArgs used to store a job named "",
// which no Kinds can ever route (Work refuses an empty kind), so it failed
// every attempt with "no processor".
func TestAddArgsEmptyKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	res, err := b.queue.AddArgs(ctx, unnamed{}, nil)
	require.ErrorIs(t, err, drover.ErrInvalidData)
	require.EqualError(t, err, `add to queue "`+b.queue.Name()+`": invalid job data: drover_test.unnamed.Kind() is empty: a typed job needs a kind, its name, which Kinds routes it by`)
	require.Nil(t, res)
	counts, err := b.queue.GetJobCounts(ctx)
	require.NoError(t, err)
	for state, n := range counts {
		require.Zero(t, n, state)
	}
	_, err = drover.ArgsOptions(unnamed{}, nil)
	require.ErrorIs(t, err, drover.ErrInvalidData)
}

// TestKindsNil: a nil *Kinds, or a Kinds whose Default is a nil
// ProcessorFunc, is refused by NewWorker with an error naming it, and
// Process called directly fails instead of panicking. NewWorker used to
// panic (nil pointer dereference) on the nil *Kinds, and every job of no
// registered kind panicked in the processor with the nil Default.
func TestKindsNil(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	job := &drover.Job{ID: "1", Name: "untyped"}

	var nilKinds *drover.Kinds
	require.NotPanics(t, func() {
		_, err := drover.NewWorker(rdb, "q", nilKinds, &drover.WorkerOptions{Prefix: prefix})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.EqualError(t, err, "invalid option: the Processor is a nil *drover.Kinds (declare a drover.Kinds and pass its address)")
	})
	require.NotPanics(t, func() {
		_, err := nilKinds.Process(ctx, job)
		require.ErrorIs(t, err, drover.ErrInvalidOption)
	})

	k := drover.Kinds{Default: drover.ProcessorFunc(nil)}
	drover.Work(&k, func(context.Context, *drover.Job, Email) (any, error) { return nil, nil })
	_, err := drover.NewWorker(rdb, "q", &k, &drover.WorkerOptions{Prefix: prefix})
	require.EqualError(t, err, "invalid option: Kinds.Default is a nil ProcessorFunc (leave Default nil for none)")
	require.NotPanics(t, func() {
		_, err := k.Process(ctx, job)
		require.EqualError(t, err, `job 1 ("untyped") not run: invalid option: Kinds.Default is a nil ProcessorFunc (leave Default nil for none)`)
	})
}

// TestWorkPointerNullData: a job of a pointer kind whose data is JSON null
// (Node's queue.add(name, null)) fails as unrecoverable, naming the job
// and the type; the function used to get a nil pointer, and panicked on
// its first field.
func TestWorkPointerNullData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	var k drover.Kinds
	drover.Work(&k, func(_ context.Context, _ *drover.Job, e *Email) (any, error) {
		return e.To, nil
	})
	_, err := b.queue.Add(ctx, "email", json.RawMessage("null"), &drover.JobOptions{JobID: "n", Attempts: 3})
	require.NoError(t, err)
	b.startWorker(t, k.Process, nil)
	b.waitState(t, "n", drover.StateFailed)
	job, err := b.queue.GetJob(ctx, "n")
	require.NoError(t, err)
	require.Equal(t, `invalid job data: job n ("email"): data does not decode as *drover_test.Email: the data is null`, job.FailedReason)
	require.Equal(t, 1, job.AttemptsMade)
}

// TestWorkValueNullData: a job of a value kind whose data is JSON null
// (Node's queue.add(name, null)) fails as unrecoverable, as a pointer kind's
// does; fn used to run with T's zero value (an Email to nobody), so a job
// added with no data at all passed for one whose fields were all empty.
// Data with surrounding white space is still null.
func TestWorkValueNullData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	var k drover.Kinds
	var ran atomic.Int32
	drover.Work(&k, func(_ context.Context, _ *drover.Job, e Email) (any, error) {
		ran.Add(1)
		return e.To, nil
	})
	for id, data := range map[string]string{"n": "null", "s": " null\n"} {
		_, err := b.queue.Add(ctx, "email", json.RawMessage(data), &drover.JobOptions{JobID: id, Attempts: 3})
		require.NoError(t, err)
	}
	b.startWorker(t, k.Process, nil)
	for _, id := range []string{"n", "s"} {
		b.waitState(t, id, drover.StateFailed)
		job, err := b.queue.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, `invalid job data: job `+id+` ("email"): data does not decode as drover_test.Email: the data is null`, job.FailedReason)
		require.Equal(t, 1, job.AttemptsMade)
	}
	require.Zero(t, ran.Load(), "fn never runs on null data")
}

// TestArgsOptionsNil: ArgsOptions of nil args, or of a nil pointer, is an
// error, not a panic (checkKind, added for the empty Kind, called Kind on
// them).
func TestArgsOptionsNil(t *testing.T) {
	t.Parallel()
	require.NotPanics(t, func() {
		_, err := drover.ArgsOptions(nil, nil)
		require.EqualError(t, err, "invalid job data: a typed job needs args, got nil")
		_, err = drover.ArgsOptions((*Email)(nil), nil)
		require.EqualError(t, err, "invalid job data: a typed job needs args, got a nil *drover_test.Email")
	})
}
