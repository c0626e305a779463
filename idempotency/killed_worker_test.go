package idempotency_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// Environment of a worker child process (runWorkerChild).
const (
	workerChildEnv       = "DROVER_LEDGER_WORKER" // the PostgreSQL DSN
	workerChildRedisEnv  = "DROVER_LEDGER_WORKER_REDIS"
	workerChildPrefixEnv = "DROVER_LEDGER_WORKER_PREFIX"
)

// runWorkerChild runs a worker whose processor writes its effect through
// Ledger.Do, until it is killed.
func runWorkerChild() int {
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "ledger worker:", err); return 1 }
	pool, err := pgxpool.New(ctx, os.Getenv(workerChildEnv))
	if err != nil {
		return fail(err)
	}
	ledger := idempotency.NewPostgres(pool, nil)
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(workerChildRedisEnv)})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		res, err := ledger.Do(ctx, idempotency.OpKey("effect", job.ID), func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			if err := pgEffect(ctx, tx, job.ID); err != nil {
				return nil, err
			}
			_, err := tx.Exec(ctx, "SELECT pg_sleep($1)", rand.Float64()*0.05)
			return []byte("done"), err
		})
		if err != nil {
			return nil, err
		}
		return string(res.Value), nil
	}), &drover.WorkerOptions{Prefix: os.Getenv(workerChildPrefixEnv), Concurrency: 8,
		LockDuration: time.Second, StalledInterval: 500 * time.Millisecond, MaxStalledCount: 1000,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return fail(err)
	}
	if err := w.Start(ctx); err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	select {} // until killed
}

// TestKilledWorkerProcessesEffectOnce: worker processes whose processor
// writes its effect through Ledger.Do on PostgreSQL are SIGKILLed, one
// after the other, at random moments of their jobs (transactions open,
// commits in flight, results not yet written); each time a new process
// starts. The stalled checks put the killed workers' jobs back, they run
// again, and in the end every job completed and every effect is written
// exactly once (the ledger answers AlreadyCompleted for a job whose
// effect committed before the kill).
func TestKilledWorkerProcessesEffectOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupPostgres(t)
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	const jobs = 300
	for i := range jobs {
		_, err := q.Add(ctx, "effect", nil, &drover.JobOptions{JobID: fmt.Sprintf("j%d", i), Attempts: 50})
		require.NoError(t, err)
	}
	start := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$") // runWorkerChild takes over in TestMain
		cmd.Env = append(os.Environ(), workerChildEnv+"="+b.dsn, workerChildRedisEnv+"="+redistest.Shared(t).Addr,
			workerChildPrefixEnv+"="+prefix)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		buf := make([]byte, 6)
		_, err = out.Read(buf)
		require.NoError(t, err, "worker process did not get ready")
		return cmd
	}
	completed := func() int64 { return direct.ZCard(ctx, prefix+":q:completed").Val() }
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	kills := 0
	for kills < 6 && completed() < jobs-50 {
		cmd := start()
		before := completed()
		// Killed once it has got going: some of its jobs done, others in
		// flight.
		testkit.WaitFor(t, 30*time.Second, "the worker process to complete jobs", func() bool { return completed() > before })
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		kills++
	}
	require.GreaterOrEqual(t, kills, 3, "the workers were killed while jobs were left")
	start()
	testkit.WaitFor(t, 60*time.Second, "every job to complete", func() bool { return completed() == jobs })
	rows, distinct := b.effects(t)
	require.Equal(t, jobs, distinct, "every job's effect")
	require.Equal(t, jobs, rows, "each effect once, after %d kills", kills)
	require.Zero(t, direct.ZCard(ctx, prefix+":q:failed").Val())
	stalls := 0
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		if m.Values["event"] == "stalled" {
			stalls++
		}
	}
	t.Logf("%d kills, %d stalled jobs recovered", kills, stalls)
	require.Positive(t, stalls, "killed workers left jobs in flight")
}
