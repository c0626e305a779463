package inspect

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Throughput defaults.
const (
	// ThroughputSpanDefault is how far back Throughput looks.
	ThroughputSpanDefault = time.Hour
	// ThroughputStepDefault is the width of one Throughput bucket.
	ThroughputStepDefault = time.Minute
)

// ThroughputBucket counts the jobs that finished in [Start, Start+Step).
type ThroughputBucket struct {
	Start     Instant `json:"start"`
	Completed int64   `json:"completed"`
	Failed    int64   `json:"failed"`
}

// ThroughputReport is a queue's completed and failed jobs per minute.
type ThroughputReport struct {
	Queue string `json:"queue"`
	// Step is the bucket width (ms in JSON).
	Step    time.Duration      `json:"-"`
	Buckets []ThroughputBucket `json:"buckets"`
	// Source says where the counts come from: ThroughputFromMetrics
	// ("metrics", BullMQ's per-minute metrics lists, written by workers
	// with the metrics option: jobs finished by workers without it are not
	// counted) when a worker writes them, else ThroughputFromFinishedSets
	// ("finished-sets", the completed and failed sets scored by finish
	// time: jobs removed on completion or failure are not counted).
	Source string `json:"source"`
}

// Throughput counts queue's jobs that completed and failed per step over
// the last span, oldest bucket first. With a step of one minute and BullMQ's
// metrics lists present (`<queue>:metrics:completed|failed`, see
// drover.WorkerOptions.Metrics) it reads them; otherwise it counts the
// finish times of the jobs the completed and failed sets still hold, one
// pipeline of 2·span/step ZCOUNTs.
func (i *Inspector) Throughput(ctx context.Context, queue string, span, step time.Duration) (*ThroughputReport, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if span <= 0 {
		span = ThroughputSpanDefault
	}
	if step <= 0 {
		step = ThroughputStepDefault
	}
	if span/step > 1440 {
		return nil, fmt.Errorf("inspect: Throughput: at most 1440 buckets, got span %s / step %s", span, step)
	}
	if _, err := i.existing(ctx, queue); err != nil {
		return nil, err
	}
	end := i.now(ctx).Truncate(step).Add(step)
	n := int(span / step)
	if step == time.Minute {
		if rep, ok, err := i.throughputFromMetrics(ctx, queue, end, n); err != nil || ok {
			return rep, err
		}
	}
	k := i.keys(queue)
	rep := &ThroughputReport{Queue: queue, Step: step, Buckets: make([]ThroughputBucket, n), Source: ThroughputFromFinishedSets}
	done := make([]*redis.IntCmd, n)
	failed := make([]*redis.IntCmd, n)
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range n {
			start := end.Add(-time.Duration(n-b) * step)
			rep.Buckets[b].Start = Instant{start}
			lo := strconv.FormatInt(start.UnixMilli(), 10)
			hi := "(" + strconv.FormatInt(start.Add(step).UnixMilli(), 10)
			done[b] = p.ZCount(ctx, k.Completed(), lo, hi)
			failed[b] = p.ZCount(ctx, k.Failed(), lo, hi)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read throughput of queue %q: %w", queue, err)
	}
	for b := range n {
		rep.Buckets[b].Completed, rep.Buckets[b].Failed = done[b].Val(), failed[b].Val()
	}
	return rep, nil
}
