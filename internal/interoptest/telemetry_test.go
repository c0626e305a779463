package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestInteropTelemetry: one trace across Node BullMQ (telemetry through
// bullmq-otel, spans in the OpenTelemetry JS SDK's in-memory exporter) and
// drover (droverotel, spans in the Go SDK's in-memory exporter), both ways.
// In each direction the consumer's process span must be the child of the
// producer's add span, in the producer's trace, as BullMQ links its own.
func TestInteropTelemetry(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	otelRig := droverOtelRig
	nodeSpan := func(t *testing.T, spans []bullmqoracle.NodeSpan, name string) bullmqoracle.NodeSpan {
		t.Helper()
		var found []bullmqoracle.NodeSpan
		for _, s := range spans {
			if s.Name == name {
				found = append(found, s)
			}
		}
		require.Len(t, found, 1, "Node spans named %q in %+v", name, spans)
		return found[0]
	}

	t.Run("NodeProducerDroverWorker", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		mw, spans, _ := otelRig(t)
		var mu sync.Mutex
		var inProc trace.SpanContext
		w, err := drover.NewWorker(b.rdb, queueName, drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			inProc = trace.SpanContextFromContext(ctx)
			return "sent", nil
		}), &drover.WorkerOptions{Prefix: b.prefix, Name: workerName, Middleware: []drover.WorkerMiddleware{mw.WorkerMiddleware()}})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { _ = w.Close(ctx) })

		added, err := b.oracle.TelemetryAdd(ctx, b.prefix, queueName, "welcome", map[string]any{"to": "ada"}, nil, "node-signup")
		require.NoError(t, err)
		testkit.WaitFor(t, waitLong, "the drover process span", func() bool { return len(spans.GetSpans()) == 1 })

		nodeSpans, err := b.oracle.TelemetrySpans(ctx, added.TraceID)
		require.NoError(t, err)
		root := nodeSpan(t, nodeSpans, "node-signup")
		add := nodeSpan(t, nodeSpans, "add "+queueName+".welcome")
		require.Equal(t, bullmqoracle.SpanKindProducer, add.Kind)
		require.Equal(t, root.SpanID, add.ParentSpanID, "Node: add is the caller's child")

		process := spans.GetSpans()[0]
		require.Equal(t, "process "+queueName, process.Name)
		require.Equal(t, trace.SpanKindConsumer, process.SpanKind)
		require.Equal(t, added.TraceID, process.SpanContext.TraceID().String(), "one trace id across Node and drover")
		require.Equal(t, add.SpanID, process.Parent.SpanID().String(), "drover's process span is the child of Node's add span")
		require.True(t, process.Parent.IsRemote())
		mu.Lock()
		require.Equal(t, process.SpanContext.SpanID(), inProc.SpanID(), "the processor runs in the process span")
		mu.Unlock()
		t.Logf("trace %s: Node %s → Node add %s → drover process %s", added.TraceID, root.SpanID, add.SpanID, process.SpanContext.SpanID())
	})

	// A job Node's traced worker failed once (writing its delay span's
	// context into the hash field tm) and a drover worker retries: the
	// retry's process span is the child of the add span, from opts.tm, as
	// BullMQ 6.7's own retry would be (it never reads the hash field).
	t.Run("NodeFailsDroverRetries", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		mw, spans, _ := otelRig(t)
		added, err := b.oracle.TelemetryAdd(ctx, b.prefix, queueName, "welcome", map[string]any{"to": "ada"},
			map[string]any{"attempts": 2, "backoff": map[string]any{"type": "fixed", "delay": 300}}, "node-signup")
		require.NoError(t, err)
		id := b.prefix + "-otelretry"
		require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
			ID: id, Name: workerName, Telemetry: true, Behavior: bullmqoracle.Fail("smtp down"),
		}))
		jobKey := b.prefix + ":" + queueName + ":" + added.JobID
		testkit.WaitFor(t, waitLong, "Node's first failure", func() bool {
			return b.rdb.HExists(ctx, jobKey, "tm").Val()
		})
		require.NoError(t, b.oracle.StopWorker(ctx, id, false))
		st, err := b.oracle.GetState(ctx, b.prefix, queueName, added.JobID)
		require.NoError(t, err)
		require.Equal(t, "delayed", st)
		hashTM := b.rdb.HGet(ctx, jobKey, "tm").Val()

		w, err := drover.NewWorker(b.rdb, queueName, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
			return "sent", nil
		}), &drover.WorkerOptions{Prefix: b.prefix, Name: workerName, Middleware: []drover.WorkerMiddleware{mw.WorkerMiddleware()}})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { _ = w.Close(ctx) })
		testkit.WaitFor(t, waitLong, "the drover process span", func() bool { return len(spans.GetSpans()) == 1 })

		nodeSpans, err := b.oracle.TelemetrySpans(ctx, added.TraceID)
		require.NoError(t, err)
		add := nodeSpan(t, nodeSpans, "add "+queueName+".welcome")
		delay := nodeSpan(t, nodeSpans, "delay "+queueName)
		require.Contains(t, hashTM, delay.SpanID, "Node's hash tm is its delay span")
		process := spans.GetSpans()[0]
		require.Equal(t, "process "+queueName, process.Name)
		require.Equal(t, added.TraceID, process.SpanContext.TraceID().String())
		require.Equal(t, add.SpanID, process.Parent.SpanID().String(), "the retry continues from opts.tm, the add span")
		require.Equal(t, hashTM, b.rdb.HGet(ctx, jobKey, "tm").Val(), "a completion leaves tm as it is, as BullMQ's")
	})

	// opts.tm that is not a JSON object of headers (another tool's): the
	// drover worker runs the job in a trace of its own. Node's traced
	// worker throws parsing it before the job runs and leaves the job in
	// active (to stall, and fail the same way again): not followed.
	t.Run("UndecodableMetadata", func(t *testing.T) {
		t.Parallel()
		for _, by := range []impl{nodeImpl, droverImpl} {
			b := setup(t)
			res, err := b.dq.Add(ctx, "welcome", nil, &drover.JobOptions{Telemetry: &drover.Telemetry{Metadata: "not json"}})
			require.NoError(t, err)
			var spans *tracetest.InMemoryExporter
			if by == nodeImpl {
				id := b.prefix + "-otelbad"
				require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
					ID: id, Name: workerName, Telemetry: true, Behavior: bullmqoracle.ActiveSpan(),
				}))
				// force: a graceful close waits for the job Node never ends.
				t.Cleanup(func() { _ = b.oracle.StopWorker(ctx, id, true) })
			} else {
				var mw *droverotel.Middleware
				mw, spans, _ = otelRig(t)
				w, err := drover.NewWorker(b.rdb, queueName, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
					return "sent", nil
				}), &drover.WorkerOptions{Prefix: b.prefix, Name: workerName, Middleware: []drover.WorkerMiddleware{mw.WorkerMiddleware()}})
				require.NoError(t, err)
				require.NoError(t, w.Start(ctx))
				t.Cleanup(func() { _ = w.Close(ctx) })
			}
			state := waitSettled(t, b, res.Job.ID, 3*time.Second)
			if by == nodeImpl {
				require.Equal(t, "active", state, "Node's worker is stuck on the job")
			} else {
				require.Equal(t, "completed", state)
				process := goSpan(spans, "process "+queueName)
				require.False(t, process.Parent.IsValid(), "a trace of its own")
			}
		}
	})

	t.Run("DroverProducerNodeWorker", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		mw, spans, tp := otelRig(t)
		q, err := drover.NewQueue(b.rdb, queueName, &drover.QueueOptions{Prefix: b.prefix,
			AddMiddleware: []drover.AddMiddleware{mw.AddMiddleware(queueName)}})
		require.NoError(t, err)
		tracedNodeWorker(t, b, b.prefix+"-otel")

		rctx, root := tp.Tracer("test").Start(ctx, "go-signup")
		res, err := q.Add(rctx, "welcome", map[string]any{"to": "ada"}, nil)
		require.NoError(t, err)
		root.End()
		fin, err := b.oracle.WaitUntilFinished(ctx, b.prefix, queueName, res.Job.ID, waitLong)
		require.NoError(t, err)
		require.Equal(t, "completed", fin.State, fin.FailedReason)

		add := goSpan(spans, "add "+queueName+".welcome")
		require.Equal(t, trace.SpanKindProducer, add.SpanKind)
		require.Equal(t, root.SpanContext().SpanID(), add.Parent.SpanID(), "drover: add is the caller's child")
		traceID := root.SpanContext().TraceID().String()

		var process bullmqoracle.NodeSpan
		testkit.WaitFor(t, waitLong, "Node's process span", func() bool {
			nodeSpans, err := b.oracle.TelemetrySpans(ctx, traceID)
			require.NoError(t, err)
			for _, s := range nodeSpans {
				if s.Name == "process "+queueName {
					process = s
					return true
				}
			}
			return false
		})
		require.Equal(t, bullmqoracle.SpanKindConsumer, process.Kind)
		require.Equal(t, traceID, process.TraceID, "one trace id across drover and Node")
		require.Equal(t, add.SpanContext.SpanID().String(), process.ParentSpanID, "Node's process span is the child of drover's add span")
		var inProc bullmqoracle.SpanIDs
		require.NoError(t, json.Unmarshal(fin.ReturnValue, &inProc))
		require.Equal(t, process.SpanID, inProc.SpanID, "Node's processor runs in its process span")
		t.Logf("trace %s: drover %s → drover add %s → Node process %s", traceID, root.SpanContext().SpanID(), add.SpanContext.SpanID(), process.SpanID)
	})

	// A drover FlowProducer's jobs carry its addFlow span's context where
	// BullMQ's telemetry reads it: a Node worker's process span of each job
	// of the tree is that span's child.
	t.Run("DroverFlowProducerNodeWorker", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		mw, spans, tp := otelRig(t)
		fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix,
			Middleware: []drover.FlowMiddleware{mw.FlowMiddleware()}})
		require.NoError(t, err)
		tracedNodeWorker(t, b, b.prefix+"-otelflow")

		rctx, root := tp.Tracer("test").Start(ctx, "go-report")
		tree, err := fp.Add(rctx, drover.FlowJob{Name: "report", QueueName: queueName,
			Children: []drover.FlowJob{{Name: "part", QueueName: queueName}}})
		require.NoError(t, err)
		root.End()
		fin, err := b.oracle.WaitUntilFinished(ctx, b.prefix, queueName, tree.Ref.ID, waitLong)
		require.NoError(t, err)
		require.Equal(t, "completed", fin.State, fin.FailedReason)

		add := goSpan(spans, "addFlow "+queueName)
		require.Equal(t, trace.SpanKindProducer, add.SpanKind)
		require.Equal(t, root.SpanContext().SpanID(), add.Parent.SpanID(), "drover: addFlow is the caller's child")
		traceID := root.SpanContext().TraceID().String()

		var processes []bullmqoracle.NodeSpan
		testkit.WaitFor(t, waitLong, "Node's two process spans", func() bool {
			nodeSpans, err := b.oracle.TelemetrySpans(ctx, traceID)
			require.NoError(t, err)
			processes = processes[:0]
			for _, s := range nodeSpans {
				if s.Name == "process "+queueName {
					processes = append(processes, s)
				}
			}
			return len(processes) == 2
		})
		jobIDs := map[string]bool{}
		for _, p := range processes {
			require.Equal(t, bullmqoracle.SpanKindConsumer, p.Kind)
			require.Equal(t, add.SpanContext.SpanID().String(), p.ParentSpanID, "Node's process span is the child of drover's addFlow span")
			jobIDs[fmt.Sprint(p.Attributes["bullmq.job.id"])] = true
		}
		require.Equal(t, map[string]bool{tree.Ref.ID: true, tree.Children[0].Ref.ID: true}, jobIDs, "one process span per job of the tree")
		var inProc bullmqoracle.SpanIDs
		require.NoError(t, json.Unmarshal(fin.ReturnValue, &inProc))
		require.Equal(t, traceID, inProc.TraceID, "the parent's processor runs in the trace")
	})
}

