// Package droverotel traces and measures drover with OpenTelemetry, through
// drover's producer, flow producer and worker middleware.
//
// Traces follow BullMQ 6.7's telemetry, so one trace runs across Node BullMQ
// (with its bullmq-otel adapter) and drover in either direction:
//
//   - An add makes a PRODUCER span, "add <queue>.<job name>" ("addBulk
//     <queue>" for several jobs at once), a child of the span in the add's
//     context, and stores that span's context in the job
//     (JobOptions.Telemetry.Metadata, BullMQ's opts.tm) as bullmq-otel does:
//     a JSON object of text-map propagation headers, e.g.
//     {"traceparent":"00-…-…-01"}.
//   - A flow (FlowProducer.Add) makes one PRODUCER span, "addFlow <root's
//     queue>" ("addBulkFlows" for several trees), and every job of the tree
//     stores its context.
//   - A worker's attempt makes a CONSUMER span, "process <queue>", whose
//     parent is the context read from the job, so it is the add span's child
//     in the same trace (a parent/child relation, not a link, as in BullMQ).
//     The processor runs with that span in its context: jobs it adds, and
//     spans it starts, join the trace.
//   - A failed attempt makes an INTERNAL span under the process span,
//     "fail <queue>", or "retry <queue>" / "delay <queue>" when the job is
//     retried at once / after a backoff, and the worker stores that span's
//     context in the job hash field "tm", as BullMQ's worker does on
//     moveToFailed (BullMQ 6.7 reads it nowhere: the next attempt's process
//     span is again the add span's child, on both sides).
//
// Span attributes use BullMQ's names (bullmq.queue.name, bullmq.job.id, …).
//
// Metrics are the ones package metrics exports to Prometheus, under the same
// names, labels and units: the worker metrics (drover_jobs_started_total,
// drover_job_duration_seconds, …) from the middleware and WorkerHooks, the
// queue gauges from RegisterQueueGauges. An OpenTelemetry pipeline can
// replace the Prometheus collectors without changing dashboards.
//
// Only this package imports OpenTelemetry: a program that imports drover
// alone does not compile or link it.
package droverotel

