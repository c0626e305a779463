package idempotency_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestDoUnderPoolExhaustion: a drover worker at concurrency 8 writes each
// job's effect through Ledger.Do over a pool of two connections, on a
// queue it shares with a Node BullMQ worker process, and twice every
// connection of the pool is held elsewhere for longer than a job's lock
// lasts (the pool exhausted: each Do waits for a connection while its
// lock is renewed). Sixty jobs name thirty effects (each twice). Every job
// must complete once, none fail, each effect drover ran be written once
// (the second job of a key is AlreadyCompleted), and the quiet queue must
// keep every queuecheck invariant.
func TestDoUnderPoolExhaustion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.DSN(t))
	require.NoError(t, err)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, pgEffectsTable)
	require.NoError(t, err)
	ledger := idempotency.NewPostgres(pool, nil)

	srv := redistest.Shared(t)
	rdb, prefix := redistest.Client(t)
	node := bullmqoracle.StartWorkerProcess(t, srv.Addr, prefix, "q", bullmqoracle.WorkerOptions{
		Name: "node", Concurrency: 2, LockDuration: time.Second, StalledInterval: 300 * time.Millisecond,
		Behavior: bullmqoracle.Sleep(100*time.Millisecond, "node"),
	})
	var mu sync.Mutex
	statuses := map[idempotency.Status]int{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		var d struct{ K string }
		if err := job.DecodeData(&d); err != nil {
			return nil, err
		}
		res, err := ledger.Do(ctx, idempotency.OpKey("effect", d.K), func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			return []byte(job.ID), pgEffect(ctx, tx, d.K)
		})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		statuses[res.Status]++
		mu.Unlock()
		return "drover", nil
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 8, LockDuration: time.Second,
		StalledInterval: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	closed := false
	t.Cleanup(func() {
		if !closed {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		}
	})

	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	const jobs = 60
	hold := func() {
		var held []*pgxpool.Conn
		for range cfg.MaxConns {
			c, err := pool.Acquire(ctx)
			require.NoError(t, err)
			held = append(held, c)
		}
		time.Sleep(2500 * time.Millisecond) // past the 1 s locks
		for _, c := range held {
			c.Release()
		}
	}
	for i := range jobs {
		_, err := q.Add(ctx, "e", map[string]string{"k": fmt.Sprintf("e%d", i%(jobs/2))}, &drover.JobOptions{JobID: fmt.Sprintf("j%d", i)})
		require.NoError(t, err)
		if i == 5 || i == 35 {
			hold()
		}
	}
	testkit.WaitFor(t, 60*time.Second, "every job to complete", func() bool {
		return rdb.ZCard(ctx, prefix+":q:completed").Val() == jobs
	})
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))
	closed = true
	require.NoError(t, node.Stop(cctx))

	st, err := queuecheck.Read(ctx, rdb, prefix, "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Len(t, st.In("completed"), jobs)
	require.Empty(t, st.In("failed"))
	completions := map[string]int{}
	for _, m := range rdb.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "completed" {
			completions[fmt.Sprint(m.Values["jobId"])]++
		}
	}
	require.Len(t, completions, jobs)
	for id, n := range completions {
		require.Equal(t, 1, n, "job %s completed once", id)
	}
	rows, distinct := pgEffects(t, pool)
	require.Equal(t, distinct, rows, "no effect written twice")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, rows, statuses[idempotency.Claimed], "one effect per claim")
	t.Logf("%d effects written; ledger answers %v; Node ran %d jobs", rows, statuses, jobs-statuses[idempotency.Claimed]-statuses[idempotency.AlreadyCompleted])
}
