package drover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// trail is a concurrency-safe list of what middleware did, in order.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trail) add(format string, args ...any) {
	tr.mu.Lock()
	tr.steps = append(tr.steps, fmt.Sprintf(format, args...))
	tr.mu.Unlock()
}

func (tr *trail) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.steps...)
}

func TestAddMiddleware(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)

	t.Run("OrderChangesAndResults", func(t *testing.T) {
		t.Parallel()
		tr := &trail{}
		named := func(name string) drover.AddMiddleware {
			return func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
				tr.add("%s before %d", name, len(jobs))
				res, err := next(ctx, jobs)
				tr.add("%s after %d %v", name, len(res), err)
				return res, err
			}
		}
		// The inner one stamps every job: a priority (a changed copy of the
		// options) and a field in the data.
		stamp := func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
			for i := range jobs {
				o := drover.JobOptions{}
				if jobs[i].Opts != nil {
					o = *jobs[i].Opts
				}
				o.Priority = 7
				jobs[i].Opts = &o
				jobs[i].Data = map[string]any{"wrapped": jobs[i].Data}
			}
			return next(ctx, jobs)
		}
		q, err := drover.NewQueue(rdb, "order", &drover.QueueOptions{Prefix: prefix,
			AddMiddleware: []drover.AddMiddleware{named("outer"), named("inner"), stamp}})
		require.NoError(t, err)

		mine := &drover.JobOptions{JobID: "one"}
		res, err := q.Add(ctx, "a", map[string]int{"n": 1}, mine)
		require.NoError(t, err)
		require.Equal(t, "one", res.Job.ID)
		require.Equal(t, 7, res.Job.Priority)
		require.Equal(t, 0, mine.Priority, "the caller's options are not written to")
		got, err := q.GetJob(ctx, "one")
		require.NoError(t, err)
		require.JSONEq(t, `{"wrapped":{"n":1}}`, string(got.Data))
		require.Equal(t, 7, got.Priority)

		bulk := []drover.BulkJob{{Name: "b", Data: 1}, {Name: "c", Data: 2}}
		out, err := q.AddBulk(ctx, bulk)
		require.NoError(t, err)
		require.Len(t, out, 2)
		require.Equal(t, 1, bulk[0].Data, "the caller's slice is not written to")
		require.Equal(t, []string{
			"outer before 1", "inner before 1", "inner after 1 <nil>", "outer after 1 <nil>",
			"outer before 2", "inner before 2", "inner after 2 <nil>", "outer after 2 <nil>",
		}, tr.list())
	})

	t.Run("SeesErrorsAndMayRefuse", func(t *testing.T) {
		t.Parallel()
		var seen error
		observe := func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
			res, err := next(ctx, jobs)
			seen = err
			return res, err
		}
		refuse := func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
			if jobs[0].Name == "forbidden" {
				return nil, errors.New("not today")
			}
			return next(ctx, jobs)
		}
		q, err := drover.NewQueue(rdb, "refuse", &drover.QueueOptions{Prefix: prefix,
			AddMiddleware: []drover.AddMiddleware{observe, refuse}})
		require.NoError(t, err)
		_, err = q.Add(ctx, "bad", nil, &drover.JobOptions{Delay: -time.Second})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorIs(t, seen, drover.ErrInvalidOption, "validation runs inside the middleware")
		_, err = q.Add(ctx, "forbidden", nil, nil)
		require.EqualError(t, err, "not today")
		n, err := q.GetJobCounts(ctx, drover.StateWaiting)
		require.NoError(t, err)
		require.Zero(t, n[drover.StateWaiting])
	})

	t.Run("WrongResultCountIsAnError", func(t *testing.T) {
		t.Parallel()
		drop := func(context.Context, []drover.BulkJob, drover.AddFunc) ([]*drover.AddResult, error) {
			return nil, nil
		}
		q, err := drover.NewQueue(rdb, "drop", &drover.QueueOptions{Prefix: prefix, AddMiddleware: []drover.AddMiddleware{drop}})
		require.NoError(t, err)
		_, err = q.Add(ctx, "x", nil, nil)
		require.ErrorContains(t, err, "AddMiddleware returned 0 results for 1 job")
	})

	// BulkWrongResultsAreAnError: AddBulk holds its middleware to what Add
	// does, one non-nil result per job it was given; it used to hand the
	// caller whatever came back (results[i] no longer jobs[i]'s, or nil).
	t.Run("BulkWrongResultsAreAnError", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name  string
			shape func([]*drover.AddResult) []*drover.AddResult
			want  string
		}{
			{"Drop", func(r []*drover.AddResult) []*drover.AddResult { return r[1:] },
				"add 3 jobs to queue \"bulk-Drop\": AddMiddleware returned 2 results for 3 jobs"},
			{"Extra", func(r []*drover.AddResult) []*drover.AddResult { return append(r, r[0]) },
				"add 3 jobs to queue \"bulk-Extra\": AddMiddleware returned 4 results for 3 jobs"},
			{"Nil", func(r []*drover.AddResult) []*drover.AddResult { r[1] = nil; return r },
				"add 3 jobs to queue \"bulk-Nil\": AddMiddleware returned a nil result for job 1 of 3"},
			{"NoneForOne", func([]*drover.AddResult) []*drover.AddResult { return nil },
				"add 1 job to queue \"bulk-NoneForOne\": AddMiddleware returned 0 results for 1 job"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				reshape := func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
					res, err := next(ctx, jobs)
					if err != nil {
						return res, err
					}
					return c.shape(res), nil
				}
				q, err := drover.NewQueue(rdb, "bulk-"+c.name, &drover.QueueOptions{Prefix: prefix,
					AddMiddleware: []drover.AddMiddleware{reshape}})
				require.NoError(t, err)
				jobs := []drover.BulkJob{{Name: "a"}, {Name: "b"}, {Name: "c"}}
				if c.name == "NoneForOne" {
					jobs = jobs[:1]
				}
				res, err := q.AddBulk(ctx, jobs)
				require.EqualError(t, err, c.want)
				require.Nil(t, res)
			})
		}
		q, err := drover.NewQueue(rdb, "bulk-empty", &drover.QueueOptions{Prefix: prefix,
			AddMiddleware: []drover.AddMiddleware{func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
				return next(ctx, jobs)
			}}})
		require.NoError(t, err)
		res, err := q.AddBulk(ctx, nil)
		require.NoError(t, err, "no jobs, no results")
		require.Empty(t, res)
	})

	t.Run("NilRefused", func(t *testing.T) {
		t.Parallel()
		_, err := drover.NewQueue(rdb, "nil", &drover.QueueOptions{Prefix: prefix, AddMiddleware: []drover.AddMiddleware{nil}})
		require.ErrorIs(t, err, drover.ErrInvalidOption)
		require.ErrorContains(t, err, "QueueOptions.AddMiddleware[0] is nil")
	})
}

