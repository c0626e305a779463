package droverotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/droverotel"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/metrics"
)

// TestMetricsMatchPrometheus runs one worker instrumented both ways, package
// metrics' Prometheus hooks and droverotel, and requires the same series:
// names, label sets, counts, and the duration histogram's buckets and
// observation counts.
func TestMetricsMatchPrometheus(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	mw, err := droverotel.New(&droverotel.Options{MeterProvider: mp})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	promHooks := metrics.WorkerHooks(reg, "mail")

	var finished int
	done := make(chan struct{}, 16)
	count := drover.WorkerMiddleware{Finished: func(context.Context, *drover.Job, drover.Finish) { done <- struct{}{} }}
	w, err := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		if job.Name == "bad" {
			return nil, errors.New("nope")
		}
		return "ok", nil
	}), &drover.WorkerOptions{Prefix: prefix, Hooks: promHooks,
		Middleware: []drover.WorkerMiddleware{mw.WorkerMiddleware(), count}})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Close(c))
	})
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "good", nil, nil)
	require.NoError(t, err)
	_, err = q.Add(ctx, "bad", nil, &drover.JobOptions{Attempts: 2})
	require.NoError(t, err)
	testkit.WaitFor(t, 20*time.Second, "three attempts to finish", func() bool {
		for {
			select {
			case <-done:
				finished++
			default:
				return finished >= 3
			}
		}
	})
	// The Prometheus hooks run outermost, so their JobFinished has run
	// too once the innermost Finished reported (innermost runs first):
	// wait for their counts to settle.
	testkit.WaitFor(t, 10*time.Second, "prometheus counts", func() bool {
		return promSeries(t, reg)["drover_jobs_retries_exhausted_total{queue=mail}"] == "1"
	})

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := otelSeries(t, rm)
	want := promSeries(t, reg)
	for k, v := range want {
		if v == "0" {
			delete(want, k) // Prometheus shows a labelled counter from its creation
		}
	}
	require.Equal(t, want, got)
	t.Logf("%d series agree", len(got))
}

// promSeries flattens a Prometheus registry: "name{k=v,...}" → value (a
// counter's value, or a histogram's count and cumulative bucket counts).
func promSeries(t *testing.T, reg *prometheus.Registry) map[string]string {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			if g := m.GetGauge(); g != nil {
				out[key] = fmt.Sprint(g.GetValue())
			}
			if c := m.GetCounter(); c != nil {
				out[key] = fmt.Sprint(c.GetValue())
			}
			if h := m.GetHistogram(); h != nil {
				var b []string
				for _, bk := range h.GetBucket() {
					b = append(b, fmt.Sprintf("le%g:%d", bk.GetUpperBound(), bk.GetCumulativeCount()))
				}
				out[key] = fmt.Sprintf("count=%d %s", h.GetSampleCount(), strings.Join(b, " "))
			}
		}
	}
	return out
}

// otelSeries flattens OpenTelemetry metrics the same way, checking the
// units on the way (a job count, seconds for the duration).
func otelSeries(t *testing.T, rm metricdata.ResourceMetrics) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			key := func(attrs []string) string {
				sort.Strings(attrs)
				return m.Name + "{" + strings.Join(attrs, ",") + "}"
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.Equal(t, "{job}", m.Unit, m.Name)
				require.True(t, d.IsMonotonic, m.Name)
				for _, p := range d.DataPoints {
					var attrs []string
					for _, kv := range p.Attributes.ToSlice() {
						attrs = append(attrs, string(kv.Key)+"="+kv.Value.String())
					}
					out[key(attrs)] = fmt.Sprint(p.Value)
				}
			case metricdata.Histogram[float64]:
				require.Equal(t, "s", m.Unit, m.Name)
				require.True(t, strings.HasSuffix(m.Name, "_seconds"))
				for _, p := range d.DataPoints {
					var attrs []string
					for _, kv := range p.Attributes.ToSlice() {
						attrs = append(attrs, string(kv.Key)+"="+kv.Value.String())
					}
					var b []string
					var cum uint64
					for i, bound := range p.Bounds {
						cum += p.BucketCounts[i]
						b = append(b, fmt.Sprintf("le%g:%d", bound, cum))
					}
					out[key(attrs)] = fmt.Sprintf("count=%d %s", p.Count, strings.Join(b, " "))
				}
			default:
				t.Fatalf("unexpected metric %s of type %T", m.Name, m.Data)
			}
		}
	}
	require.True(t, slices.ContainsFunc(rm.ScopeMetrics, func(sm metricdata.ScopeMetrics) bool { return sm.Scope.Name == droverotel.ScopeName }))
	return out
}

func attrStrings(kvs []attribute.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key) + "=" + kv.Value.String()
	}
	return out
}
