package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/metricset"
)

// CollectorTimeoutDefault bounds one scrape's reads.
const CollectorTimeoutDefault = metricset.ScrapeTimeoutDefault

// CollectorOptions configure NewQueueCollector. Nil means defaults.
type CollectorOptions struct {
	// Queues are the queues to report. Defaults to every queue the
	// Inspector finds under its prefix at each scrape.
	Queues []string
	// Timeout bounds one scrape's reads. Defaults to CollectorTimeoutDefault.
	Timeout time.Duration
	// SkipDelayedStats leaves out the delayed-set analytics (one pipeline
	// of ZCOUNTs per queue per scrape).
	SkipDelayedStats bool
	// Logger receives scrape errors. Defaults to discarding.
	Logger *slog.Logger
}

// QueueCollector reports queues through an inspect.Inspector at scrape time
// (the gauges internal/metricset defines).
type QueueCollector struct {
	ins   *inspect.Inspector
	opts  CollectorOptions
	descs []*prometheus.Desc // by metricset.Gauge
}

// NewQueueCollector returns a collector over ins.
func NewQueueCollector(ins *inspect.Inspector, opts *CollectorOptions) (*QueueCollector, error) {
	if ins == nil {
		return nil, errors.New("metrics: NewQueueCollector needs an Inspector, got nil")
	}
	var o CollectorOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = CollectorTimeoutDefault
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("metrics: CollectorOptions.Timeout must be positive, got %s", o.Timeout)
	}
	for _, q := range o.Queues {
		// A name no queue can have would only ever be missing from the
		// scrape, silently.
		if _, err := ins.Queue(q); err != nil {
			return nil, fmt.Errorf("metrics: CollectorOptions.Queues: %w", err)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &QueueCollector{ins: ins, opts: o}
	for _, g := range metricset.Gauges() {
		d := g.Def()
		c.descs = append(c.descs, prometheus.NewDesc(d.FullName(), d.Help, d.Labels, nil))
	}
	return c, nil
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	metricset.Read(ctx, c.ins, metricset.ReadOptions{
		Queues:           c.opts.Queues,
		SkipDelayedStats: c.opts.SkipDelayedStats,
		Failed: func(ctx context.Context, queue string, err error) {
			c.opts.Logger.WarnContext(ctx, "metrics scrape failed", slog.String(logkey.Queue, queue), slog.Any(logkey.Error, err))
		},
	}, func(s metricset.Sample) {
		ch <- prometheus.MustNewConstMetric(c.descs[s.Gauge], prometheus.GaugeValue, s.Value, s.LabelValues...)
	})
}
