package bullmqoracle

import "context"

// ActiveSpan completes each job with the ids of the span active in Node's
// processor, {"traceId": "...", "spanId": "..."} (BullMQ's process span when
// the worker has WorkerOptions.Telemetry), or null when there is none.
func ActiveSpan() Behavior { return Behavior{Kind: "activeSpan"} }

// SpanIDs are a span's W3C ids in lower-case hex.
type SpanIDs struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

// NodeSpan is a span Node's OpenTelemetry SDK ended, as its in-memory
// exporter holds it.
type NodeSpan struct {
	Name string `json:"name"`
	// Kind is OpenTelemetry's SpanKind number: 0 internal, 1 server,
	// 2 client, 3 producer, 4 consumer.
	Kind         int            `json:"kind"`
	TraceID      string         `json:"traceId"`
	SpanID       string         `json:"spanId"`
	ParentSpanID string         `json:"parentSpanId"`
	Links        []SpanIDs      `json:"links"`
	Attributes   map[string]any `json:"attributes"`
	Events       []struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
}

// Node's SpanKind numbers.
const (
	SpanKindInternal = 0
	SpanKindProducer = 3
	SpanKindConsumer = 4
)

// TelemetryAddResult is TelemetryAdd's result: the job id and, when a root
// span was asked for, its ids.
type TelemetryAddResult struct {
	JobID string `json:"jobId"`
	SpanIDs
}

// TelemetryAdd adds a job through a Node Queue with BullMQ's telemetry on
// (bullmq-otel over the OpenTelemetry JS SDK, W3C trace context). With
// rootSpan != "" the add runs inside an active span of that name, whose ids
// are returned.
func (o *Oracle) TelemetryAdd(ctx context.Context, prefix, queue, name string, data any, opts map[string]any, rootSpan string) (*TelemetryAddResult, error) {
	var r TelemetryAddResult
	err := o.Call(ctx, "telemetryAdd", qargs(prefix, queue, "name", name, "data", data, "opts", opts, "rootSpan", rootSpan), &r)
	return &r, err
}

// TelemetrySpans returns the spans Node ended so far, oldest first: all of
// them, or those of traceID when it is not "".
func (o *Oracle) TelemetrySpans(ctx context.Context, traceID string) ([]NodeSpan, error) {
	var spans []NodeSpan
	err := o.Call(ctx, "telemetrySpans", map[string]any{"traceId": traceID}, &spans)
	return spans, err
}
