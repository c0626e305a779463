package metricset_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/metricset"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/metrics"
)

// promText is what client_golang's text encoder writes for g.
func promText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return b.String()
}

func ourText(t *testing.T, fams []metricset.Family) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, metricset.Write(&b, fams))
	return b.String()
}

// TestWriteAsClientGolang: the same counters, gauges, histogram and summary
// (label values and help that need escaping, several series to sort) come
// out byte for byte as client_golang's text encoder writes them.
func TestWriteAsClientGolang(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "a \\ back\nslash"}, []string{"queue"})
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "a_gauge", Help: "gauge"}, []string{"queue", "state"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "h", Buckets: []float64{0.1, 1, 2.5}}, []string{"queue", "outcome"})
	up := prometheus.NewGauge(prometheus.GaugeOpts{Name: "up", Help: "up"})
	reg.MustRegister(c, g, h, up)
	c.WithLabelValues("b").Add(3)
	c.WithLabelValues(`a"q\ue` + "\nx").Add(1e6)
	g.WithLabelValues("q", "waiting").Set(0.25)
	g.WithLabelValues("q", "active").Set(-2)
	g.WithLabelValues("p", "z").Set(1e-7)
	for _, v := range []float64{0.05, 0.1, 0.7, 3, 9} {
		h.WithLabelValues("q", "completed").Observe(v)
	}
	h.WithLabelValues("a", "failed").Observe(1)
	up.Set(1)
	summary := prometheus.MustNewConstSummary(prometheus.NewDesc("s_seconds", "s", nil, nil), 7, 1.5, map[float64]float64{0: 0.001, 0.5: 0.2, 1: 0.5})
	reg.MustRegister(constCollector{summary})

	ours := []metricset.Family{
		{Name: "up", Help: "up", Type: metricset.TypeGauge, Metrics: []metricset.Metric{{Value: 1}}},
		{Name: "x_total", Help: "a \\ back\nslash", Type: metricset.TypeCounter, Metrics: []metricset.Metric{
			{Labels: []metricset.Label{{Name: "queue", Value: "b"}}, Value: 3},
			{Labels: []metricset.Label{{Name: "queue", Value: `a"q\ue` + "\nx"}}, Value: 1e6},
		}},
		{Name: "a_gauge", Help: "gauge", Type: metricset.TypeGauge, Metrics: []metricset.Metric{
			{Labels: []metricset.Label{{Name: "state", Value: "waiting"}, {Name: "queue", Value: "q"}}, Value: 0.25},
			{Labels: []metricset.Label{{Name: "queue", Value: "q"}, {Name: "state", Value: "active"}}, Value: -2},
			{Labels: []metricset.Label{{Name: "queue", Value: "p"}, {Name: "state", Value: "z"}}, Value: 1e-7},
		}},
		{Name: "h_seconds", Help: "h", Type: metricset.TypeHistogram, Metrics: []metricset.Metric{
			{Labels: []metricset.Label{{Name: "queue", Value: "q"}, {Name: "outcome", Value: "completed"}}, Count: 5, Sum: 0.05 + 0.1 + 0.7 + 3 + 9,
				Buckets: []metricset.Bucket{{UpperBound: 0.1, Count: 2}, {UpperBound: 1, Count: 3}, {UpperBound: 2.5, Count: 3}}},
			{Labels: []metricset.Label{{Name: "queue", Value: "a"}, {Name: "outcome", Value: "failed"}}, Count: 1, Sum: 1,
				Buckets: []metricset.Bucket{{UpperBound: 0.1}, {UpperBound: 1, Count: 1}, {UpperBound: 2.5, Count: 1}}},
		}},
		{Name: "s_seconds", Help: "s", Type: metricset.TypeSummary, Metrics: []metricset.Metric{
			{Count: 7, Sum: 1.5, Quantiles: []metricset.Quantile{{Quantile: 0, Value: 0.001}, {Quantile: 0.5, Value: 0.2}, {Quantile: 1, Value: 0.5}}},
		}},
		{Name: "empty", Help: "no series", Type: metricset.TypeGauge},
	}
	require.Equal(t, promText(t, reg), ourText(t, ours))
}

type constCollector struct{ m prometheus.Metric }

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.Desc() }
func (c constCollector) Collect(ch chan<- prometheus.Metric) { ch <- c.m }