// tracedNodeWorker starts a Node worker (id) of the test queue with
// BullMQ's telemetry on, each job completing with the ids of the span its
// processor runs in, and stops it at the end of the test.
func tracedNodeWorker(t *testing.T, b *bundle, id string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
		ID: id, Name: workerName, Telemetry: true, Behavior: bullmqoracle.ActiveSpan(),
	}))
	t.Cleanup(func() { _ = b.oracle.StopWorker(ctx, id, false) })
}

// goSpan is the last ended Go span named name (a zero span when none).
func goSpan(spans *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	var found tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == name {
			found = s
		}
	}
	return found
}

// TestDifferentialTelemetryFailureContext: a job failing twice (attempts 2,
// a fixed backoff), once under a Node worker with BullMQ's telemetry on
// (bullmq-otel) and once, on a twin prefix, under a drover worker with
// droverotel. BullMQ writes, on each failed attempt, the context of its
// "delay <queue>" (retry after a backoff) or "fail <queue>" span into the
// job hash field tm, not into opts.tm; drover must leave the same field,
// naming its own span of the same name under its process span, and the
// same Redis state otherwise. A job whose opts ask to omit the context
// (telemetry.omitContext, stored omc) gets no tm on either side.
func TestDifferentialTelemetryFailureContext(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	traceparent := regexp.MustCompile(`^\{"traceparent":"00-([0-9a-f]{32})-([0-9a-f]{16})-01"\}$`)
	for _, omit := range []bool{false, true} {
		t.Run(map[bool]string{false: "Stored", true: "OmitContext"}[omit], func(t *testing.T) {
			t.Parallel()
			var tel *drover.Telemetry
			if omit {
				tel = &drover.Telemetry{OmitContext: true}
			}
			add := func(b *bundle) string {
				res, err := b.dq.Add(ctx, "charge", map[string]any{"a": 1}, &drover.JobOptions{Attempts: 2,
					Backoff: &drover.Backoff{Type: "fixed", Delay: 100 * time.Millisecond}, Telemetry: tel})
				require.NoError(t, err)
				return res.Job.ID
			}
			// spanOf is the named span whose id tm holds: its name and its
			// parent's name.
			type spanOf struct{ name, parent string }

			nb := setup(t)
			nid := add(nb)
			require.NoError(t, nb.oracle.StartWorker(ctx, nb.prefix, queueName, bullmqoracle.WorkerOptions{
				ID: nb.prefix + "-otelfail", Name: workerName, Telemetry: true, Behavior: bullmqoracle.Fail("boom"),
			}))
			t.Cleanup(func() { _ = nb.oracle.StopWorker(ctx, nb.prefix+"-otelfail", false) })
			fin, err := nb.oracle.WaitUntilFinished(ctx, nb.prefix, queueName, nid, waitLong)
			require.NoError(t, err)
			require.Equal(t, "failed", fin.State)
			require.NoError(t, nb.oracle.StopWorker(ctx, nb.prefix+"-otelfail", false))
			nodeTM, err := nb.rdb.HGet(ctx, nb.prefix+":"+queueName+":"+nid, "tm").Result()
			var nodeSpan spanOf
			if !omit {
				require.NoError(t, err, "Node stores tm")
				m := traceparent.FindStringSubmatch(nodeTM)
				require.NotNil(t, m, "Node's tm %s", nodeTM)
				spans, err := nb.oracle.TelemetrySpans(ctx, m[1])
				require.NoError(t, err)
				byID := map[string]bullmqoracle.NodeSpan{}
				for _, s := range spans {
					byID[s.SpanID] = s
				}
				nodeSpan = spanOf{byID[m[2]].Name, byID[byID[m[2]].ParentSpanID].Name}
				require.Equal(t, bullmqoracle.SpanKindInternal, byID[m[2]].Kind)
			} else {
				require.ErrorIs(t, err, redis.Nil, "Node stores no tm for omc")
			}

			db := setup(t)
			did := add(db)
			mw, spans, _ := droverOtelRig(t)
			w, err := drover.NewWorker(db.rdb, queueName, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
				return nil, errors.New("boom")
			}), &drover.WorkerOptions{Prefix: db.prefix, Name: workerName, Middleware: []drover.WorkerMiddleware{mw.WorkerMiddleware()}})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			testkit.WaitFor(t, waitLong, "the drover worker to fail the job", func() bool {
				s, err := db.dq.GetJobState(ctx, did)
				return err == nil && s == drover.StateFailed
			})
			require.NoError(t, w.Close(ctx))
			drvTM, err := db.rdb.HGet(ctx, db.prefix+":"+queueName+":"+did, "tm").Result()
			if !omit {
				require.NoError(t, err, "drover stores tm")
				m := traceparent.FindStringSubmatch(drvTM)
				require.NotNil(t, m, "drover's tm %s", drvTM)
				byID := map[string]tracetest.SpanStub{}
				for _, s := range spans.GetSpans() {
					byID[s.SpanContext.SpanID().String()] = s
				}
				s := byID[m[2]]
				require.Equal(t, trace.SpanKindInternal, s.SpanKind)
				require.Equal(t, m[1], s.SpanContext.TraceID().String())
				require.Equal(t, nodeSpan, spanOf{s.Name, byID[s.Parent.SpanID().String()].Name},
					"tm names the same span on both sides, under the same parent")
				require.Equal(t, []string{"delay " + queueName, "fail " + queueName}, spanNames(spans, trace.SpanKindInternal),
					"one span per failed attempt, as Node's")
			} else {
				require.ErrorIs(t, err, redis.Nil, "drover stores no tm for omc")
			}

			// tm aside (ids of each side's own spans), the same state.
			mask := func(raw *statedump.Snapshot) {
				if k := raw.Keys["q:1"]; k != nil && k.Hash["tm"] != "" {
					k.Hash["tm"] = "<tm>"
				}
			}
			requireSameState(t, comparableDump(t, nb.rdb, nb.prefix, dumpOptions{workersRan: true, rewrite: mask}),
				comparableDump(t, db.rdb, db.prefix, dumpOptions{workersRan: true, rewrite: mask}))
			t.Logf("Node tm %s (%s under %s); drover tm %s", nodeTM, nodeSpan.name, nodeSpan.parent, drvTM)
		})
	}
}

// droverOtelRig is droverotel over a tracer provider recording every
// ended span in memory.
func droverOtelRig(t *testing.T) (*droverotel.Middleware, *tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mw, err := droverotel.New(&droverotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	return mw, spans, tp
}

// spanNames are the names of the ended Go spans of kind, in end order.
func spanNames(spans *tracetest.InMemoryExporter, kind trace.SpanKind) []string {
	var names []string
	for _, s := range spans.GetSpans() {
		if s.SpanKind == kind {
			names = append(names, s.Name)
		}
	}
	return names
}
