package idempotency_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
)

// The concurrency test of the idempotency kit (issue 4, acceptance 3): 50
// goroutines in this process and 2 more processes (this test binary,
// re-executed) claim the same 1,000 operation keys, all starting at the same
// moment; every claimer walks every key, writing an effect row in the claim's
// transaction when it wins. The effects table has no unique constraint, so a
// duplicate effect would show as an extra row. The children run fewer
// goroutines than the parent only to keep the test's run time down: every
// claimer costs 1,000 transactions.
const (
	concurrentKeys            = 1000
	concurrentGoroutines      = 50
	concurrentChildren        = 2
	concurrentChildGoroutines = 10
)

// Environment of a claimer child process.
const (
	childEnv           = "DROVER_IDEMPOTENCY_CLAIMER" // "postgres" or "sqlite"
	childDSNEnv        = "DROVER_IDEMPOTENCY_DSN"
	childGoroutinesEnv = "DROVER_IDEMPOTENCY_GOROUTINES"
)

// claimStats counts one process's calls of Do.
type claimStats struct {
	Executions int64 `json:"executions"`  // calls of Do
	Effects    int64 `json:"effects"`     // Claimed, committed
	Suppressed int64 `json:"suppressed"`  // AlreadyCompleted
	InProgress int64 `json:"in_progress"` // ErrInProgressElsewhere, retried
}

func (s *claimStats) add(o claimStats) {
	s.Executions += o.Executions
	s.Effects += o.Effects
	s.Suppressed += o.Suppressed
	s.InProgress += o.InProgress
}

// doFunc is one Do call that writes the effect of key.
type doFunc func(ctx context.Context, key string) (idempotency.Result, error)

func concurrentKey(i int) string { return idempotency.OpKey("concurrency", strconv.Itoa(i)) }

func effectResult(key string) []byte { return []byte("done:" + key) }

func pgDo(ledger *idempotency.Ledger[pgx.Tx]) doFunc {
	return func(ctx context.Context, key string) (idempotency.Result, error) {
		return ledger.Do(ctx, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			return effectResult(key), pgEffect(ctx, tx, key)
		})
	}
}

func liteDo(ledger *idempotency.Ledger[*sql.Tx]) doFunc {
	return func(ctx context.Context, key string) (idempotency.Result, error) {
		return ledger.Do(ctx, key, func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
			return effectResult(key), liteEffect(ctx, tx, key)
		})
	}
}