// TestWorkersAsPackageMetrics: the same hook calls counted by Workers and
// by package metrics' WorkerHooks give the same exposition, byte for byte.
func TestWorkersAsPackageMetrics(t *testing.T) {
	t.Parallel()
	require.Equal(t, prometheus.DefBuckets, metricset.DefaultBuckets())
	reg := prometheus.NewRegistry()
	ours := metricset.NewWorkers(nil)
	job := &drover.Job{}
	cancelled := fmt.Errorf("stop: %w", drover.ErrJobCancelled)
	timedOut := fmt.Errorf("late: %w", drover.ErrJobTimedOut)
	for _, queue := range []string{"mail", "audio"} {
		for _, hooks := range []*drover.WorkerHooks{metrics.WorkerHooks(reg, queue), ours.Hooks(queue)} {
			for i, o := range []drover.Outcome{drover.OutcomeCompleted, drover.OutcomeCompleted, drover.OutcomeRetried,
				drover.OutcomeRetryDelayed, drover.OutcomeDelayed, drover.OutcomeRequeued, drover.OutcomeFailed,
				drover.OutcomeFailedUnrecoverable, drover.OutcomeRetriesExhausted, drover.OutcomeCancelled, drover.OutcomeTimedOut} {
				var err error
				switch o {
				case drover.OutcomeCancelled:
					err = cancelled
				case drover.OutcomeTimedOut:
					err = timedOut
				case drover.OutcomeRetried:
					err = timedOut // a timed-out attempt that is retried
				case drover.OutcomeCompleted:
				default:
					err = errors.New("boom")
				}
				hooks.JobStarted(job)
				hooks.JobFinished(job, o, time.Duration(i*i*37)*time.Millisecond, err)
			}
			hooks.Stalled("1", 1)
			hooks.LockLost(job, "2")
			if queue == "audio" {
				hooks.Stalled("3", 1)
			}
		}
	}
	ours.Hooks("idle") // counters at 0, no duration series
	metrics.WorkerHooks(reg, "idle")
	require.Equal(t, promText(t, reg), ourText(t, ours.Families(context.Background())))
}

// TestRuntimeAsClientGolang: Runtime serves the families of client_golang's
// Go and process collectors (names, types, labels), with the same values
// where they do not move between two reads.
func TestRuntimeAsClientGolang(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the process figures are read from /proc")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	want := shapes(mfs)

	var b bytes.Buffer
	require.NoError(t, metricset.Write(&b, metricset.Runtime(context.Background())))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	ours, err := parser.TextToMetricFamilies(&b)
	require.NoError(t, err)
	got := shapes(mapValues(ours))
	require.Equal(t, want, got)

	theirs := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		theirs[mf.GetName()] = mf
	}
	for _, name := range []string{"go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "go_sched_gomaxprocs_threads",
		"process_max_fds", "process_virtual_memory_max_bytes", "process_start_time_seconds", "go_info"} {
		require.Equal(t, theirs[name].GetMetric()[0].String(), ours[name].GetMetric()[0].String(), name)
	}
	rss := ours["process_resident_memory_bytes"].GetMetric()[0].GetGauge().GetValue()
	require.Greater(t, rss, 1e6, "resident memory of a Go test binary")
	require.Greater(t, ours["go_goroutines"].GetMetric()[0].GetGauge().GetValue(), 0.0)
}

// shapes lists "name type labels..." per family.
func shapes(mfs []*dto.MetricFamily) []string {
	var out []string
	for _, mf := range mfs {
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
		}
		out = append(out, strings.Join(append([]string{mf.GetName(), mf.GetType().String()}, labels...), " "))
	}
	sort.Strings(out)
	return out
}

func mapValues(m map[string]*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(m))
	for _, mf := range m {
		out = append(out, mf)
	}
	return out
}

// TestQueueSourceAsQueueCollector: on a real Redis with queues in several
// states (one paused, one with a delayed backlog that raises the storm
// alert), the queue gauges served by Handler are the bytes package metrics'
// QueueCollector writes, served gzipped when asked.
func TestQueueSourceAsQueueCollector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	mail, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for range 3 {
		_, err = mail.Add(ctx, "send", nil, nil)
		require.NoError(t, err)
	}
	require.NoError(t, mail.Pause(ctx))
	later, err := drover.NewQueue(rdb, `odd "name"`, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	jobs := make([]drover.BulkJob, 150)
	for n := range jobs {
		jobs[n] = drover.BulkJob{Name: "later", Opts: &drover.JobOptions{Delay: time.Minute}}
	}
	_, err = later.AddBulk(ctx, jobs)
	require.NoError(t, err)

	qc, err := metrics.NewQueueCollector(ins, nil)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(qc)
	want := promText(t, reg)
	require.Contains(t, want, `drover_queue_paused{queue="mail"} 1`)
	require.Contains(t, want, `drover_retry_storm{queue="odd \"name\""} 1`)

	srv := httptest.NewServer(metricset.Handler(metricset.QueueSource(ins, metricset.ReadOptions{}, 0)))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, metricset.ContentType, resp.Header.Get("Content-Type"))
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(resp.Body)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// TestQueueSourceReportsFailures: a queue that cannot be read is heard by
// Failed and drover_inspect_up says 0, as in package metrics.
func TestQueueSourceReportsFailures(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	var failed []string
	src := metricset.QueueSource(ins, metricset.ReadOptions{Queues: []string{"missing"}, Failed: func(_ context.Context, queue string, err error) {
		failed = append(failed, queue+": "+err.Error())
	}}, 0)
	text := ourText(t, src(context.Background()))
	require.Len(t, failed, 1)
	require.Contains(t, failed[0], "missing: ")
	require.Equal(t, "# HELP drover_inspect_up 1 when the last scrape read every queue, 0 when a read failed.\n# TYPE drover_inspect_up gauge\ndrover_inspect_up 0\n", text)
}
