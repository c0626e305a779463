package droverotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/seed40057009/drover"
)

// defaultBuckets are Prometheus's default histogram buckets (seconds), the
// ones package metrics uses for drover_job_duration_seconds.
var defaultBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// The instruments have the names, units and label keys of package metrics'
// Prometheus worker metrics, so the series an OpenTelemetry pipeline exports
// to Prometheus are the ones package metrics serves. (Names already end in
// _total and _seconds: OpenTelemetry's Prometheus translation does not add
// the suffixes twice.)
const (
	unitJobs    = "{job}"
	unitSeconds = "s"
	labelQueue  = attribute.Key("queue")
	labelOut    = attribute.Key("outcome")
	labelState  = attribute.Key("state")
)

type instruments struct {
	startedC, completedC, failedC, retriedC, delayedC metric.Int64Counter
	exhaustedC, stalledC, lockLostC                   metric.Int64Counter
	duration                                          metric.Float64Histogram
}

func newInstruments(m metric.Meter, buckets []float64) (*instruments, error) {
	in := &instruments{}
	var err error
	for _, c := range []struct {
		dst        *metric.Int64Counter
		name, help string
	}{
		{&in.startedC, "drover_jobs_started_total", "Attempts started by drover workers."},
		{&in.completedC, "drover_jobs_completed_total", "Jobs completed by drover workers."},
		{&in.failedC, "drover_jobs_failed_total", "Jobs failed for good (moved to failed) by drover workers."},
		{&in.retriedC, "drover_jobs_retried_total", "Failed attempts that will be retried (at once or after a backoff)."},
		{&in.delayedC, "drover_jobs_delayed_total", "Attempts that put their job back in the delayed set without spending an attempt (drover.Delay)."},
		{&in.exhaustedC, "drover_jobs_retries_exhausted_total", "Jobs failed for good after using every attempt of their budget."},
		{&in.stalledC, "drover_jobs_stalled_total", "Stalled jobs recovered by the workers' stalled checkers."},
		{&in.lockLostC, "drover_lock_renewals_failed_total", "Running jobs whose lock a worker failed to renew (the job was lost to the stalled checker or another worker)."},
	} {
		if *c.dst, err = m.Int64Counter(c.name, metric.WithDescription(c.help), metric.WithUnit(unitJobs)); err != nil {
			return nil, fmt.Errorf("droverotel: counter %s: %w", c.name, err)
		}
	}
	in.duration, err = m.Float64Histogram("drover_job_duration_seconds",
		metric.WithDescription("How long attempts ran, by outcome (drover.Outcome's names: completed, retried, retry-delayed, delayed, requeued, failed, failed-unrecoverable, retries-exhausted)."),
		metric.WithUnit(unitSeconds), metric.WithExplicitBucketBoundaries(buckets...))
	if err != nil {
		return nil, fmt.Errorf("droverotel: histogram drover_job_duration_seconds: %w", err)
	}
	return in, nil
}

func (in *instruments) started(ctx context.Context, queue string) {
	in.startedC.Add(ctx, 1, metric.WithAttributes(labelQueue.String(queue)))
}

// finished counts one attempt as package metrics' JobFinished hook does: an
// attempt whose outcome was not written (OutcomeUnknown) counts nowhere.
func (in *instruments) finished(ctx context.Context, queue string, f drover.Finish) {
	if f.Outcome == drover.OutcomeUnknown {
		return
	}
	q := metric.WithAttributes(labelQueue.String(queue))
	switch {
	case f.Outcome == drover.OutcomeCompleted:
		in.completedC.Add(ctx, 1, q)
	case f.Outcome == drover.OutcomeDelayed:
		in.delayedC.Add(ctx, 1, q)
	case f.Outcome.Retried():
		in.retriedC.Add(ctx, 1, q)
	case f.Outcome.Failed():
		in.failedC.Add(ctx, 1, q)
	}
	if f.Outcome == drover.OutcomeRetriesExhausted {
		in.exhaustedC.Add(ctx, 1, q)
	}
	in.duration.Record(ctx, f.Took.Seconds(), metric.WithAttributes(labelQueue.String(queue), labelOut.String(f.Outcome.String())))
}

// WorkerHooks returns hooks that count, for a worker of queue, what the
// middleware cannot see: stalled jobs its checker recovered
// (drover_jobs_stalled_total) and locks it failed to renew
// (drover_lock_renewals_failed_total). Set them in drover.WorkerOptions.Hooks
// next to WorkerMiddleware.
func (mw *Middleware) WorkerHooks(queue string) *drover.WorkerHooks {
	q := metric.WithAttributes(labelQueue.String(queue))
	return &drover.WorkerHooks{
		LockLost: func(*drover.Job, string) { mw.m.lockLostC.Add(context.Background(), 1, q) },
		Stalled:  func(string, int) { mw.m.stalledC.Add(context.Background(), 1, q) },
	}
}