import (
	"context"
	"encoding/json"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/metricset"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/seed40057009/drover/droverotel"

// Options configure New. Nil means defaults.
type Options struct {
	// TracerProvider makes the spans. Defaults to otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments. Defaults to
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator writes the trace context into jobs and reads it back.
	// Defaults to W3C trace context plus baggage, what Node's OpenTelemetry
	// SDK registers by default, so a trace continues across Node and drover
	// even when the program never set a global propagator.
	Propagator propagation.TextMapPropagator
	// DurationBuckets are the upper bounds, in seconds, of the
	// drover_job_duration_seconds histogram. Defaults to Prometheus's
	// default buckets (5ms to 10s), as package metrics uses.
	DurationBuckets []float64
}

// Middleware is drover's OpenTelemetry instrumentation. One Middleware may
// serve any number of queues and workers.
type Middleware struct {
	meter      metric.Meter
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	m          *instruments
	// failSpans holds each failed attempt's fail/retry/delay span, by
	// *drover.Job, from FailureTelemetry (before the worker writes the
	// failure) until Finished (after).
	failSpans sync.Map
}

// New returns the instrumentation. It fails only when the meter provider
// refuses an instrument.
func New(opts *Options) (*Middleware, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.Propagator == nil {
		o.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if o.DurationBuckets == nil {
		o.DurationBuckets = metricset.DefaultBuckets()
	}
	meter := o.MeterProvider.Meter(ScopeName)
	m, err := newInstruments(meter, o.DurationBuckets)
	if err != nil {
		return nil, err
	}
	return &Middleware{meter: meter, tracer: o.TracerProvider.Tracer(ScopeName), propagator: o.Propagator, m: m}, nil
}

// BullMQ's attribute names (its TelemetryAttributes), and drover's own.
const (
	attrQueueName    = attribute.Key("bullmq.queue.name")
	attrOperation    = attribute.Key("bullmq.queue.operation")
	attrJobName      = attribute.Key("bullmq.job.name")
	attrJobID        = attribute.Key("bullmq.job.id")
	attrJobIDs       = attribute.Key("bullmq.job.ids")
	attrBulkCount    = attribute.Key("bullmq.job.bulk.count")
	attrBulkNames    = attribute.Key("bullmq.job.bulk.names")
	attrWorkerName   = attribute.Key("bullmq.worker.name")
	attrAttemptsMade = attribute.Key("bullmq.job.attempts.made")
	attrFailed       = attribute.Key("bullmq.job.failed.reason")
	attrFlowName     = attribute.Key("bullmq.flow.name")
	attrOutcome      = attribute.Key("drover.outcome")
)

// AddMiddleware returns the producer side for queue (the name the queue was
// opened with): set it in drover.QueueOptions.AddMiddleware.
//
// A job that already carries a trace context (JobOptions.Telemetry with
// Metadata), such as one relayed from an outbox, keeps it; a job with
// Telemetry.OmitContext gets none. (BullMQ's Queue.add replaces a caller's
// metadata; its addBulk keeps it, as drover does for both.)
func (mw *Middleware) AddMiddleware(queue string) drover.AddMiddleware {
	return func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
		name, attrs := "addBulk "+queue, []attribute.KeyValue{attrQueueName.String(queue), attrOperation.String("addBulk")}
		if len(jobs) == 1 {
			name = "add " + queue + "." + jobs[0].Name
			attrs = []attribute.KeyValue{attrQueueName.String(queue), attrOperation.String("add"), attrJobName.String(jobs[0].Name)}
		}
		ctx, span := mw.startAdd(ctx, name, attrs, bulkNames(jobs, func(j drover.BulkJob) string { return j.Name }))
		defer span.End()
		if md := mw.metadata(ctx); md != "" {
			for i := range jobs {
				jobs[i].Opts = withMetadata(jobs[i].Opts, md)
			}
		}
		res, err := next(ctx, jobs)
		var ids []string
		for _, r := range res {
			if r != nil && r.Job != nil {
				ids = append(ids, r.Job.ID)
			}
		}
		endAdd(span, err, ids)
		return res, err
	}
}

// FlowMiddleware returns the producer side for flows: set it in
// drover.FlowProducerOptions.Middleware. Each Add is a PRODUCER span
// "addFlow <root's queue>" (attribute bullmq.flow.name, the root's name),
// each AddBulk of several flows one span "addBulkFlows"; every job of the
// trees stores that span's context, so the workers' process spans of all
// of them, Node's or drover's, are its children. A node that already
// carries a context, or asks for none, keeps its options, as with
// AddMiddleware. (BullMQ's FlowProducer also makes an "addNode" span per
// job, under the flow's span, and stores that one in the job; a node
// without options gets no context there.)
func (mw *Middleware) FlowMiddleware() drover.FlowMiddleware {
	return func(ctx context.Context, flows []drover.FlowJob, next drover.AddFlowFunc) ([]*drover.JobNode, error) {
		name, attrs := "addBulkFlows", []attribute.KeyValue{attrQueueName.String(""), attrOperation.String("addBulkFlows")}
		if len(flows) == 1 {
			name = "addFlow " + flows[0].QueueName
			attrs = []attribute.KeyValue{attrQueueName.String(flows[0].QueueName), attrOperation.String("addFlow"), attrFlowName.String(flows[0].Name)}
		}
		ctx, span := mw.startAdd(ctx, name, attrs, bulkNames(flows, func(f drover.FlowJob) string { return f.Name }))
		defer span.End()
		if md := mw.metadata(ctx); md != "" {
			for i := range flows {
				flows[i] = withFlowMetadata(flows[i], md)
			}
		}
		trees, err := next(ctx, flows)
		var ids []string
		for _, t := range trees {
			if t != nil {
				ids = append(ids, t.Ref.ID)
			}
		}
		endAdd(span, err, ids)
		return trees, err
	}
}

// startAdd starts the PRODUCER span of an add; bulk, the names of the
// jobs or flows of an add of several (nil for one), adds their count and
// names.
func (mw *Middleware) startAdd(ctx context.Context, name string, attrs []attribute.KeyValue, bulk []string) (context.Context, trace.Span) {
	if bulk != nil {
		attrs = append(attrs, attrBulkCount.Int(len(bulk)), attrBulkNames.StringSlice(bulk))
	}
	return mw.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// bulkNames is the names of items, or nil when there is one item (a single
// add, whose span carries the one name its own way).
func bulkNames[T any](items []T, name func(T) string) []string {
	if len(items) == 1 {
		return nil
	}
	names := make([]string, len(items))
	for i := range items {
		names[i] = name(items[i])
	}
	return names
}

// endAdd records on an add's span its error, or the ids of the jobs (of
// the trees' roots) it stored: bullmq.job.id for one, bullmq.job.ids for
// several.
func endAdd(span trace.Span, err error, ids []string) {
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case len(ids) == 1:
		span.SetAttributes(attrJobID.String(ids[0]))
	case len(ids) > 1:
		span.SetAttributes(attrJobIDs.StringSlice(ids))
	}
}

// withFlowMetadata returns node, and every node below it, with the trace
// context md (see withMetadata), as copies: the caller's Children slices
// and options are never written.
func withFlowMetadata(node drover.FlowJob, md string) drover.FlowJob {
	node.Opts = withMetadata(node.Opts, md)
	if len(node.Children) > 0 {
		children := make([]drover.FlowJob, len(node.Children))
		for i := range node.Children {
			children[i] = withFlowMetadata(node.Children[i], md)
		}
		node.Children = children
	}
	return node
}

// withMetadata returns opts with the trace context md, as a copy: the
// caller's options are never written. Options that already carry a context
// or ask for none are returned as they are.
func withMetadata(opts *drover.JobOptions, md string) *drover.JobOptions {
	if opts != nil && opts.Telemetry != nil && (opts.Telemetry.Metadata != "" || opts.Telemetry.OmitContext) {
		return opts
	}
	var c drover.JobOptions
	if opts != nil {
		c = *opts
	}
	c.Telemetry = &drover.Telemetry{Metadata: md}
	return &c
}

// metadata is ctx's trace context as BullMQ's telemetry metadata: the
// propagator's headers as one JSON object ("" when there is nothing to
// carry).
func (mw *Middleware) metadata(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	mw.propagator.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return ""
	}
	b, err := json.Marshal(map[string]string(carrier))
	if err != nil {
		return ""
	}
	return string(b)
}

