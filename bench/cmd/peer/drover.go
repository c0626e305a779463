package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed40057009/drover"
)

// droverImpl drives drover with its defaults except Concurrency, on the
// BullMQ key layout (prefix "bull"), so its Redis state is comparable with
// Node BullMQ's.
type droverImpl struct {
	cfg   config
	rdb   *redis.Client
	queue *drover.Queue
	w     *drover.Worker
	flows *drover.FlowProducer
}

const droverPrefix = "bull"

func newDrover(cfg config) (impl, error) {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	q, err := drover.NewQueue(rdb, queueName, &drover.QueueOptions{Prefix: droverPrefix})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &droverImpl{cfg: cfg, rdb: rdb, queue: q}, nil
}

func droverOpts(j jobSpec) *drover.JobOptions {
	var o drover.JobOptions
	if j.Attempts > 1 {
		o.Attempts = j.Attempts
		o.Backoff = &drover.Backoff{Type: drover.BackoffFixed, Delay: 0}
		if j.Backoff == "exp" {
			o.Backoff = &drover.Backoff{Type: drover.BackoffExponential, Delay: expBase, Jitter: expJitter}
		}
	}
	if j.DedupID != "" {
		o.Deduplication = &drover.Deduplication{ID: j.DedupID}
	}
	o.JobID = j.JobID
	if j.Remove {
		o.RemoveOnComplete = &drover.Retention{Remove: true}
	}
	if j.At != 0 {
		o.Delay = time.Until(time.UnixMicro(j.At))
	}
	return &o
}

func (d *droverImpl) Add(ctx context.Context, j jobSpec) error {
	_, err := d.queue.Add(ctx, queueName, payload{I: j.I, At: j.At, P: j.Pad}, droverOpts(j))
	return err
}

func (d *droverImpl) AddBulk(ctx context.Context, js []jobSpec) error {
	bulk := make([]drover.BulkJob, len(js))
	for i, j := range js {
		bulk[i] = drover.BulkJob{Name: queueName, Data: payload{I: j.I, At: j.At, P: j.Pad}, Opts: droverOpts(j)}
	}
	_, err := d.queue.AddBulk(ctx, bulk)
	return err
}

func (d *droverImpl) Start(ctx context.Context, h handler) error {
	w, err := drover.NewWorker(d.rdb, queueName, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		var p payload
		if err := json.Unmarshal(job.Data, &p); err != nil {
			return nil, err
		}
		return nil, h(ctx, p, job.AttemptsMade+1)
	}), &drover.WorkerOptions{Concurrency: d.cfg.Concurrency, Prefix: droverPrefix})
	if err != nil {
		return err
	}
	d.w = w
	return w.Start(context.WithoutCancel(ctx))
}

func (d *droverImpl) Stop(ctx context.Context) error {
	if d.w == nil {
		return nil
	}
	return d.w.Close(ctx)
}

// Drained: once every job was handled, the queue is drained when none is
// left waiting, active (its finish not yet written), delayed or prioritized.
func (d *droverImpl) Drained(ctx context.Context, n int) (bool, error) {
	counts, err := d.queue.GetJobCounts(ctx, drover.StateWaiting, drover.StateActive, drover.StateDelayed, drover.StatePrioritized, drover.StatePaused)
	if err != nil {
		return false, err
	}
	var left int64
	for _, c := range counts {
		left += c
	}
	return left == 0, nil
}

func (d *droverImpl) Close() { _ = d.rdb.Close() }

// AddFlow adds flow k with drover's FlowProducer: one script call per tree.
func (d *droverImpl) AddFlow(ctx context.Context, k, children int) error {
	if d.flows == nil {
		fp, err := drover.NewFlowProducer(d.rdb, &drover.FlowProducerOptions{Prefix: droverPrefix})
		if err != nil {
			return err
		}
		d.flows = fp
	}
	kids := make([]drover.FlowJob, children)
	for c := range kids {
		kids[c] = drover.FlowJob{Name: queueName, QueueName: queueName, Data: payload{I: k*children + c}}
	}
	_, err := d.flows.Add(ctx, drover.FlowJob{Name: "parent", QueueName: queueName, Data: payload{I: -(k + 1)}, Children: kids})
	return err
}

// RunScheduler runs a drover job scheduler (BullMQ's layout) with a worker
// at concurrency 1 until n runs started, then removes it.
func (d *droverImpl) RunScheduler(ctx context.Context, every time.Duration, n int) ([]float64, error) {
	late := make([]float64, 0, n)
	var mu sync.Mutex
	all := make(chan struct{})
	w, err := drover.NewWorker(d.rdb, queueName, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if len(late) < n {
			due, err := schedulerRunDue(job.ID)
			if err != nil {
				return nil, err
			}
			late = append(late, float64(now.Sub(due).Microseconds())/1000)
			if len(late) == n {
				close(all)
			}
		}
		return nil, nil
	}), &drover.WorkerOptions{Concurrency: 1, Prefix: droverPrefix})
	if err != nil {
		return nil, err
	}
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	defer func() { _ = w.Close(context.WithoutCancel(ctx)) }()
	if _, err := d.queue.UpsertJobScheduler(ctx, "bench-scheduler", drover.RepeatOptions{Every: every}, &drover.JobTemplate{Name: queueName, Data: payload{}}); err != nil {
		return nil, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return nil, fmt.Errorf("only %d of %d scheduler runs before the timeout", len(late), n)
	}
	if _, err := d.queue.RemoveJobScheduler(ctx, "bench-scheduler"); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(late), nil
}
