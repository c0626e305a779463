package droverotel_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed40057009/drover"
)

// flowProducer is a FlowProducer of the rig's Redis, traced by its
// Middleware.
func (r *rig) flowProducer(t *testing.T) *drover.FlowProducer {
	t.Helper()
	fp, err := drover.NewFlowProducer(r.rdb, &drover.FlowProducerOptions{Prefix: r.prefix,
		Middleware: []drover.FlowMiddleware{r.mw.FlowMiddleware()}})
	require.NoError(t, err)
	return fp
}

// traceparent is the W3C header a job stores for span s.
func traceparent(s tracetest.SpanStub) string {
	return "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
}

// storedTraceparent reads opts.tm of a job straight from its hash.
func (r *rig) storedTraceparent(t *testing.T, id string) string {
	t.Helper()
	raw, err := r.rdb.HGet(context.Background(), r.prefix+":mail:"+id, "opts").Result()
	require.NoError(t, err)
	var opts struct{ TM string }
	require.NoError(t, json.Unmarshal([]byte(raw), &opts))
	if opts.TM == "" {
		return ""
	}
	var carrier map[string]string
	require.NoError(t, json.Unmarshal([]byte(opts.TM), &carrier), "opts.tm is a JSON object: %s", raw)
	return carrier["traceparent"]
}

// TestTraceFlowAddToProcess: a FlowProducer.Add is one PRODUCER span,
// "addFlow <root's queue>", the caller's child; every job of the tree, three
// levels deep, stores its context as BullMQ's opts.tm, and each job's
// process span is its child, in the caller's trace, as for Queue.Add. The
// processor of the parent runs in its own process span. Before
// FlowProducerOptions.Middleware, flow jobs carried no context and every
// attempt started a trace of its own.
func TestTraceFlowAddToProcess(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	var mu sync.Mutex
	inProc := map[string]trace.SpanContext{}
	r.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		inProc[job.Name] = trace.SpanContextFromContext(ctx)
		return job.Name, nil
	})
	shared := &drover.JobOptions{Attempts: 2} // one pointer for two nodes: must not be written
	flow := drover.FlowJob{Name: "report", QueueName: "mail", Children: []drover.FlowJob{
		{Name: "month", QueueName: "mail", Opts: shared, Children: []drover.FlowJob{
			{Name: "week", QueueName: "mail", Opts: shared},
		}},
		{Name: "totals", QueueName: "mail"},
	}}
	ctx, root := r.tp.Tracer("test").Start(ctx, "nightly")
	tree, err := r.flowProducer(t).Add(ctx, flow)
	require.NoError(t, err)
	root.End()
	require.Nil(t, shared.Telemetry, "the caller's options are not written")
	require.Nil(t, flow.Children[0].Opts.Telemetry)
	r.waitSpans(t, 6) // nightly, addFlow, four process spans

	add := r.span(t, "addFlow mail")
	require.Equal(t, trace.SpanKindProducer, add.SpanKind)
	require.Equal(t, root.SpanContext().SpanID(), add.Parent.SpanID(), "addFlow is the caller's child")
	require.Equal(t, root.SpanContext().TraceID(), add.SpanContext.TraceID())
	require.Equal(t, "addFlow", attr(add, "bullmq.queue.operation"))
	require.Equal(t, "report", attr(add, "bullmq.flow.name"))
	require.Equal(t, tree.Ref.ID, attr(add, "bullmq.job.id"))

	ids := map[string]string{}
	var walk func(n *drover.JobNode)
	walk = func(n *drover.JobNode) {
		ids[n.Job.Name] = n.Ref.ID
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree)
	require.Len(t, ids, 4)
	for name, id := range ids {
		require.Equal(t, traceparent(add), r.storedTraceparent(t, id), "job %s stores the addFlow span's context", name)
	}

	processed := map[string]tracetest.SpanStub{}
	for _, s := range r.spans.GetSpans() {
		if s.Name == "process mail" {
			processed[attr(s, "bullmq.job.name")] = s
		}
	}
	require.Len(t, processed, 4)
	mu.Lock()
	defer mu.Unlock()
	for name, s := range processed {
		require.Equal(t, trace.SpanKindConsumer, s.SpanKind)
		require.Equal(t, add.SpanContext.TraceID(), s.SpanContext.TraceID(), "%s: one trace", name)
		require.Equal(t, add.SpanContext.SpanID(), s.Parent.SpanID(), "%s: process is the addFlow span's child", name)
		require.Equal(t, "completed", attr(s, "drover.outcome"))
		require.Equal(t, s.SpanContext.SpanID(), inProc[name].SpanID(), "%s: the processor runs in its process span", name)
	}
}

// TestTraceFlowAddBulk: AddBulk of several flows is one "addBulkFlows" span
// whose context every job of every tree stores; a node that carries its own
// context keeps it, one with OmitContext gets none (and its children still
// get the span's), the other options survive the copy.
func TestTraceFlowAddBulk(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	const relayed = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	trees, err := r.flowProducer(t).AddBulk(ctx, []drover.FlowJob{
		{Name: "a", QueueName: "mail", Opts: &drover.JobOptions{Telemetry: &drover.Telemetry{Metadata: `{"traceparent":"` + relayed + `"}`}}},
		{Name: "b", QueueName: "mail", Opts: &drover.JobOptions{Telemetry: &drover.Telemetry{OmitContext: true}},
			Children: []drover.FlowJob{{Name: "b1", QueueName: "mail", Opts: &drover.JobOptions{Priority: 7}}}},
	})
	require.NoError(t, err)
	require.Len(t, trees, 2)
	bulk := r.span(t, "addBulkFlows")
	require.Equal(t, trace.SpanKindProducer, bulk.SpanKind)
	require.Equal(t, "2", attr(bulk, "bullmq.job.bulk.count"))
	require.Equal(t, `["a","b"]`, attr(bulk, "bullmq.job.bulk.names"))
	require.Equal(t, `["`+trees[0].Ref.ID+`","`+trees[1].Ref.ID+`"]`, attr(bulk, "bullmq.job.ids"))

	require.Equal(t, relayed, r.storedTraceparent(t, trees[0].Ref.ID), "a node's own context is kept")
	require.Empty(t, r.storedTraceparent(t, trees[1].Ref.ID), "OmitContext: no context")
	child := trees[1].Children[0]
	require.Equal(t, traceparent(bulk), r.storedTraceparent(t, child.Ref.ID))
	job := mustJob(t, r.q, child.Ref.ID)
	require.Equal(t, 7, job.Opts.Priority, "the other options survive the copy")
}

// TestTraceFlowRefused: a tree the producer refuses ends its span with the
// error, and nothing is stored.
func TestTraceFlowRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, err := r.flowProducer(t).Add(context.Background(), drover.FlowJob{Name: "report", QueueName: "mail",
		Children: []drover.FlowJob{{Name: "c", QueueName: "ma:il"}}})
	require.Error(t, err)
	add := r.span(t, "addFlow mail")
	require.Equal(t, "Error", add.Status.Code.String())
	require.Equal(t, err.Error(), add.Status.Description)
	keys, err2 := r.rdb.Keys(context.Background(), r.prefix+":*").Result()
	require.NoError(t, err2)
	require.Empty(t, keys, "a refused tree writes nothing")
}
