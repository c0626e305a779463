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
// in a registry and [Handler] serves a registry; the dashboard mounts it at
// /metrics.
//
//	reg, _ := metrics.NewRegistry(ins, nil)
//	w, _ := drover.NewWorker(rdb, "mail", proc, &drover.WorkerOptions{Hooks: metrics.WorkerHooks(reg, "mail")})
//	http.Handle("/metrics", metrics.Handler(reg))
package metrics

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// Namespace prefixes every metric name.
const Namespace = "drover"

// WorkerMetrics are the counters and the duration histogram of workers,
// labelled by queue. One WorkerMetrics serves any number of workers.
type WorkerMetrics struct {
	started, completed, failed, retried, delayed *prometheus.CounterVec
	exhausted, stalled, lockLost                 *prometheus.CounterVec
	cancelled, timedOut                          *prometheus.CounterVec
	duration                                     *prometheus.HistogramVec
}

// WorkerMetricsOptions configure NewWorkerMetrics. Nil means defaults.
type WorkerMetricsOptions struct {
	// Buckets are the duration histogram's upper bounds in seconds.
	// Defaults to prometheus.DefBuckets (5ms to 10s).
	Buckets []float64
}

// NewWorkerMetrics registers the worker metrics in reg. Registering twice in
// one registry returns metrics that share the first registration's series,
// so every worker may call it.
func NewWorkerMetrics(reg prometheus.Registerer, opts *WorkerMetricsOptions) (*WorkerMetrics, error) {
	var o WorkerMetricsOptions
	if opts != nil {
		o = *opts
	}
	if o.Buckets == nil {
		o.Buckets = prometheus.DefBuckets
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, []string{"queue"})
	}
	m := &WorkerMetrics{
		started:   counter("jobs_started_total", "Attempts started by drover workers."),
		completed: counter("jobs_completed_total", "Jobs completed by drover workers."),
		failed:    counter("jobs_failed_total", "Jobs failed for good (moved to failed) by drover workers."),
		retried:   counter("jobs_retried_total", "Failed attempts that will be retried (at once or after a backoff)."),
		delayed:   counter("jobs_delayed_total", "Attempts that put their job back in the delayed set without spending an attempt (drover.Delay)."),
		exhausted: counter("jobs_retries_exhausted_total", "Jobs failed for good after using every attempt of their budget."),
		stalled:   counter("jobs_stalled_total", "Stalled jobs recovered by the workers' stalled checkers."),
		cancelled: counter("attempts_cancelled_total", "Attempts ended by Queue.CancelJob, whether the job then failed for good or was retried."),
		timedOut:  counter("attempts_timed_out_total", "Attempts that ran past their timeout, whether the job then failed for good or was retried."),
		lockLost:  counter("lock_renewals_failed_total", "Running jobs whose lock a worker failed to renew (the job was lost to the stalled checker or another worker)."),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "job_duration_seconds",
			Help:    "How long attempts ran, by outcome (drover.Outcome's names: completed, retried, retry-delayed, delayed, requeued, failed, failed-unrecoverable, retries-exhausted, cancelled, timed-out).",
			Buckets: o.Buckets,
		}, []string{"queue", "outcome"}),
	}
	var err error
	for _, c := range []**prometheus.CounterVec{&m.started, &m.completed, &m.failed, &m.retried, &m.delayed, &m.exhausted, &m.stalled, &m.lockLost, &m.cancelled, &m.timedOut} {
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	if m.duration, err = register(reg, m.duration); err != nil {
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
	started := m.started.WithLabelValues(queue)
	completed := m.completed.WithLabelValues(queue)
	failed := m.failed.WithLabelValues(queue)
	retried := m.retried.WithLabelValues(queue)
	delayed := m.delayed.WithLabelValues(queue)
	exhausted := m.exhausted.WithLabelValues(queue)
	stalled := m.stalled.WithLabelValues(queue)
	lockLost := m.lockLost.WithLabelValues(queue)
	cancelled := m.cancelled.WithLabelValues(queue)
	timedOut := m.timedOut.WithLabelValues(queue)
	return &drover.WorkerHooks{
		JobStarted: func(*drover.Job) { started.Inc() },
		JobFinished: func(_ *drover.Job, outcome drover.Outcome, took time.Duration, err error) {
			switch {
			case outcome == drover.OutcomeCompleted:
				completed.Inc()
			case outcome == drover.OutcomeDelayed:
				delayed.Inc()
			case outcome.Retried():
				retried.Inc()
			case outcome.Failed():
				failed.Inc()
			}
			if outcome == drover.OutcomeRetriesExhausted {
				exhausted.Inc()
			}
			switch {
			case errors.Is(err, drover.ErrJobCancelled):
				cancelled.Inc()
			case errors.Is(err, drover.ErrJobTimedOut):
				timedOut.Inc()
			}
			m.duration.WithLabelValues(queue, outcome.String()).Observe(took.Seconds())
		},
		LockLost: func(*drover.Job, string) { lockLost.Inc() },
		Stalled:  func(string, int) { stalled.Inc() },
	}
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
