package metricset

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/seed40057009/drover"
)

// Workers holds the worker counters and duration histograms of any number
// of workers, by queue, for Handler: what package metrics' WorkerMetrics
// holds in client_golang vectors.
type Workers struct {
	buckets []float64

	mu     sync.Mutex
	queues map[string]*workerQueue
}

type workerQueue struct {
	counts [numCounters]atomic.Uint64

	mu        sync.Mutex
	durations map[string]*histogram // by outcome name
}

type histogram struct {
	perBucket []uint64 // observations in (bound[i-1], bound[i]]
	count     uint64
	sum       float64
}

// NewWorkers returns empty worker metrics whose duration histograms have
// the upper bounds buckets (DefaultBuckets when nil).
func NewWorkers(buckets []float64) *Workers {
	if buckets == nil {
		buckets = DefaultBuckets()
	}
	buckets = slices.Clone(buckets)
	slices.Sort(buckets)
	return &Workers{buckets: buckets, queues: map[string]*workerQueue{}}
}

// Hooks returns hooks for a worker of queue. The queue's counters are
// served (at 0) from now on; a duration series once an attempt ended so.
func (w *Workers) Hooks(queue string) *drover.WorkerHooks {
	w.mu.Lock()
	q := w.queues[queue]
	if q == nil {
		q = &workerQueue{durations: map[string]*histogram{}}
		w.queues[queue] = q
	}
	w.mu.Unlock()
	return Hooks(func(c Counter) { q.counts[c].Add(1) }, func(outcome string, seconds float64) {
		q.mu.Lock()
		defer q.mu.Unlock()
		h := q.durations[outcome]
		if h == nil {
			h = &histogram{perBucket: make([]uint64, len(w.buckets))}
			q.durations[outcome] = h
		}
		if i, _ := slices.BinarySearch(w.buckets, seconds); i < len(w.buckets) {
			h.perBucket[i]++
		}
		h.count++
		h.sum += seconds
	})
}

// Families are the counters and the duration histogram as they stand (a
// Source).
func (w *Workers) Families(context.Context) []Family {
	w.mu.Lock()
	queues := maps.Clone(w.queues)
	w.mu.Unlock()
	fams := make([]Family, 0, numCounters+1)
	for _, c := range Counters() {
		d := c.Def()
		f := Family{Name: d.FullName(), Help: d.Help, Type: TypeCounter}
		for name, q := range queues {
			f.Metrics = append(f.Metrics, Metric{Labels: []Label{{"queue", name}}, Value: float64(q.counts[c].Load())})
		}
		fams = append(fams, f)
	}
	dur := Family{Name: Duration.FullName(), Help: Duration.Help, Type: TypeHistogram}
	for name, q := range queues {
		q.mu.Lock()
		for outcome, h := range q.durations {
			m := Metric{Labels: []Label{{"queue", name}, {"outcome", outcome}}, Count: h.count, Sum: h.sum}
			cum := uint64(0)
			for i, b := range w.buckets {
				cum += h.perBucket[i]
				m.Buckets = append(m.Buckets, Bucket{UpperBound: b, Count: cum})
			}
			dur.Metrics = append(dur.Metrics, m)
		}
		q.mu.Unlock()
	}
	return append(fams, dur)
}
