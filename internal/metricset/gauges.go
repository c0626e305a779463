package metricset

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/bounded"
)

// Gauge is one of the queue gauges.
type Gauge int

// The queue gauges, in the order Gauges lists them.
const (
	Up Gauge = iota
	QueueJobs
	QueuePaused
	DelayedJobs
	DelayedOverdue
	DelayedClustering
	DelayedGrowth
	RetryStorm

	numGauges
)

var gaugeDefs = [numGauges]Def{
	Up:                {Name: "inspect_up", Help: "1 when the last scrape read every queue, 0 when a read failed."},
	QueueJobs:         {Name: "queue_jobs", Help: "Jobs per queue and state.", Unit: UnitJobs, Labels: []string{"queue", "state"}},
	QueuePaused:       {Name: "queue_paused", Help: "1 when the queue is paused.", Labels: queueLabel},
	DelayedJobs:       {Name: "delayed_jobs", Help: "Size of the queue's delayed set (scheduled jobs and jobs waiting for backoff).", Unit: UnitJobs, Labels: queueLabel},
	DelayedOverdue:    {Name: "delayed_overdue_jobs", Help: "Delayed jobs already due.", Unit: UnitJobs, Labels: queueLabel},
	DelayedClustering: {Name: "delayed_clustering_ratio", Help: "Share of the delayed jobs due within the horizon that fall in the busiest storm window (see inspect.StormOptions).", Unit: "1", Labels: queueLabel},
	DelayedGrowth:     {Name: "delayed_growth_jobs_per_second", Help: "Growth of the delayed set in jobs per second, once known.", Unit: "{job}/s", Labels: queueLabel},
	RetryStorm:        {Name: "retry_storm", Help: "1 when a retry-storm alert (clustering or growth) fires.", Labels: queueLabel},
}

// Def is the gauge's definition.
func (g Gauge) Def() Def { return gaugeDefs[g] }

// Float reports whether the gauge's values are fractions (OpenTelemetry
// observes the others as integers).
func (g Gauge) Float() bool { return g == DelayedClustering || g == DelayedGrowth }

// Gauges lists every queue gauge.
func Gauges() []Gauge {
	gs := make([]Gauge, numGauges)
	for i := range gs {
		gs[i] = Gauge(i)
	}
	return gs
}

// Sample is one value of a gauge; LabelValues are in the order of the
// gauge's Labels.
type Sample struct {
	Gauge       Gauge
	LabelValues []string
	Value       float64
}

// ReadOptions configure Read.
type ReadOptions struct {
	// Queues are the queues to report; nil means every queue the Inspector
	// finds under its prefix.
	Queues []string
	// SkipDelayedStats leaves out the delayed-set gauges (one pipeline of
	// ZCOUNTs per queue).
	SkipDelayedStats bool
	// Failed hears each read that failed (queue "" for the listing); the
	// other queues are still read, and Up is 0.
	Failed func(ctx context.Context, queue string, err error)
}

// Read reads the queue gauges through ins and passes each sample to emit,
// queue after queue, Up last.
//
// ctx bounds the reads even when ins's client ignores ctx's deadline (a
// go-redis client without ContextTimeoutEnabled, see internal/bounded):
// when ctx ends first, Failed hears why and emit gets Up 0 alone, so a
// scrape of a Redis that stopped answering says so within its budget
// rather than outlast the scraper's own timeout and lose the gauge that
// says Redis is down.
func Read(ctx context.Context, ins *inspect.Inspector, o ReadOptions, emit func(Sample)) {
	// The reads run apart and hand their samples back; once abandoned they
	// report nothing more.
	var abandoned atomic.Bool
	failed := o.Failed
	o.Failed = func(ctx context.Context, queue string, err error) {
		if failed != nil && !abandoned.Load() {
			failed(ctx, queue, err)
		}
	}
	samples, err := bounded.Call(ctx, func(ctx context.Context) ([]Sample, error) {
		var samples []Sample
		read(ctx, ins, o, func(s Sample) { samples = append(samples, s) })
		return samples, nil
	})
	if err != nil {
		abandoned.Store(true)
		if failed != nil {
			failed(ctx, "", err)
		}
		samples = []Sample{{Gauge: Up, Value: 0}}
	}
	for _, s := range samples {
		emit(s)
	}
}

func read(ctx context.Context, ins *inspect.Inspector, o ReadOptions, emit func(Sample)) {
	up := 1.0
	fail := func(queue string, err error) {
		up = 0
		o.Failed(ctx, queue, err)
	}
	queues := o.Queues
	if queues == nil {
		var err error
		if queues, err = ins.Queues(ctx); err != nil {
			fail("", err)
		}
	}
	for _, q := range queues {
		info, err := ins.QueueInfo(ctx, q)
		if err != nil {
			fail(q, err)
			continue
		}
		for _, s := range inspect.States {
			emit(Sample{QueueJobs, []string{q, string(s)}, float64(info.Counts.Get(s))})
		}
		emit(Sample{QueuePaused, []string{q}, b01(info.Paused)})
		if o.SkipDelayedStats {
			continue
		}
		st, err := ins.DelayedStats(ctx, q)
		if err != nil {
			fail(q, err)
			continue
		}
		emit(Sample{DelayedJobs, []string{q}, float64(st.Count)})
		emit(Sample{DelayedOverdue, []string{q}, float64(st.Overdue)})
		emit(Sample{DelayedClustering, []string{q}, st.Clustering})
		if st.GrowthKnown {
			emit(Sample{DelayedGrowth, []string{q}, st.Growth})
		}
		emit(Sample{RetryStorm, []string{q}, b01(st.Storm())})
	}
	emit(Sample{Gauge: Up, Value: up})
}

func b01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ScrapeTimeoutDefault bounds one scrape's reads of the queue gauges.
const ScrapeTimeoutDefault = 5 * time.Second

// QueueSource reads the queue gauges through ins at each scrape, its reads
// bounded by timeout (ScrapeTimeoutDefault when 0), for Handler.
func QueueSource(ins *inspect.Inspector, o ReadOptions, timeout time.Duration) Source {
	timeout = cmp.Or(timeout, ScrapeTimeoutDefault)
	return func(ctx context.Context) []Family {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		fams := make([]Family, numGauges)
		for _, g := range Gauges() {
			d := g.Def()
			fams[g] = Family{Name: d.FullName(), Help: d.Help, Type: TypeGauge}
		}
		Read(ctx, ins, o, func(s Sample) {
			labels := make([]Label, len(s.LabelValues))
			for i, name := range s.Gauge.Def().Labels {
				labels[i] = Label{name, s.LabelValues[i]}
			}
			fams[s.Gauge].Metrics = append(fams[s.Gauge].Metrics, Metric{Labels: labels, Value: s.Value})
		})
		return fams
	}
}