// Extract returns ctx with the trace context job carries (BullMQ's
// opts.tm, written by droverotel or by Node's bullmq-otel), for code that
// handles jobs outside a worker. A job with none, or with metadata that is
// not a JSON object of strings (or a nil job), leaves ctx as it is.
func (mw *Middleware) Extract(ctx context.Context, job *drover.Job) context.Context {
	if job == nil {
		return ctx
	}
	t := job.Opts.Telemetry
	if t == nil || t.Metadata == "" {
		return ctx
	}
	var carrier map[string]string
	if json.Unmarshal([]byte(t.Metadata), &carrier) != nil {
		return ctx
	}
	return mw.propagator.Extract(ctx, propagation.MapCarrier(carrier))
}

// WorkerMiddleware returns the worker side: set it in
// drover.WorkerOptions.Middleware. Each attempt is a "process <queue>" span,
// a child of the context the job carries; its end records the outcome
// (attribute drover.outcome; an event "job completed", or "job failed" and
// an error status when the attempt failed: not when it only postponed its
// job with Delay, ErrRateLimited or ErrWaitingChildren) and the metrics.
func (mw *Middleware) WorkerMiddleware() drover.WorkerMiddleware {
	return drover.WorkerMiddleware{
		Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (any, error) {
			ctx = mw.startProcess(ctx, job)
			mw.m.add(ctx, metricset.Started, queueOf(job))
			return next(ctx, job)
		},
		FailureTelemetry: mw.failureTelemetry,
		Finished: func(ctx context.Context, job *drover.Job, f drover.Finish) {
			if s, ok := mw.failSpans.LoadAndDelete(job); ok {
				fail := s.(trace.Span)
				if f.Outcome == drover.OutcomeUnknown && f.Err != nil {
					fail.RecordError(f.Err)
					fail.SetStatus(codes.Error, f.Err.Error())
				}
				fail.End()
			}
			span := trace.SpanFromContext(ctx)
			if !span.SpanContext().IsValid() || !isOurs(ctx) {
				// The job failed without running the processor (or an
				// outer middleware did not run this one): its attempt is
				// still one span.
				ctx = mw.startProcess(ctx, job)
				span = trace.SpanFromContext(ctx)
			}
			mw.finish(span, job, f)
			mw.m.finished(ctx, job, f)
		},
	}
}

