package soak_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
)

// The test binary doubles as a soak worker process: TestMain runs runWorker
// instead of the tests when workerEnv holds a workerSpec (JSON).
const workerEnv = "DROVER_SOAK_WORKER"

type workerSpec struct {
	RedisAddr       string        `json:"redisAddr"` // the fault proxy
	DSN             string        `json:"dsn"`
	Prefix          string        `json:"prefix"`
	Queue           string        `json:"queue"`
	Concurrency     int           `json:"concurrency"`
	LockDuration    time.Duration `json:"lockDuration"`
	StalledInterval time.Duration `json:"stalledInterval"`
}

// jobData is what every soak job carries: the operation it stands for, how
// long it works, and whether it is meant to fail.
type jobData struct {
	Op   string `json:"op"`
	Ms   int    `json:"ms"`
	Fail bool   `json:"fail,omitempty"`
}

// runWorker runs one drover worker until SIGTERM. Each run of a job records
// itself in soak_runs (outside any transaction: re-runs are counted); the
// effect, a soak_effects row, is written under the idempotency ledger, so
// a job that runs twice writes it once.
func runWorker(specJSON string) int {
	var spec workerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", workerEnv, err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: spec.RedisAddr, PoolSize: 4 * spec.Concurrency})
	defer func() { _ = rdb.Close() }()
	pool, err := pgxpool.New(ctx, spec.DSN)
	if err != nil {
		fmt.Fprintf(os.Stderr, "connect to postgres: %v\n", err)
		return 1
	}
	defer pool.Close()
	ledger := idempotency.NewPostgres(pool, nil)

	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		var d jobData
		if err := json.Unmarshal(job.Data, &d); err != nil {
			return nil, drover.Unrecoverable(fmt.Errorf("bad soak job data: %w", err))
		}
		if _, err := pool.Exec(ctx, "INSERT INTO soak_runs (op) VALUES ($1)", d.Op); err != nil {
			return nil, fmt.Errorf("record run: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(d.Ms) * time.Millisecond):
		}
		if d.Fail {
			return nil, drover.Unrecoverable(errors.New("designed failure"))
		}
		_, err := ledger.Do(ctx, idempotency.OpKey("soak", d.Op), func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, err := tx.Exec(ctx, "INSERT INTO soak_effects (op) VALUES ($1)", d.Op)
			return nil, err
		})
		return nil, err
	})
	w, err := drover.NewWorker(rdb, spec.Queue, proc, &drover.WorkerOptions{
		Prefix:          spec.Prefix,
		Concurrency:     spec.Concurrency,
		LockDuration:    spec.LockDuration,
		StalledInterval: spec.StalledInterval,
		MaxStalledCount: 1000,
		Logger:          logger,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "new worker: %v\n", err)
		return 1
	}
	// Redis may be down or paused right now: wait for it, then start (a
	// Start whose ping failed cannot be retried on the same Worker).
	for rdb.Ping(ctx).Err() != nil && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "start worker: %v\n", err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Close(cctx); err != nil {
		logger.Warn("close worker", slog.Any("error", err))
	}
	return 0
}
