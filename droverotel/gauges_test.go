package droverotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/droverotel"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/metrics"
)

// TestQueueGaugesMatchPrometheus reads the same queues through package
// metrics' QueueCollector and through RegisterQueueGauges: the same series
// (names, labels, values). The delayed set's growth is left out: it is a
// rate between two reads, and the two sides read at different times.
func TestQueueGaugesMatchPrometheus(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	for _, name := range []string{"mail", "bills"} {
		q, err := drover.NewQueue(rdb, name, &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		for i := range 3 {
			_, err = q.Add(ctx, "j", nil, &drover.JobOptions{Delay: time.Duration(i) * time.Hour})
			require.NoError(t, err)
		}
		if name == "bills" {
			require.NoError(t, q.Pause(ctx))
		}
	}

	qc, err := metrics.NewQueueCollector(ins, &metrics.CollectorOptions{Queues: []string{"mail", "bills"}})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(qc))
	want := promSeries(t, reg)

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	mw, err := droverotel.New(&droverotel.Options{MeterProvider: mp})
	require.NoError(t, err)
	_, err = mw.RegisterQueueGauges(ins, &droverotel.QueueGaugeOptions{Queues: []string{"mail", "bills"}})
	require.NoError(t, err)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			add := func(attrs []string, v any) {
				sort.Strings(attrs)
				got[m.Name+"{"+strings.Join(attrs, ",")+"}"] = fmt.Sprint(v)
			}
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(attrStrings(p.Attributes.ToSlice()), p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					add(attrStrings(p.Attributes.ToSlice()), p.Value)
				}
			}
		}
	}
	for _, m := range []map[string]string{want, got} {
		for k := range m {
			if strings.HasPrefix(k, "drover_delayed_growth") || !strings.HasPrefix(k, "drover_") {
				delete(m, k)
			}
		}
	}
	require.Equal(t, "1", got["drover_queue_paused{queue=bills}"])
	require.Equal(t, "2", got["drover_delayed_jobs{queue=mail}"])
	require.Equal(t, want, got)
	t.Logf("%d series agree", len(got))
}
