package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// riverImpl drives github.com/riverqueue/river on PostgreSQL, tuned as issue 7
// asks: FetchCooldown at its 1 ms minimum, a small FetchPollInterval
// (-river-poll) and MaxWorkers = the scenario's concurrency. River's job
// scheduler (which makes scheduled jobs available) runs every 5 s and is not
// configurable, which bounds its delayed-job lateness.
type riverImpl struct {
	cfg    config
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	h      handler
}

type riverArgs struct {
	I  int    `json:"i"`
	At int64  `json:"at,omitempty"`
	P  string `json:"p,omitempty"`
}

func (riverArgs) Kind() string { return "bench" }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	impl *riverImpl
}

func (w *riverWorker) Work(ctx context.Context, job *river.Job[riverArgs]) error {
	return w.impl.h(ctx, payload{I: job.Args.I, At: job.Args.At, P: job.Args.P}, job.Attempt)
}

// immediateRetry retries a failed job at once (backoff 0).
type immediateRetry struct{}

func (immediateRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now() }

// expRetry is the "exp" workload's exponential backoff with jitter.
type expRetry struct{}

func (expRetry) NextRetry(j *rivertype.JobRow) time.Time { return time.Now().Add(expDelay(j.Attempt)) }

func newRiver(cfg config) (impl, error) {
	if cfg.PGURL == "" {
		return nil, errors.New("river needs -pg")
	}
	pcfg, err := pgxpool.ParseConfig(cfg.PGURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(cfg.PGMaxConns)
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		return nil, err
	}
	r := &riverImpl{cfg: cfg, pool: pool}
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{impl: r})
	rc := &river.Config{
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: max(cfg.RiverPoll, river.FetchCooldownMin),
		Logger:            slog.New(slog.DiscardHandler),
		RetryPolicy:       immediateRetry{},
		Workers:           workers,
	}
	if cfg.Backoff == "exp" {
		rc.RetryPolicy = expRetry{}
	}
	switch cfg.Scenario {
	case "process", "retry", "latency", "delayed", "mem":
		rc.Queues = map[string]river.QueueConfig{queueName: {MaxWorkers: cfg.Concurrency}}
	}
	r.client, err = river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return r, nil
}

func (r *riverImpl) insertParams(j jobSpec) river.InsertManyParams {
	opts := &river.InsertOpts{Queue: queueName}
	if j.Attempts > 1 {
		opts.MaxAttempts = j.Attempts
	}
	if j.At != 0 {
		opts.ScheduledAt = time.UnixMicro(j.At)
	}
	if j.DedupID != "" {
		// River's deduplication: unique by args (duplicates carry the same i).
		opts.UniqueOpts = river.UniqueOpts{ByArgs: true}
	}
	return river.InsertManyParams{Args: riverArgs{I: j.I, At: j.At, P: j.Pad}, InsertOpts: opts}
}

func (r *riverImpl) Add(ctx context.Context, j jobSpec) error {
	p := r.insertParams(j)
	_, err := r.client.Insert(ctx, p.Args, p.InsertOpts)
	return err
}

// AddBulk uses InsertMany, River's bulk insert that returns the inserted rows
// (InsertManyFast, which uses COPY and returns only a count, is not measured).
func (r *riverImpl) AddBulk(ctx context.Context, js []jobSpec) error {
	ps := make([]river.InsertManyParams, len(js))
	for i, j := range js {
		ps[i] = r.insertParams(j)
	}
	_, err := r.client.InsertMany(ctx, ps)
	return err
}

func (r *riverImpl) Start(ctx context.Context, h handler) error {
	r.h = h
	return r.client.Start(context.WithoutCancel(ctx))
}

func (r *riverImpl) Stop(ctx context.Context) error { return r.client.Stop(ctx) }

func (r *riverImpl) Drained(ctx context.Context, n int) (bool, error) {
	var left int
	err := r.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE queue = $1 AND state <> 'completed'`, queueName).Scan(&left)
	return left == 0, err
}

func (r *riverImpl) Close() { r.pool.Close() }