// claimAll runs goroutines that each claim every key until it is done:
// half walk the keys in order, so that they collide on the same key at the
// same moment, half in a random order of their own.
func claimAll(ctx context.Context, goroutines int, do doFunc) (claimStats, error) {
	var (
		wg       sync.WaitGroup
		total    claimStats
		mu       sync.Mutex
		firstErr error
	)
	for g := range goroutines {
		wg.Go(func() {
			order := make([]int, concurrentKeys)
			for i := range order {
				order[i] = i
			}
			if g%2 == 1 {
				rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			stats, err := claimKeys(ctx, order, do)
			mu.Lock()
			defer mu.Unlock()
			total.add(stats)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return total, firstErr
}

func claimKeys(ctx context.Context, order []int, do doFunc) (claimStats, error) {
	var stats claimStats
	for _, i := range order {
		key := concurrentKey(i)
		for {
			stats.Executions++
			res, err := do(ctx, key)
			if errors.Is(err, idempotency.ErrInProgressElsewhere) {
				// What a job does: fail this attempt, retry a little later.
				stats.InProgress++
				time.Sleep(100 * time.Microsecond)
				continue
			}
			if err != nil {
				return stats, fmt.Errorf("key %s: %w", key, err)
			}
			switch res.Status {
			case idempotency.Claimed:
				stats.Effects++
			case idempotency.AlreadyCompleted:
				stats.Suppressed++
				if string(res.Value) != string(effectResult(key)) {
					return stats, fmt.Errorf("key %s: recorded result %q, want %q", key, res.Value, effectResult(key))
				}
			default:
				return stats, fmt.Errorf("key %s: unexpected status %s", key, res.Status)
			}
			break
		}
	}
	return stats, nil
}

// runChild is the main of a claimer child process: it opens the database,
// says "ready", waits for "go" on stdin, claims, and prints its claimStats.
func runChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "claimer:", err)
		return 1
	}
	ctx := context.Background()
	goroutines, err := strconv.Atoi(os.Getenv(childGoroutinesEnv))
	if err != nil {
		return fail(err)
	}
	dsn := os.Getenv(childDSNEnv)
	var do doFunc
	switch os.Getenv(childEnv) {
	case "postgres":
		pool, err := pgxpool.New(ctx, dsn+"&pool_max_conns="+strconv.Itoa(goroutines))
		if err != nil {
			return fail(err)
		}
		defer pool.Close()
		if err := pool.Ping(ctx); err != nil {
			return fail(err)
		}
		do = pgDo(idempotency.NewPostgres(pool, nil))
	case "sqlite":
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return fail(err)
		}
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			return fail(err)
		}
		do = liteDo(idempotency.NewSQLite(db, nil))
	default:
		return fail(fmt.Errorf("unknown %s %q", childEnv, os.Getenv(childEnv)))
	}

	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail(fmt.Errorf("wait for go: %w", err))
	}
	stats, err := claimAll(ctx, goroutines, do)
	if err != nil {
		return fail(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(stats); err != nil {
		return fail(err)
	}
	return 0
}

// child is a running claimer process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

func startChild(t *testing.T, dialect, dsn string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$") // runChild takes over in TestMain
	cmd.Env = append(os.Environ(),
		childEnv+"="+dialect,
		childDSNEnv+"="+dsn,
		childGoroutinesEnv+"="+strconv.Itoa(concurrentChildGoroutines),
	)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	line, err := c.stdout.ReadString('\n')
	require.NoError(t, err, "claimer process did not get ready")
	require.Equal(t, "ready\n", line)
	return c
}

func (c *child) wait(t *testing.T) claimStats {
	t.Helper()
	var stats claimStats
	require.NoError(t, json.NewDecoder(c.stdout).Decode(&stats))
	require.NoError(t, c.cmd.Wait())
	return stats
}

func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	type testBundle struct {
		dialect string
		dsn     string
		do      doFunc
		effects func(t *testing.T) (rows, distinct int)
		ledger  func(t *testing.T) (rows, completed int)
	}

	run := func(t *testing.T, bundle *testBundle) {
		t.Helper()
		children := make([]*child, concurrentChildren)
		for i := range children {
			children[i] = startChild(t, bundle.dialect, bundle.dsn)
		}

		start := time.Now()
		var (
			parent    claimStats
			parentErr error
			done      = make(chan struct{})
		)
		go func() {
			defer close(done)
			parent, parentErr = claimAll(ctx, concurrentGoroutines, bundle.do)
		}()
		for _, c := range children {
			_, err := io.WriteString(c.stdin, "go\n")
			require.NoError(t, err)
		}
		<-done
		require.NoError(t, parentErr)

		total := parent
		perProcess := []claimStats{parent}
		for _, c := range children {
			stats := c.wait(t)
			perProcess = append(perProcess, stats)
			total.add(stats)
		}
		elapsed := time.Since(start)

		rows, distinct := bundle.effects(t)
		ledgerRows, completed := bundle.ledger(t)
		t.Logf("%s: %d goroutines + %d processes x %d goroutines, %d keys, %s: executions=%d effects=%d suppressed=%d in_progress_retries=%d; "+
			"effects table rows=%d distinct=%d; ledger rows=%d completed=%d; per process %+v",
			bundle.dialect, concurrentGoroutines, concurrentChildren, concurrentChildGoroutines, concurrentKeys, elapsed.Round(time.Millisecond),
			total.Executions, total.Effects, total.Suppressed, total.InProgress,
			rows, distinct, ledgerRows, completed, perProcess)

		require.Equal(t, concurrentKeys, rows, "exactly one effect per key")
		require.Equal(t, concurrentKeys, distinct)
		require.EqualValues(t, concurrentKeys, total.Effects, "exactly one Claimed per key across processes")
		require.Equal(t, concurrentKeys, ledgerRows)
		require.Equal(t, concurrentKeys, completed)
		claimers := int64(concurrentGoroutines + concurrentChildren*concurrentChildGoroutines)
		require.EqualValues(t, claimers*concurrentKeys, total.Effects+total.Suppressed, "every claimer settled every key")
		require.Equal(t, total.Effects+total.Suppressed+total.InProgress, total.Executions)
	}

	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()

		base := setupPostgres(t)
		pool := pgtest.Connect(t, base.dsn+"&pool_max_conns="+strconv.Itoa(concurrentGoroutines))
		run(t, &testBundle{
			dialect: "postgres",
			dsn:     base.dsn,
			do:      pgDo(idempotency.NewPostgres(pool, nil)),
			effects: base.effects,
			ledger: func(t *testing.T) (rows, completed int) {
				t.Helper()
				require.NoError(t, pool.QueryRow(ctx, ledgerCount).Scan(&rows, &completed))
				return rows, completed
			},
		})
	})

	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()

		base := setupSQLite(t)
		db := openSQLite(t, base.dsn)
		run(t, &testBundle{
			dialect: "sqlite",
			dsn:     base.dsn,
			do:      liteDo(idempotency.NewSQLite(db, nil)),
			effects: base.effects,
			ledger: func(t *testing.T) (rows, completed int) {
				t.Helper()
				require.NoError(t, db.QueryRowContext(ctx, ledgerCount).Scan(&rows, &completed))
				return rows, completed
			},
		})
	})
}

const ledgerCount = "SELECT count(*), count(completed_at) FROM drover_operations"
