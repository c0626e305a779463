package main

import (
	"context"
	"encoding/json"
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
