package drover

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Metrics are a queue's per-minute counts of jobs finished for good by
// workers with WorkerOptions.Metrics (Node's or drover's): BullMQ's
// getMetrics result.
type Metrics struct {
	// Count is every job counted so far.
	Count int64
	// PrevTS is when the last data point was closed; PrevCount is Count then.
	PrevTS    time.Time
	PrevCount int64
	// Data are the requested per-minute counts, newest minute first (the
	// minute in progress is not among them yet).
	Data []int64
	// Points is how many data points are stored.
	Points int64
}

// GetMetrics reads the metrics of kind "completed" or "failed", data points
// start to end (inclusive indexes, newest first; end -1 = all).
func (q *Queue) GetMetrics(ctx context.Context, kind string, start, end int64) (*Metrics, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if kind != "completed" && kind != "failed" {
		return nil, optionError("GetMetrics kind must be \"completed\" or \"failed\", got %q", kind)
	}
	key := q.k.Metrics(kind)
	var meta *redis.SliceCmd
	var data *redis.StringSliceCmd
	var n *redis.IntCmd
	if err := pipelineWithin(ctx, q, true, func(p redis.Pipeliner) error {
		meta = p.HMGet(ctx, key, "count", "prevTS", "prevCount")
		data = p.LRange(ctx, key+":data", start, end)
		n = p.LLen(ctx, key+":data")
		return nil
	}); err != nil {
		return nil, fmt.Errorf("get %s metrics of queue %q: %w", kind, q.name, err)
	}
	num := func(v any) int64 {
		s, _ := v.(string)
		f, _ := strconv.ParseFloat(s, 64)
		return int64(f)
	}
	mv := meta.Val()
	m := &Metrics{Count: num(mv[0]), PrevCount: num(mv[2]), Points: n.Val()}
	if ts := num(mv[1]); ts != 0 {
		m.PrevTS = time.UnixMilli(ts)
	}
	for _, s := range data.Val() {
		v, _ := strconv.ParseFloat(s, 64)
		m.Data = append(m.Data, int64(v))
	}
	return m, nil
}
