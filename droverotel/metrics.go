package droverotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/metricset"
)

// The instruments are the worker metrics internal/metricset defines, with
// the names, units and label keys package metrics' Prometheus series have,
// so the series an OpenTelemetry pipeline exports to Prometheus are the ones
// package metrics serves. (Names already end in _total and _seconds:
// OpenTelemetry's Prometheus translation does not add the suffixes twice.)
const (
	labelQueue = attribute.Key("queue")
	labelOut   = attribute.Key("outcome")
)

type instruments struct {
	counters [metricset.NumCounters]metric.Int64Counter
	duration metric.Float64Histogram
}

func newInstruments(m metric.Meter, buckets []float64) (*instruments, error) {
	in := &instruments{}
	var err error
	for _, c := range metricset.Counters() {
		d := c.Def()
		if in.counters[c], err = m.Int64Counter(d.FullName(), metric.WithDescription(d.Help), metric.WithUnit(d.Unit)); err != nil {
			return nil, fmt.Errorf("droverotel: counter %s: %w", d.FullName(), err)
		}
	}
	d := metricset.Duration
	in.duration, err = m.Float64Histogram(d.FullName(), metric.WithDescription(d.Help),
		metric.WithUnit(d.Unit), metric.WithExplicitBucketBoundaries(buckets...))
	if err != nil {
		return nil, fmt.Errorf("droverotel: histogram %s: %w", d.FullName(), err)
	}
	return in, nil
}

func (in *instruments) add(ctx context.Context, c metricset.Counter, queue string) {
	in.counters[c].Add(ctx, 1, metric.WithAttributes(labelQueue.String(queue)))
}

// finished counts one attempt as package metrics' JobFinished hook does
// (metricset.Finished): an attempt whose outcome was not written
// (OutcomeUnknown) counts nowhere.
func (in *instruments) finished(ctx context.Context, job *drover.Job, f drover.Finish) {
	if f.Outcome == drover.OutcomeUnknown {
		return
	}
	queue := queueOf(job)
	metricset.Finished(job, f.Outcome, f.Err, func(c metricset.Counter) { in.add(ctx, c, queue) })
	in.duration.Record(ctx, f.Took.Seconds(), metric.WithAttributes(labelQueue.String(queue), labelOut.String(f.Outcome.String())))
}

// WorkerHooks returns hooks that count, for a worker of queue, what the
// middleware cannot see: stalled jobs its checker recovered
// (drover_jobs_stalled_total) and locks it failed to renew
// (drover_lock_renewals_failed_total). Set them in drover.WorkerOptions.Hooks
// next to WorkerMiddleware.
func (mw *Middleware) WorkerHooks(queue string) *drover.WorkerHooks {
	return &drover.WorkerHooks{
		LockLost: func(*drover.Job, string) { mw.m.add(context.Background(), metricset.LockLost, queue) },
		Stalled:  func(string, int) { mw.m.add(context.Background(), metricset.Stalled, queue) },
	}
}