// TestFlowMiddleware: FlowProducerOptions.Middleware runs around Add and
// AddBulk, the first one outermost, before the trees are validated; it may
// change a copy of the nodes (the caller's slices and options stay as they
// were), see the error and refuse; a count of trees that does not match is
// an error, and a nil middleware is refused by NewFlowProducer.
func TestFlowMiddleware(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	tr := &trail{}
	named := func(name string) drover.FlowMiddleware {
		return func(ctx context.Context, flows []drover.FlowJob, next drover.AddFlowFunc) ([]*drover.JobNode, error) {
			tr.add("%s before %d", name, len(flows))
			trees, err := next(ctx, flows)
			tr.add("%s after %d %v", name, len(trees), err)
			return trees, err
		}
	}
	// stamp gives every child a priority, through copies.
	stamp := func(ctx context.Context, flows []drover.FlowJob, next drover.AddFlowFunc) ([]*drover.JobNode, error) {
		for i := range flows {
			children := slices.Clone(flows[i].Children)
			for c := range children {
				children[c].Opts = &drover.JobOptions{Priority: 7}
			}
			flows[i].Children = children
		}
		return next(ctx, flows)
	}
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix,
		Middleware: []drover.FlowMiddleware{named("outer"), named("inner"), stamp}})
	require.NoError(t, err)

	flow := drover.FlowJob{Name: "parent", QueueName: "flowmw", Children: []drover.FlowJob{{Name: "child", QueueName: "flowmw"}}}
	tree, err := fp.Add(ctx, flow)
	require.NoError(t, err)
	require.Equal(t, 7, tree.Children[0].Job.Priority)
	require.Nil(t, flow.Children[0].Opts, "the caller's tree is not written to")
	_, err = fp.AddBulk(ctx, []drover.FlowJob{flow, flow})
	require.NoError(t, err)
	_, err = fp.Add(ctx, drover.FlowJob{Name: "bad", QueueName: "flow:mw"})
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.Equal(t, []string{
		"outer before 1", "inner before 1", "inner after 1 <nil>", "outer after 1 <nil>",
		"outer before 2", "inner before 2", "inner after 2 <nil>", "outer after 2 <nil>",
		"outer before 1", "inner before 1", "inner after 0 " + err.Error(), "outer after 0 " + err.Error(),
	}, tr.list(), "validation runs inside the middleware")

	drop, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix, Middleware: []drover.FlowMiddleware{
		func(context.Context, []drover.FlowJob, drover.AddFlowFunc) ([]*drover.JobNode, error) {
			return nil, nil
		},
	}})
	require.NoError(t, err)
	_, err = drop.Add(ctx, flow)
	require.ErrorContains(t, err, "FlowMiddleware returned 0 trees for 1 flow")
	nilTree, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix, Middleware: []drover.FlowMiddleware{
		func(context.Context, []drover.FlowJob, drover.AddFlowFunc) ([]*drover.JobNode, error) {
			return []*drover.JobNode{nil}, nil
		},
	}})
	require.NoError(t, err)
	tree, err = nilTree.Add(ctx, flow)
	require.EqualError(t, err, "add flow: FlowMiddleware returned a nil tree for flow 0 of 1", "Add used to return a nil tree and no error")
	require.Nil(t, tree)

	_, err = drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Middleware: []drover.FlowMiddleware{nil}})
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.ErrorContains(t, err, "FlowProducerOptions.Middleware[0] is nil")
}

