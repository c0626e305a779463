// Telemetry for the oracle: BullMQ's own telemetry hook driven by the
// bullmq-otel adapter, with the OpenTelemetry JS SDK recording every ended
// span in memory, so a test can read Node's spans and check that they and
// drover's belong to one trace. Nothing here is loaded until a test asks for
// telemetry: other oracle runs do not pay for the SDK.

import { createRequire } from 'node:module';
import { Queue } from 'bullmq';

const require = createRequire(import.meta.url);

let loaded;

// otel sets up, once per process, a tracer provider exporting to an
// InMemorySpanExporter, the AsyncLocalStorage context manager and the W3C
// trace-context propagator as the globals bullmq-otel uses, and returns them
// with a BullMQOtel telemetry instance to pass as BullMQ's `telemetry` option.
export function otel() {
  if (loaded) {
    return loaded;
  }
  const api = require('@opentelemetry/api');
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core');
  const { BullMQOtel } = require('bullmq-otel');
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  api.trace.setGlobalTracerProvider(provider);
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  loaded = {
    api,
    exporter,
    telemetry: new BullMQOtel({ tracerName: 'drover-oracle' }),
    tracer: api.trace.getTracer('drover-oracle-test'),
  };
  return loaded;
}

// activeSpan returns the ids of the span active where it is called, or null.
export function activeSpan() {
  const span = otel().api.trace.getActiveSpan();
  if (!span) {
    return null;
  }
  const sc = span.spanContext();
  return { traceId: sc.traceId, spanId: sc.spanId };
}

// spanView is an ended span as plain JSON.
function spanView(s) {
  const sc = s.spanContext();
  return {
    name: s.name,
    kind: s.kind, // SpanKind: 0 internal, 1 server, 2 client, 3 producer, 4 consumer
    traceId: sc.traceId,
    spanId: sc.spanId,
    parentSpanId: s.parentSpanContext?.spanId ?? s.parentSpanId ?? '',
    links: (s.links ?? []).map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    attributes: s.attributes,
    events: (s.events ?? []).map((e) => ({ name: e.name, attributes: e.attributes ?? {} })),
    status: s.status,
  };
}

const tracedQueues = new Map(); // prefix\0queue -> Promise<Queue>

// closeTelemetry closes the traced queues telemetryAdd opened.
export async function closeTelemetry() {
  const qs = [...tracedQueues.values()];
  tracedQueues.clear();
  await Promise.all(qs.map((p) => p.then((q) => q.close()).catch(() => {})));
}

export function telemetryCommands({ need, connection }) {
  const tracedQueue = (a) => {
    need(a, 'prefix', 'queue');
    const k = `${a.prefix}\u0000${a.queue}`;
    let p = tracedQueues.get(k);
    if (!p) {
      p = (async () => {
        const q = new Queue(a.queue, { connection, prefix: a.prefix, telemetry: otel().telemetry });
        q.on('error', (err) => console.error(`oracle traced queue ${a.queue} error:`, err.message));
        await q.waitUntilReady();
        return q;
      })();
      tracedQueues.set(k, p);
      p.catch(() => tracedQueues.delete(k));
    }
    return p;
  };
  return {
    // telemetryAdd adds a job through a Queue with BullMQ telemetry on.
    // With a.rootSpan the add runs inside an active span of that name (a
    // caller's trace); the result is {jobId, traceId, spanId} with the ids
    // of that root span (null without one).
    telemetryAdd: async (a) => {
      need(a, 'name');
      const q = await tracedQueue(a);
      const add = () => q.add(a.name, a.data ?? {}, a.opts ?? undefined);
      if (!a.rootSpan) {
        const job = await add();
        return { jobId: job.id, traceId: null, spanId: null };
      }
      const { tracer } = otel();
      return tracer.startActiveSpan(a.rootSpan, async (span) => {
        try {
          const job = await add();
          const sc = span.spanContext();
          return { jobId: job.id, traceId: sc.traceId, spanId: sc.spanId };
        } finally {
          span.end();
        }
      });
    },
    // telemetrySpans returns the spans ended so far (all of them, or those
    // of trace a.traceId), oldest first; a.reset empties the exporter after.
    telemetrySpans: async (a) => {
      const { exporter } = otel();
      const spans = exporter.getFinishedSpans().map(spanView);
      if (a.reset) {
        exporter.reset();
      }
      return a.traceId ? spans.filter((s) => s.traceId === a.traceId) : spans;
    },
  };
}
