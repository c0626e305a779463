package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/metrics"
)

// TestDefaultMetrics: without Options.Metrics the dashboard serves, without
// client_golang, the series metrics.NewRegistry serves: the same families
// (names, types, labels), and the same values for drover's queue gauges.
func TestDefaultMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := newClient(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for _, delay := range []time.Duration{0, 0, time.Minute} {
		_, err := q.Add(ctx, "send", nil, &drover.JobOptions{Delay: delay})
		require.NoError(t, err)
	}
	h, err := dashboard.New(ins, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close(context.Background())) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	got, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)

	reg, err := metrics.NewRegistry(ins, nil)
	require.NoError(t, err)
	want := gathered(t, reg)
	require.Equal(t, familyShapes(want), familyShapes(got))
	for name, f := range want {
		if name[:7] == "drover_" {
			require.Equal(t, f.String(), got[name].String(), name)
		}
	}
	jobs := map[string]float64{}
	for _, m := range got["drover_queue_jobs"].GetMetric() {
		jobs[m.GetLabel()[1].GetValue()] = m.GetGauge().GetValue()
	}
	require.Equal(t, 2.0, jobs["waiting"])
	require.Equal(t, 1.0, jobs["delayed"])
}

func gathered(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// familyShapes lists "name type" per family.
func familyShapes(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for name, f := range fams {
		out = append(out, name+" "+f.GetType().String())
	}
	sort.Strings(out)
	return out
}