type ctxKey string

func TestWorkerMiddleware(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// layer returns a middleware that puts its name in the context, records
	// its steps, and checks that Finished gets back the context its Process
	// passed on.
	layer := func(tr *trail, name string) drover.WorkerMiddleware {
		return drover.WorkerMiddleware{
			Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (any, error) {
				tr.add("%s process %s", name, job.ID)
				v, err := next(context.WithValue(ctx, ctxKey(name), name+"-"+job.ID), job)
				tr.add("%s returned %s %v", name, job.ID, err)
				return v, err
			},
			Finished: func(ctx context.Context, job *drover.Job, f drover.Finish) {
				tr.add("%s finished %s %s ctx=%v", name, job.ID, f.Outcome, ctx.Value(ctxKey(name)))
			},
		}
	}

	t.Run("OrderContextAndOutcome", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		tr := &trail{}
		hooks := &drover.WorkerHooks{
			JobStarted: func(job *drover.Job) { tr.add("hook started %s", job.ID) },
			JobFinished: func(job *drover.Job, o drover.Outcome, _ time.Duration, _ error) {
				tr.add("hook finished %s %s", job.ID, o)
			},
		}
		_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "ok"})
		require.NoError(t, err)
		done := make(chan struct{})
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			tr.add("processor sees %v %v", ctx.Value(ctxKey("outer")), ctx.Value(ctxKey("inner")))
			return "v", nil
		}, &drover.WorkerOptions{Hooks: hooks, Middleware: []drover.WorkerMiddleware{
			layer(tr, "outer"), layer(tr, "inner"),
			{Finished: func(context.Context, *drover.Job, drover.Finish) { close(done) }},
		}})
		<-done
		testkit.WaitFor(t, 5*time.Second, "hook finished", func() bool { return len(tr.list()) == 9 })
		require.Equal(t, []string{
			"hook started ok",
			"outer process ok",
			"inner process ok",
			"processor sees outer-ok inner-ok",
			"inner returned ok <nil>",
			"outer returned ok <nil>",
			"inner finished ok completed ctx=inner-ok",
			"outer finished ok completed ctx=outer-ok",
			"hook finished ok completed",
		}, tr.list())
	})

	t.Run("ChangesTheErrorAndSeesTheOutcome", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		// A middleware that turns a panic into an unrecoverable failure: the
		// job has attempts left, but fails for good.
		strict := drover.WorkerMiddleware{Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (v any, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = drover.Unrecoverable(fmt.Errorf("panic: %v", p))
				}
			}()
			return next(ctx, job)
		}}
		var mu sync.Mutex
		var finishes []drover.Finish
		watch := drover.WorkerMiddleware{Finished: func(_ context.Context, _ *drover.Job, f drover.Finish) {
			mu.Lock()
			finishes = append(finishes, f)
			mu.Unlock()
		}}
		_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "boom", Attempts: 5})
		require.NoError(t, err)
		b.startWorker(t, func(context.Context, *drover.Job) (any, error) { panic("kaput") },
			&drover.WorkerOptions{Middleware: []drover.WorkerMiddleware{watch, strict}})
		b.waitState(t, "boom", drover.StateFailed)
		testkit.WaitFor(t, 5*time.Second, "finished", func() bool { mu.Lock(); defer mu.Unlock(); return len(finishes) == 1 })
		require.Equal(t, drover.OutcomeFailedUnrecoverable, finishes[0].Outcome)
		require.ErrorContains(t, finishes[0].Err, "panic: kaput")
		job, err := b.queue.GetJob(ctx, "boom")
		require.NoError(t, err)
		require.Equal(t, 1, job.AttemptsMade)
		require.Contains(t, job.FailedReason, "kaput")
	})

	// FailureTelemetry is asked for each failed attempt (not a completion
	// nor a postponement), with the outcome about to be written and the
	// context Process passed on; the outermost non-empty answer is stored
	// in the job hash field tm, none for a job that omits its context, and
	// a panicking one stores nothing and harms nothing.
	t.Run("FailureTelemetry", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		tr := &trail{}
		tel := func(name, md string) drover.WorkerMiddleware {
			m := layer(tr, name)
			m.Finished = nil
			m.FailureTelemetry = func(ctx context.Context, job *drover.Job, o drover.Outcome) string {
				tr.add("%s telemetry %s %s ctx=%v", name, job.ID, o, ctx.Value(ctxKey(name)))
				if md == "panic" {
					panic("tracing broke")
				}
				return md
			}
			return m
		}
		for _, id := range []string{"retried", "omitted", "done", "later"} {
			o := &drover.JobOptions{JobID: id, Attempts: 2, Backoff: &drover.Backoff{Type: "fixed", Delay: 20 * time.Millisecond}}
			if id == "omitted" {
				o.Attempts, o.Telemetry = 1, &drover.Telemetry{OmitContext: true}
			}
			_, err := b.queue.Add(ctx, "x", nil, o)
			require.NoError(t, err)
		}
		b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			switch {
			case job.ID == "done":
				return nil, nil
			case job.ID == "later" && job.AttemptsStarted == 1:
				return nil, drover.Delay(20 * time.Millisecond)
			case job.ID == "later":
				return nil, nil
			}
			return nil, errors.New("boom")
		}, &drover.WorkerOptions{Concurrency: 1, Middleware: []drover.WorkerMiddleware{
			tel("outer", ""), tel("middle", "panic"), tel("inner", `{"traceparent":"i"}`), tel("innermost", `{"traceparent":"x"}`),
		}})
		for _, id := range []string{"retried", "omitted"} {
			b.waitState(t, id, drover.StateFailed)
		}
		for _, id := range []string{"done", "later"} {
			b.waitState(t, id, drover.StateCompleted)
		}
		for id, want := range map[string]string{"retried": `{"traceparent":"i"}`, "omitted": "", "done": "", "later": ""} {
			got, err := b.rdb.HGet(ctx, b.prefix+":"+b.name+":"+id, "tm").Result()
			if want == "" {
				require.ErrorIs(t, err, redis.Nil, id)
				continue
			}
			require.NoError(t, err, id)
			require.Equal(t, want, got, id)
		}
		var asked []string
		for _, s := range tr.list() {
			if strings.Contains(s, " telemetry ") {
				asked = append(asked, s)
			}
		}
		require.Equal(t, []string{
			"outer telemetry retried retry-delayed ctx=outer-retried",
			"middle telemetry retried retry-delayed ctx=middle-retried",
			"inner telemetry retried retry-delayed ctx=inner-retried",
			"outer telemetry retried retries-exhausted ctx=outer-retried",
			"middle telemetry retried retries-exhausted ctx=middle-retried",
			"inner telemetry retried retries-exhausted ctx=inner-retried",
		}, asked, "asked for failures only, outermost first, until one answers; never for an omitted context")
	})

	t.Run("ShortCircuitSkipsInnerFinished", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		tr := &trail{}
		gate := drover.WorkerMiddleware{Process: func(context.Context, *drover.Job, drover.ProcessorFunc) (any, error) {
			return "skipped", nil
		}}
		_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "s"})
		require.NoError(t, err)
		ran := false
		b.startWorker(t, func(context.Context, *drover.Job) (any, error) { ran = true; return nil, nil },
			&drover.WorkerOptions{Middleware: []drover.WorkerMiddleware{layer(tr, "outer"), gate, layer(tr, "inner")}})
		b.waitState(t, "s", drover.StateCompleted)
		testkit.WaitFor(t, 5*time.Second, "finished", func() bool { return len(tr.list()) == 3 })
		require.Equal(t, []string{"outer process s", "outer returned s <nil>", "outer finished s completed ctx=outer-s"}, tr.list())
		require.False(t, ran)
		job, err := b.queue.GetJob(ctx, "s")
		require.NoError(t, err)
		require.JSONEq(t, `"skipped"`, string(job.ReturnValue))
	})

	t.Run("JobThatCannotRunIsFinishedNotProcessed", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		tr := &trail{}
		_, err := b.queue.Add(ctx, "x", nil, &drover.JobOptions{JobID: "bad"})
		require.NoError(t, err)
		require.NoError(t, b.rdb.HSet(ctx, keys.New(b.prefix, b.name).Job("bad"), "data", "{not json").Err())
		b.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, nil },
			&drover.WorkerOptions{Middleware: []drover.WorkerMiddleware{layer(tr, "m")}})
		b.waitState(t, "bad", drover.StateFailed)
		testkit.WaitFor(t, 5*time.Second, "finished", func() bool { return len(tr.list()) == 1 })
		require.Equal(t, []string{"m finished bad failed-unrecoverable ctx=<nil>"}, tr.list())
	})
}

