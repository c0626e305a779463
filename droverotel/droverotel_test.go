package droverotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/droverotel"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// rig is a queue and a worker of it, both instrumented by one Middleware
// recording spans in memory.
type rig struct {
	rdb    redis.UniversalClient
	prefix string
	q      *drover.Queue
	mw     *droverotel.Middleware
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T) *rig {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mw, err := droverotel.New(&droverotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix,
		AddMiddleware: []drover.AddMiddleware{mw.AddMiddleware("mail")}})
	require.NoError(t, err)
	return &rig{rdb: rdb, prefix: prefix, q: q, mw: mw, spans: spans, tp: tp}
}

func (r *rig) startWorker(t *testing.T, proc drover.ProcessorFunc) {
	t.Helper()
	w, err := drover.NewWorker(r.rdb, "mail", proc, &drover.WorkerOptions{Prefix: r.prefix,
		Middleware: []drover.WorkerMiddleware{r.mw.WorkerMiddleware()}})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
	})
}

// span returns the one ended span named name.
func (r *rig) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

func (r *rig) waitSpans(t *testing.T, n int) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "spans to end", func() bool { return len(r.spans.GetSpans()) >= n })
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestTraceAddToProcess: a caller's span → add (PRODUCER) → process
// (CONSUMER) → an add made by the processor, all one trace, each span the
// child of the one before, as BullMQ's telemetry links them; the job stores
// the add span's context as BullMQ's opts.tm.
func TestTraceAddToProcess(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	var mu sync.Mutex
	var inProc trace.SpanContext
	r.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "welcome" {
			mu.Lock()
			inProc = trace.SpanContextFromContext(ctx)
			mu.Unlock()
			_, err := r.q.Add(ctx, "receipt", nil, nil)
			return nil, err
		}
		return nil, nil
	})
	ctx, root := r.tp.Tracer("test").Start(ctx, "signup")
	res, err := r.q.Add(ctx, "welcome", map[string]string{"to": "ada"}, nil)
	require.NoError(t, err)
	root.End()
	r.waitSpans(t, 5) // signup, add welcome, process, add receipt, process

	add := r.span(t, "add mail.welcome")
	require.Equal(t, trace.SpanKindProducer, add.SpanKind)
	require.Equal(t, root.SpanContext().TraceID(), add.SpanContext.TraceID())
	require.Equal(t, root.SpanContext().SpanID(), add.Parent.SpanID())
	require.Equal(t, res.Job.ID, attr(add, "bullmq.job.id"))
	require.Equal(t, "add", attr(add, "bullmq.queue.operation"))

	raw, err := r.rdb.HGet(ctx, r.prefix+":mail:"+res.Job.ID, "opts").Result()
	require.NoError(t, err)
	var opts struct{ TM string }
	require.NoError(t, json.Unmarshal([]byte(raw), &opts))
	var carrier map[string]string
	require.NoError(t, json.Unmarshal([]byte(opts.TM), &carrier), "opts.tm is a JSON object: %s", raw)
	require.Equal(t, "00-"+add.SpanContext.TraceID().String()+"-"+add.SpanContext.SpanID().String()+"-01", carrier["traceparent"])

	var process, childAdd tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		switch {
		case s.Name == "process mail" && attr(s, "bullmq.job.name") == "welcome":
			process = s
		case s.Name == "add mail.receipt":
			childAdd = s
		}
	}
	require.Equal(t, trace.SpanKindConsumer, process.SpanKind)
	require.Equal(t, add.SpanContext.TraceID(), process.SpanContext.TraceID())
	require.Equal(t, add.SpanContext.SpanID(), process.Parent.SpanID(), "process is the add span's child")
	require.Equal(t, "completed", attr(process, "drover.outcome"))
	require.Equal(t, "1", attr(process, "bullmq.job.attempts.made"))
	mu.Lock()
	require.Equal(t, process.SpanContext.SpanID(), inProc.SpanID(), "the processor runs in the process span")
	mu.Unlock()
	require.Equal(t, process.SpanContext.SpanID(), childAdd.Parent.SpanID(), "a job added by the processor joins the trace")
	require.Equal(t, add.SpanContext.TraceID(), childAdd.SpanContext.TraceID())
}

