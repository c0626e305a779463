// Package metrics exports drover's Prometheus metrics. It is the only drover
// package that imports client_golang: importing drover alone never pulls it in.
//
// Two sources feed it:
//
//   - [WorkerHooks] (or [NewWorkerMetrics]) counts what a worker does, as it
//     happens: jobs started, completed, retried, failed, retries exhausted,
//     attempts cancelled and timed out, stalls recovered, lock renewals failed, and how long attempts took.
//     Attach the hooks with drover.WorkerOptions.Hooks.
//   - [NewQueueCollector] reads queues through an inspect.Inspector at
//     scrape time: jobs per state, paused, the delayed set's size, overdue
//     jobs, clustering, growth and the retry-storm flag.
//
// [NewRegistry] puts the queue collector (and the Go and process collectors)
// in a registry and [Handler] serves a registry. The metrics themselves
// (names, help, labels, what counts) are defined once in internal/metricset,
// which droverotel uses too; the dashboard serves the same series at
// /metrics through metricset's own exposition unless given this Handler, so
// the drover command never compiles client_golang.
//
//	reg, _ := metrics.NewRegistry(ins, nil)
//	w, _ := drover.NewWorker(rdb, "mail", proc, &drover.WorkerOptions{Hooks: metrics.WorkerHooks(reg, "mail")})
//	http.Handle("/metrics", metrics.Handler(reg))
package metrics

import (
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/metricset"
)

// Namespace prefixes every metric name.
const Namespace = metricset.Namespace

// WorkerMetrics are the counters and the duration histogram of workers,
// labelled by queue (internal/metricset defines them). One WorkerMetrics
// serves any number of workers.
type WorkerMetrics struct {
	counters [metricset.NumCounters]*prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// WorkerMetricsOptions configure NewWorkerMetrics. Nil means defaults.
type WorkerMetricsOptions struct {
	// Buckets are the duration histogram's upper bounds in seconds.
	// Defaults to prometheus.DefBuckets (5ms to 10s).
	Buckets []float64
}

// NewWorkerMetrics registers the worker metrics in reg. Registering twice in
// one registry returns metrics that share the first registration's series,
// so every worker may call it. A nil reg, or Buckets out of increasing
// order, is an error.
func NewWorkerMetrics(reg prometheus.Registerer, opts *WorkerMetricsOptions) (*WorkerMetrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: NewWorkerMetrics needs a Registerer, got nil")
	}
	var o WorkerMetricsOptions
	if opts != nil {
		o = *opts
	}
	if o.Buckets == nil {
		o.Buckets = prometheus.DefBuckets
	}
	for _, b := range o.Buckets {
		if math.IsNaN(b) {
			return nil, fmt.Errorf("metrics: WorkerMetricsOptions.Buckets must be numbers, got %v", o.Buckets)
		}
	}
	// client_golang panics on buckets out of order.
	for i := 1; i < len(o.Buckets); i++ {
		if !(o.Buckets[i] > o.Buckets[i-1]) {
			return nil, fmt.Errorf("metrics: WorkerMetricsOptions.Buckets must be in increasing order, got %v", o.Buckets)
		}
	}
	m := &WorkerMetrics{}
	var err error
	for _, c := range metricset.Counters() {
		d := c.Def()
		vec := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: d.Name, Help: d.Help}, d.Labels)
		if m.counters[c], err = register(reg, vec); err != nil {
			return nil, err
		}
	}
	d := metricset.Duration
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: d.Name, Help: d.Help, Buckets: o.Buckets}, d.Labels)
	if m.duration, err = register(reg, vec); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// Hooks returns worker hooks that count into m under the queue label.
func (m *WorkerMetrics) Hooks(queue string) *drover.WorkerHooks {
	var counters [metricset.NumCounters]prometheus.Counter
	for c, vec := range m.counters {
		counters[c] = vec.WithLabelValues(queue)
	}
	return metricset.Hooks(func(c metricset.Counter) { counters[c].Inc() }, func(outcome string, seconds float64) {
		m.duration.WithLabelValues(queue, outcome).Observe(seconds)
	})
}

// WorkerHooks registers the worker metrics in reg (once per registry) and
// returns hooks for a worker of queue. It panics, like
// prometheus.MustRegister, when reg holds other metrics under drover's names.
func WorkerHooks(reg prometheus.Registerer, queue string) *drover.WorkerHooks {
	m, err := NewWorkerMetrics(reg, nil)
	if err != nil {
		panic(err)
	}
	return m.Hooks(queue)
}

// NewRegistry returns a registry holding a queue collector over ins (see
// NewQueueCollector for opts) and the Go runtime and process collectors.
func NewRegistry(ins *inspect.Inspector, opts *CollectorOptions) (*prometheus.Registry, error) {
	qc, err := NewQueueCollector(ins, opts)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{qc, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Handler serves g's metrics in the Prometheus text (or OpenMetrics) format.
// A collector that fails does not fail the scrape: the others are served.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
