package inspect

import (
	"context"
	"fmt"
	"time"
)

// Where a ThroughputReport's counts come from.
const (
	ThroughputFromMetrics      = "metrics"
	ThroughputFromFinishedSets = "finished-sets"
)

// throughputFromMetrics fills n one-minute buckets ending at end from
// BullMQ's metrics lists; ok is false when no worker writes them.
//
// BullMQ's layout: the hash holds count, prevCount and prevTS (the finish
// time that closed the last data point); the list holds one count per
// minute, newest first, the first for the minute before prevTS's minute.
// The jobs counted since (count - prevCount) all finished in prevTS's
// minute: a later one would have closed that minute. Minutes after it had
// none.
func (i *Inspector) throughputFromMetrics(ctx context.Context, queue string, end time.Time, n int) (rep *ThroughputReport, ok bool, err error) {
	q, err := i.Queue(queue)
	if err != nil {
		return nil, false, err
	}
	rep = &ThroughputReport{Queue: queue, Step: time.Minute, Buckets: make([]ThroughputBucket, n), Source: ThroughputFromMetrics}
	for b := range n {
		rep.Buckets[b].Start = Instant{end.Add(-time.Duration(n-b) * time.Minute)}
	}
	found := false
	for _, kind := range []string{"completed", "failed"} {
		m, err := q.GetMetrics(ctx, kind, 0, int64(n))
		if err != nil {
			return nil, false, fmt.Errorf("read throughput of queue %q: %w", queue, err)
		}
		if m.PrevTS.IsZero() {
			continue
		}
		found = true
		last := m.PrevTS.Truncate(time.Minute)
		for b := range rep.Buckets {
			start := rep.Buckets[b].Start.Time
			var v int64
			switch {
			case start.Equal(last):
				v = m.Count - m.PrevCount
			case start.Before(last):
				if j := int(last.Sub(start)/time.Minute) - 1; j < len(m.Data) {
					v = m.Data[j]
				}
			}
			if kind == "completed" {
				rep.Buckets[b].Completed = v
			} else {
				rep.Buckets[b].Failed = v
			}
		}
	}
	return rep, found, nil
}