// TestTraceFailedAttempt: a failing attempt's span carries the error and
// the outcome; the retry is a second process span of the same trace.
func TestTraceFailedAttempt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, errors.New("smtp down") })
	res, err := r.q.Add(context.Background(), "welcome", nil, &drover.JobOptions{Attempts: 2})
	require.NoError(t, err)
	// add, two process spans, and the retry and fail spans of the failures.
	r.waitSpans(t, 5)
	add := r.span(t, "add mail.welcome")
	var outcomes []string
	for _, s := range r.spans.GetSpans() {
		if s.Name != "process mail" {
			continue
		}
		require.Equal(t, add.SpanContext.SpanID(), s.Parent.SpanID(), "every attempt continues the add's trace")
		require.Equal(t, "Error", s.Status.Code.String())
		require.Equal(t, "smtp down", s.Status.Description)
		require.Equal(t, res.Job.ID, attr(s, "bullmq.job.id"))
		outcomes = append(outcomes, attr(s, "drover.outcome")+"/"+attr(s, "bullmq.job.attempts.made"))
		names := make([]string, len(s.Events))
		for i, e := range s.Events {
			names[i] = e.Name
		}
		require.Contains(t, names, "job failed")
	}
	require.Equal(t, []string{"retried/1", "retries-exhausted/2"}, outcomes)
}

// TestTraceFailureContext: each failed attempt makes an INTERNAL span under
// its process span, "retry mail" (retried at once) or "fail mail" (failed
// for good), and the job hash field tm holds the last one's context, as
// BullMQ's worker writes it. A job that fails without running (a deferred
// failure) gets its fail span in the add's trace.
func TestTraceFailureContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmOf := func(t *testing.T, r *rig, id string) string {
		t.Helper()
		tm, err := r.rdb.HGet(ctx, r.prefix+":mail:"+id, "tm").Result()
		require.NoError(t, err)
		return tm
	}
	t.Run("RetryThenFail", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, errors.New("smtp down") })
		res, err := r.q.Add(ctx, "welcome", nil, &drover.JobOptions{Attempts: 2})
		require.NoError(t, err)
		r.waitSpans(t, 5)
		retry, fail := r.span(t, "retry mail"), r.span(t, "fail mail")
		process := map[trace.SpanID]bool{}
		for _, s := range r.spans.GetSpans() {
			if s.Name == "process mail" {
				process[s.SpanContext.SpanID()] = true
			}
		}
		for _, s := range []tracetest.SpanStub{retry, fail} {
			require.Equal(t, trace.SpanKindInternal, s.SpanKind)
			require.True(t, process[s.Parent.SpanID()], "%s is a process span's child", s.Name)
			require.Equal(t, res.Job.ID, attr(s, "bullmq.job.id"))
			require.Equal(t, "welcome", attr(s, "bullmq.job.name"))
		}
		require.Equal(t, "retry", attr(retry, "bullmq.queue.operation"))
		require.Equal(t, `{"traceparent":"00-`+fail.SpanContext.TraceID().String()+"-"+fail.SpanContext.SpanID().String()+`-01"}`,
			tmOf(t, r, res.Job.ID))
	})
	t.Run("FailedWithoutRunning", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		res, err := r.q.Add(ctx, "welcome", nil, &drover.JobOptions{Attempts: 3})
		require.NoError(t, err)
		require.NoError(t, r.rdb.HSet(ctx, r.prefix+":mail:"+res.Job.ID, "defa", "child failed").Err())
		r.startWorker(t, func(context.Context, *drover.Job) (any, error) { return nil, nil })
		r.waitSpans(t, 3)
		add, fail := r.span(t, "add mail.welcome"), r.span(t, "fail mail")
		require.Equal(t, add.SpanContext.SpanID(), fail.Parent.SpanID())
		require.Contains(t, tmOf(t, r, res.Job.ID), fail.SpanContext.SpanID().String())
	})
}

