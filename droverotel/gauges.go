package droverotel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/logkey"
)

// QueueGaugeOptions configure RegisterQueueGauges. Nil means defaults; the
// fields mean what metrics.CollectorOptions' fields mean.
type QueueGaugeOptions struct {
	// Queues are the queues to report. Defaults to every queue the
	// Inspector finds under its prefix at each collection.
	Queues []string
	// Timeout bounds one collection's reads. Defaults to 5 s
	// (metrics.CollectorTimeoutDefault).
	Timeout time.Duration
	// SkipDelayedStats leaves out the delayed-set analytics.
	SkipDelayedStats bool
	// Logger receives read errors. Defaults to discarding.
	Logger *slog.Logger
}

// RegisterQueueGauges reports queues through ins whenever the meter's
// reader collects: the gauges of package metrics' QueueCollector under the
// same names and labels (drover_queue_jobs{queue,state}, drover_queue_paused,
// drover_delayed_jobs, drover_delayed_overdue_jobs,
// drover_delayed_clustering_ratio, drover_delayed_growth_jobs_per_second
// once known, drover_retry_storm, drover_inspect_up). Unregister the
// returned registration to stop.
func (mw *Middleware) RegisterQueueGauges(ins *inspect.Inspector, opts *QueueGaugeOptions) (metric.Registration, error) {
	if ins == nil {
		return nil, errors.New("droverotel: RegisterQueueGauges needs an Inspector, got nil")
	}
	var o QueueGaugeOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("droverotel: QueueGaugeOptions.Timeout must be positive, got %s", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := mw.meter
	var errs []error
	ig := func(name, unit, help string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(help))
		errs = append(errs, err)
		return g
	}
	fg := func(name, unit, help string) metric.Float64ObservableGauge {
		g, err := m.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(help))
		errs = append(errs, err)
		return g
	}
	up := ig("drover_inspect_up", "", "1 when the last scrape read every queue, 0 when a read failed.")
	jobs := ig("drover_queue_jobs", unitJobs, "Jobs per queue and state.")
	paused := ig("drover_queue_paused", "", "1 when the queue is paused.")
	delayed := ig("drover_delayed_jobs", unitJobs, "Size of the queue's delayed set (scheduled jobs and jobs waiting for backoff).")
	overdue := ig("drover_delayed_overdue_jobs", unitJobs, "Delayed jobs already due.")
	clustering := fg("drover_delayed_clustering_ratio", "1", "Share of the delayed jobs due within the horizon that fall in the busiest storm window (see inspect.StormOptions).")
	growth := fg("drover_delayed_growth_jobs_per_second", "{job}/s", "Growth of the delayed set in jobs per second, once known.")
	storm := ig("drover_retry_storm", "", "1 when a retry-storm alert (clustering or growth) fires.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("droverotel: queue gauges: %w", err)
	}
	b01 := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	return m.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		ok := int64(1)
		fail := func(queue string, err error) {
			ok = 0
			o.Logger.WarnContext(ctx, "queue gauges read failed", slog.String(logkey.Queue, queue), slog.Any(logkey.Error, err))
		}
		queues := o.Queues
		if queues == nil {
			var err error
			if queues, err = ins.Queues(ctx); err != nil {
				fail("", err)
			}
		}
		for _, q := range queues {
			qa := metric.WithAttributes(labelQueue.String(q))
			info, err := ins.QueueInfo(ctx, q)
			if err != nil {
				fail(q, err)
				continue
			}
			for _, s := range inspect.States {
				obs.ObserveInt64(jobs, info.Counts.Get(s), metric.WithAttributes(labelQueue.String(q), labelState.String(string(s))))
			}
			obs.ObserveInt64(paused, b01(info.Paused), qa)
			if o.SkipDelayedStats {
				continue
			}
			st, err := ins.DelayedStats(ctx, q)
			if err != nil {
				fail(q, err)
				continue
			}
			obs.ObserveInt64(delayed, st.Count, qa)
			obs.ObserveInt64(overdue, st.Overdue, qa)
			obs.ObserveFloat64(clustering, st.Clustering, qa)
			if st.GrowthKnown {
				obs.ObserveFloat64(growth, st.Growth, qa)
			}
			obs.ObserveInt64(storm, b01(st.Storm()), qa)
		}
		obs.ObserveInt64(up, ok)
		return nil
	}, up, jobs, paused, delayed, overdue, clustering, growth, storm)
}
