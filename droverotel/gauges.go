package droverotel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/metricset"
)

// QueueGaugeOptions configure RegisterQueueGauges. Nil means defaults; the
// fields mean what metrics.CollectorOptions' fields mean.
type QueueGaugeOptions struct {
	// Queues are the queues to report. Defaults to every queue the
	// Inspector finds under its prefix at each collection.
	Queues []string
	// Timeout bounds one collection's reads. Defaults to 5 s, as
	// metrics.CollectorTimeoutDefault.
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
	o.Timeout = cmp.Or(o.Timeout, metricset.ScrapeTimeoutDefault)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := mw.meter
	// One instrument per metricset gauge, integer or float as its values.
	ints := map[metricset.Gauge]metric.Int64ObservableGauge{}
	floats := map[metricset.Gauge]metric.Float64ObservableGauge{}
	var all []metric.Observable
	var errs []error
	for _, g := range metricset.Gauges() {
		d := g.Def()
		if g.Float() {
			fg, err := m.Float64ObservableGauge(d.FullName(), metric.WithUnit(d.Unit), metric.WithDescription(d.Help))
			floats[g] = fg
			all, errs = append(all, fg), append(errs, err)
		} else {
			ig, err := m.Int64ObservableGauge(d.FullName(), metric.WithUnit(d.Unit), metric.WithDescription(d.Help))
			ints[g] = ig
			all, errs = append(all, ig), append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("droverotel: queue gauges: %w", err)
	}
	return m.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		metricset.Read(ctx, ins, metricset.ReadOptions{
			Queues:           o.Queues,
			SkipDelayedStats: o.SkipDelayedStats,
			Failed: func(ctx context.Context, queue string, err error) {
				o.Logger.WarnContext(ctx, "queue gauges read failed", slog.String(logkey.Queue, queue), slog.Any(logkey.Error, err))
			},
		}, func(s metricset.Sample) {
			labels := s.Gauge.Def().Labels
			attrs := make([]attribute.KeyValue, len(labels))
			for i, l := range labels {
				attrs[i] = attribute.String(l, s.LabelValues[i])
			}
			if s.Gauge.Float() {
				obs.ObserveFloat64(floats[s.Gauge], s.Value, metric.WithAttributes(attrs...))
			} else {
				obs.ObserveInt64(ints[s.Gauge], int64(s.Value), metric.WithAttributes(attrs...))
			}
		})
		return nil
	}, all...)
}
