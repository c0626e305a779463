package droverotel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/droverotel"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func exampleClient() (*redis.Client, string) {
	srv, err := redistest.SharedServer()
	if err != nil {
		panic(err)
	}
	return redis.NewClient(&redis.Options{Addr: srv.Addr}), redistest.UniquePrefix()
}

// Tracing both sides of a queue: the producer's add span and the worker's
// process span form one trace, the process span a child of the add span, as
// in BullMQ (whose Node workers and producers, with bullmq-otel, join the
// same traces).
func ExampleNew() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()

	spans := tracetest.NewInMemoryExporter() // a real program exports elsewhere
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	otelmw, _ := droverotel.New(&droverotel.Options{TracerProvider: tp})

	q, _ := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix,
		AddMiddleware: []drover.AddMiddleware{otelmw.AddMiddleware("mail")}})
	done := make(chan struct{})
	w, _ := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Middleware: []drover.WorkerMiddleware{
		otelmw.WorkerMiddleware(),
		{Finished: func(context.Context, *drover.Job, drover.Finish) { close(done) }},
	}})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	ctx, signup := tp.Tracer("app").Start(ctx, "signup")
	_, _ = q.Add(ctx, "welcome", map[string]string{"to": "ada@example.com"}, nil)
	signup.End()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	for deadline := time.Now().Add(10 * time.Second); len(spans.GetSpans()) < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // the process span ends just after Finished
	}

	byID, byName := map[string]string{}, map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byID[s.SpanContext.SpanID().String()] = s.Name
		byName[s.Name] = s
	}
	for _, name := range []string{"signup", "add mail.welcome", "process mail"} {
		s := byName[name]
		fmt.Printf("%-17s %-8s child of %q, same trace: %v\n", s.Name, s.SpanKind, byID[s.Parent.SpanID().String()],
			s.SpanContext.TraceID() == signup.SpanContext().TraceID())
	}
	// Output:
	// signup            internal child of "", same trace: true
	// add mail.welcome  producer child of "signup", same trace: true
	// process mail      consumer child of "add mail.welcome", same trace: true
}

// Metrics through OpenTelemetry instead of package metrics' Prometheus
// collectors: the same names (drover_jobs_completed_total,
// drover_job_duration_seconds, …), labels and units. WorkerHooks adds the
// two counters middleware cannot see (stalls, lost locks).
func ExampleMiddleware_WorkerHooks() {
	rdb, prefix := exampleClient()
	defer rdb.Close()

	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	otelmw, _ := droverotel.New(&droverotel.Options{MeterProvider: mp})
	w, err := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, nil
	}), &drover.WorkerOptions{
		Prefix:     prefix,
		Middleware: []drover.WorkerMiddleware{otelmw.WorkerMiddleware()},
		Hooks:      otelmw.WorkerHooks("mail"),
	})
	fmt.Println(w != nil, err)
	// Output: true <nil>
}

// Tracing a flow: one addFlow span for the whole tree, whose context every
// job stores, so each job's process span is its child.
func ExampleMiddleware_FlowMiddleware() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	otelmw, _ := droverotel.New(&droverotel.Options{TracerProvider: tp})

	fp, _ := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix,
		Middleware: []drover.FlowMiddleware{otelmw.FlowMiddleware()}})
	w, _ := drover.NewWorker(rdb, "reports", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Middleware: []drover.WorkerMiddleware{otelmw.WorkerMiddleware()}})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	ctx, nightly := tp.Tracer("app").Start(ctx, "nightly")
	_, _ = fp.Add(ctx, drover.FlowJob{Name: "report", QueueName: "reports", Children: []drover.FlowJob{
		{Name: "sales", QueueName: "reports"},
		{Name: "stock", QueueName: "reports"},
	}})
	nightly.End()
	for deadline := time.Now().Add(10 * time.Second); len(spans.GetSpans()) < 5 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // nightly, addFlow, three process spans
	}

	names := map[string]string{}
	for _, s := range spans.GetSpans() {
		names[s.SpanContext.SpanID().String()] = s.Name
	}
	processes := 0
	for _, s := range spans.GetSpans() {
		switch {
		case s.Name == "addFlow reports":
			fmt.Printf("%s, %s, child of %q\n", s.Name, s.SpanKind, names[s.Parent.SpanID().String()])
		case s.Name == "process reports" && names[s.Parent.SpanID().String()] == "addFlow reports" &&
			s.SpanContext.TraceID() == nightly.SpanContext().TraceID():
			processes++
		}
	}
	fmt.Println("process spans under addFlow, in the nightly trace:", processes)
	// Output:
	// addFlow reports, producer, child of "nightly"
	// process spans under addFlow, in the nightly trace: 3
}