// TestAddKeepsCallersContext: a job that already carries a context (say,
// relayed from an outbox) keeps it, one with OmitContext gets none, and the
// caller's options are not written.
func TestAddKeepsCallersContext(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	const relayed = `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	mine := &drover.JobOptions{Telemetry: &drover.Telemetry{Metadata: relayed}}
	omit := &drover.JobOptions{Telemetry: &drover.Telemetry{OmitContext: true}}
	plain := &drover.JobOptions{Attempts: 3}
	res, err := r.q.AddBulk(ctx, []drover.BulkJob{{Name: "a", Opts: mine}, {Name: "b", Opts: omit}, {Name: "c", Opts: plain}})
	require.NoError(t, err)
	require.Nil(t, plain.Telemetry, "the caller's options are not written")
	bulk := r.span(t, "addBulk mail")
	require.Equal(t, "3", attr(bulk, "bullmq.job.bulk.count"))
	got := func(i int) *drover.Telemetry {
		job, err := r.q.GetJob(ctx, res[i].Job.ID)
		require.NoError(t, err)
		return job.Opts.Telemetry
	}
	require.Equal(t, relayed, got(0).Metadata)
	require.Equal(t, &drover.Telemetry{OmitContext: true}, got(1))
	require.True(t, strings.Contains(got(2).Metadata, bulk.SpanContext.SpanID().String()), "a plain job carries the addBulk span")
	require.Equal(t, 3, mustJob(t, r.q, res[2].Job.ID).Opts.Attempts, "the other options survive the copy")
}

func mustJob(t *testing.T, q *drover.Queue, id string) *drover.Job {
	t.Helper()
	job, err := q.GetJob(context.Background(), id)
	require.NoError(t, err)
	return job
}

// TestTraceAttemptThatDidNotFail: an attempt that postpones its job
// (Delay) or gives it back under a rate limit spends no attempt and
// records no failure, so its span has no "job failed" event and no error
// status, as BullMQ's process span has none for a DelayedError or a
// RateLimitError. It used to get a "job failed" event carrying the Delay's
// or ErrRateLimited's text.
func TestTraceAttemptThatDidNotFail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		proc    func(q *drover.Queue) drover.ProcessorFunc
		outcome string
	}{
		{"Delay", func(*drover.Queue) drover.ProcessorFunc {
			return func(context.Context, *drover.Job) (any, error) { return nil, drover.Delay(time.Hour) }
		}, "delayed"},
		{"RateLimited", func(q *drover.Queue) drover.ProcessorFunc {
			return func(ctx context.Context, _ *drover.Job) (any, error) {
				if err := q.RateLimit(ctx, time.Hour); err != nil {
					return nil, err
				}
				return nil, drover.ErrRateLimited
			}
		}, "rate-limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.startWorker(t, tc.proc(r.q))
			_, err := r.q.Add(context.Background(), "welcome", nil, &drover.JobOptions{Attempts: 3})
			require.NoError(t, err)
			r.waitSpans(t, 2)
			s := r.span(t, "process mail")
			require.Equal(t, tc.outcome, attr(s, "drover.outcome"))
			require.Equal(t, "0", attr(s, "bullmq.job.attempts.made"))
			require.Equal(t, "Unset", s.Status.Code.String())
			for _, e := range s.Events {
				require.NotEqual(t, "job failed", e.Name, "attributes: %v", e.Attributes)
			}
			for _, s := range r.spans.GetSpans() {
				require.NotEqual(t, trace.SpanKindInternal, s.SpanKind, "no fail/retry/delay span: %s", s.Name)
			}
		})
	}
}

// TestExtractNilJob: Extract of a nil job
// leaves ctx as it is; it used to panic (nil pointer dereference).
func TestExtractNilJob(t *testing.T) {
	t.Parallel()
	mw, err := droverotel.New(nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NotPanics(t, func() {
		require.Equal(t, ctx, mw.Extract(ctx, nil))
	})
}
