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
)

// CollectorTimeoutDefault bounds one scrape's reads.
const CollectorTimeoutDefault = 5 * time.Second

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

// QueueCollector reports queues through an inspect.Inspector at scrape time.
type QueueCollector struct {
	ins  *inspect.Inspector
	opts CollectorOptions

	up, jobs, paused, delayed, overdue, clustering, growth, storm *prometheus.Desc
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return &QueueCollector{
		ins:        ins,
		opts:       o,
		up:         desc("inspect_up", "1 when the last scrape read every queue, 0 when a read failed."),
		jobs:       desc("queue_jobs", "Jobs per queue and state.", "queue", "state"),
		paused:     desc("queue_paused", "1 when the queue is paused.", "queue"),
		delayed:    desc("delayed_jobs", "Size of the queue's delayed set (scheduled jobs and jobs waiting for backoff).", "queue"),
		overdue:    desc("delayed_overdue_jobs", "Delayed jobs already due.", "queue"),
		clustering: desc("delayed_clustering_ratio", "Share of the delayed jobs due within the horizon that fall in the busiest storm window (see inspect.StormOptions).", "queue"),
		growth:     desc("delayed_growth_jobs_per_second", "Growth of the delayed set in jobs per second, once known.", "queue"),
		storm:      desc("retry_storm", "1 when a retry-storm alert (clustering or growth) fires.", "queue"),
	}, nil
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.jobs, c.paused, c.delayed, c.overdue, c.clustering, c.growth, c.storm} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	up := 1.0
	fail := func(queue string, err error) {
		up = 0
		c.opts.Logger.WarnContext(ctx, "metrics scrape failed", slog.String(logkey.Queue, queue), slog.Any(logkey.Error, err))
	}
	queues := c.opts.Queues
	if queues == nil {
		var err error
		if queues, err = c.ins.Queues(ctx); err != nil {
			fail("", err)
		}
	}
	for _, q := range queues {
		info, err := c.ins.QueueInfo(ctx, q)
		if err != nil {
			fail(q, err)
			continue
		}
		for _, s := range inspect.States {
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(info.Counts.Get(s)), q, string(s))
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, boolf(info.Paused), q)
		if c.opts.SkipDelayedStats {
			continue
		}
		st, err := c.ins.DelayedStats(ctx, q)
		if err != nil {
			fail(q, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.delayed, prometheus.GaugeValue, float64(st.Count), q)
		ch <- prometheus.MustNewConstMetric(c.overdue, prometheus.GaugeValue, float64(st.Overdue), q)
		ch <- prometheus.MustNewConstMetric(c.clustering, prometheus.GaugeValue, st.Clustering, q)
		if st.GrowthKnown {
			ch <- prometheus.MustNewConstMetric(c.growth, prometheus.GaugeValue, st.Growth, q)
		}
		ch <- prometheus.MustNewConstMetric(c.storm, prometheus.GaugeValue, boolf(st.Storm()), q)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