// failureTelemetry starts the span of a failed attempt's write, named as
// BullMQ names it ("fail", "retry" or "delay <queue>", INTERNAL), a child
// of the process span, and returns its context as BullMQ's telemetry
// metadata for the worker to store in the job hash field "tm". Finished
// ends it once the failure is written.
func (mw *Middleware) failureTelemetry(ctx context.Context, job *drover.Job, o drover.Outcome) string {
	op := "fail"
	switch {
	case o == drover.OutcomeRetried:
		op = "retry"
	case o.Retried():
		op = "delay"
	}
	if !isOurs(ctx) {
		// The job failed without running the processor: no process span
		// yet (Finished makes one), so the span joins the job's trace.
		ctx = mw.Extract(ctx, job)
	}
	queue := queueOf(job)
	ctx, span := mw.tracer.Start(ctx, op+" "+queue, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attrQueueName.String(queue), attrOperation.String(op), attrJobName.String(job.Name), attrJobID.String(job.ID)))
	if prev, loaded := mw.failSpans.Swap(job, span); loaded {
		prev.(trace.Span).End() // not expected: one failure write per attempt
	}
	return mw.metadata(ctx)
}

type processKey struct{}

// isOurs tells whether the span in ctx is the process span this middleware
// started (and not, say, a span of the caller's that Finished would end).
func isOurs(ctx context.Context) bool { return ctx.Value(processKey{}) != nil }

func (mw *Middleware) startProcess(ctx context.Context, job *drover.Job) context.Context {
	queue := queueOf(job)
	attrs := []attribute.KeyValue{
		attrQueueName.String(queue), attrOperation.String("process"),
		attrJobID.String(job.ID), attrJobName.String(job.Name),
	}
	if job.ProcessedBy != "" {
		attrs = append(attrs, attrWorkerName.String(job.ProcessedBy))
	}
	ctx, _ = mw.tracer.Start(mw.Extract(ctx, job), "process "+queue,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, processKey{}, true)
}

func (mw *Middleware) finish(span trace.Span, job *drover.Job, f drover.Finish) {
	defer span.End()
	made := job.AttemptsMade // the count before this attempt
	if f.Outcome == drover.OutcomeCompleted || f.Outcome.Failed() || f.Outcome.Retried() {
		made++ // these outcomes spend an attempt (BullMQ's atm)
	}
	span.SetAttributes(attrOutcome.String(f.Outcome.String()), attrAttemptsMade.Int(made))
	switch {
	case f.Outcome == drover.OutcomeCompleted:
		// BullMQ also puts the result in this event; drover keeps payloads
		// out of telemetry.
		span.AddEvent("job completed")
	case f.Err != nil && (f.Outcome.Failed() || f.Outcome.Retried() || f.Outcome == drover.OutcomeUnknown):
		span.AddEvent("job failed", trace.WithAttributes(attrFailed.String(f.Err.Error())))
		span.RecordError(f.Err)
		span.SetStatus(codes.Error, f.Err.Error())
	}
	// The other outcomes (delayed, rate-limited, waiting-children, requeued
	// by a closing worker) end the attempt without a failure, and BullMQ's
	// process span records none for them either.
}

func queueOf(job *drover.Job) string {
	if q := job.Queue(); q != nil {
		return q.Name()
	}
	return ""
}
