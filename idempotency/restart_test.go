package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestManyDoThroughAPostgresRestart: 16 goroutines call Ledger.Do over one
// pool, each key retried until it succeeds as a job would be, and
// PostgreSQL stops at once (SIGQUIT, as pg_ctl restart -m immediate) while
// about 16 of them are inside their function with their transaction open,
// then starts again. The calls in flight fail (or, when a COMMIT's answer
// was lost, read their claim back); the same ledger over the same pool,
// with no process restart, then carries every key: each key's effect is
// written once, its result is recorded, and a key done again is
// AlreadyCompleted with the first result.
func TestManyDoThroughAPostgresRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Own(t)
	dsn, err := srv.CreateDB(ctx, "ledger")
	require.NoError(t, err)
	pool := pgtest.Connect(t, dsn+"&pool_max_conns=16")
	_, err = pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, pgEffectsTable)
	require.NoError(t, err)
	ledger := idempotency.NewPostgres(pool, nil)

	const goroutines, perGoroutine = 16, 25
	var (
		done      atomic.Int64 // keys done
		inEffect  atomic.Int64 // functions running now
		failedMu  sync.Mutex
		failures  = map[string]int{} // error text class -> count
		crashed   = make(chan struct{})
		wg        sync.WaitGroup
		errs      = make(chan error, goroutines)
		deadlines = 60 * time.Second
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				key := fmt.Sprintf("k-%d-%d", g, i)
				start := time.Now()
				for {
					res, err := ledger.Do(ctx, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
						inEffect.Add(1)
						defer inEffect.Add(-1)
						if err := pgEffect(ctx, tx, key); err != nil {
							return nil, err
						}
						_, err := tx.Exec(ctx, "SELECT pg_sleep(0.02)")
						return []byte(key), err
					})
					if err == nil {
						if string(res.Value) != key {
							errs <- fmt.Errorf("%s: result %q", key, res.Value)
							return
						}
						break
					}
					failedMu.Lock()
					switch {
					case errors.Is(err, idempotency.ErrCommitInDoubt):
						failures["commit in doubt"]++
					case errors.Is(err, idempotency.ErrInProgressElsewhere):
						failures["in progress elsewhere"]++
					default:
						failures["other"]++
					}
					failedMu.Unlock()
					if time.Since(start) > deadlines {
						errs <- fmt.Errorf("%s: still failing after %s: %w", key, deadlines, err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				done.Add(1)
			}
		}()
	}

	// Crash while the functions run.
	for start := time.Now(); done.Load() < 60 || inEffect.Load() < goroutines/2; time.Sleep(time.Millisecond) {
		require.Less(t, time.Since(start), 60*time.Second, "the calls did not get going: %d done, %d running", done.Load(), inEffect.Load())
	}
	t.Logf("crash with %d keys done, %d functions running", done.Load(), inEffect.Load())
	srv.Crash()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, srv.Start())
	close(crashed)

	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("failed calls, retried: %v", failures)
	require.NotEmpty(t, failures, "the crash met calls in flight")

	rows, distinct := pgEffects(t, pool)
	require.Equal(t, goroutines*perGoroutine, distinct, "every key's effect")
	require.Equal(t, goroutines*perGoroutine, rows, "each effect once")
	for g := range goroutines {
		key := fmt.Sprintf("k-%d-%d", g, perGoroutine-1)
		res, err := ledger.Do(ctx, key, func(context.Context, pgx.Tx) ([]byte, error) {
			return nil, errors.New("ran twice")
		})
		require.NoError(t, err, key)
		require.Equal(t, idempotency.AlreadyCompleted, res.Status, key)
		require.Equal(t, key, string(res.Value))
	}
	var recorded int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM drover_operations WHERE completed_at IS NOT NULL").Scan(&recorded))
	require.Equal(t, goroutines*perGoroutine, recorded)
	<-crashed
}