// BenchmarkMiddlewareOverhead measures what a worker middleware chain adds
// to the processing hot path: the same jobs processed with no middleware
// and with three (one Process, one Finished, one both). Compare ns/op of
// the sub-benchmarks.
func BenchmarkMiddlewareOverhead(b *testing.B) {
	mw := []drover.WorkerMiddleware{
		{Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (any, error) {
			return next(context.WithValue(ctx, ctxKey("k"), 1), job)
		}},
		{Finished: func(context.Context, *drover.Job, drover.Finish) {}},
		{
			Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (any, error) {
				start := time.Now()
				v, err := next(ctx, job)
				_ = time.Since(start)
				return v, err
			},
			Finished: func(context.Context, *drover.Job, drover.Finish) {},
		},
	}
	for _, c := range []struct {
		name string
		mw   []drover.WorkerMiddleware
	}{{"none", nil}, {"three", mw}} {
		b.Run(c.name, func(b *testing.B) {
			benchProcess(b, c.mw)
		})
	}
}

// benchProcess adds b.N jobs and times a worker (concurrency 100) that
// processes them with the given middleware.
func benchProcess(b *testing.B, mw []drover.WorkerMiddleware) {
	tb := setupQueueTB(b)
	ctx := context.Background()
	jobs := make([]drover.BulkJob, b.N)
	for i := range jobs {
		jobs[i] = drover.BulkJob{Name: "bench", Data: json.RawMessage(`{"to":"a@example.com","n":1}`)}
	}
	_, err := tb.queue.AddBulk(ctx, jobs)
	require.NoError(b, err)
	var done sync.WaitGroup
	done.Add(b.N)
	// The processor counts, so that the baseline has no middleware at all.
	proc := drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { done.Done(); return nil, nil })
	b.ResetTimer()
	w, err := drover.NewWorker(tb.rdb, tb.name, proc, &drover.WorkerOptions{Prefix: tb.prefix, Concurrency: 100, Middleware: mw})
	require.NoError(b, err)
	require.NoError(b, w.Start(ctx))
	done.Wait()
	testkit.WaitFor(b, time.Minute, "all completed", func() bool {
		n, err := tb.queue.GetJobCounts(ctx, drover.StateCompleted)
		return err == nil && n[drover.StateCompleted] == int64(b.N)
	})
	b.StopTimer()
	require.NoError(b, w.Close(ctx))
}
