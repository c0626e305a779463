package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestDoThroughPostgresFaults: a Do whose transaction's connection is
// killed (pg_terminate_backend) while its function runs, one whose
// statement runs out of statement_timeout, and one during which the server
// crashes and restarts (recovery from its WAL) each fail with an error and
// leave no effect; the same ledger, over the same pool, then claims each
// key on a later Do (no process restart; retried while a killed session
// still holds the key, ErrInProgressElsewhere, as a job would be) and
// writes each effect once.
func TestDoThroughPostgresFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Own(t)
	pool := srv.Pool(t, "ledger")
	_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, pgEffectsTable)
	require.NoError(t, err)
	ledger := idempotency.NewPostgres(pool, nil)
	effect := func(key string) func(context.Context, pgx.Tx) ([]byte, error) {
		return func(ctx context.Context, tx pgx.Tx) ([]byte, error) { return []byte(key), pgEffect(ctx, tx, key) }
	}
	redo := func(key string) {
		t.Helper()
		// As a job would be retried: a killed session may hold the key's
		// lock for a moment while it exits (ErrInProgressElsewhere).
		var (
			res idempotency.Result
			err error
		)
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			res, err = ledger.Do(ctx, key, effect(key))
			if !errors.Is(err, idempotency.ErrInProgressElsewhere) || time.Since(start) > 10*time.Second {
				break
			}
		}
		require.NoError(t, err, key)
		require.Equal(t, idempotency.Claimed, res.Status, key)
		res, err = ledger.Do(ctx, key, effect(key))
		require.NoError(t, err, key)
		require.Equal(t, idempotency.AlreadyCompleted, res.Status, key)
	}

	// The connection is killed while the function runs.
	_, err = ledger.Do(ctx, "terminated", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if err := pgEffect(ctx, tx, "terminated"); err != nil {
			return nil, err
		}
		var pid int
		if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return nil, err
		}
		_, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
		return nil, err
	})
	require.Error(t, err, "the transaction's connection was killed")
	t.Logf("killed: %v", err)
	rows, _ := pgEffects(t, pool)
	require.Zero(t, rows)
	redo("terminated")

	// A statement runs out of statement_timeout.
	_, err = ledger.Do(ctx, "timed-out", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if err := pgEffect(ctx, tx, "timed-out"); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '50ms'"); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, "SELECT pg_sleep(2)")
		return nil, err
	})
	require.ErrorContains(t, err, "statement timeout")
	t.Logf("timed out: %v", err)
	rows, _ = pgEffects(t, pool)
	require.Equal(t, 1, rows, "only the first key's effect")
	redo("timed-out")

	// The server crashes while the function runs, and comes back.
	_, err = ledger.Do(ctx, "crashed", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if err := pgEffect(ctx, tx, "crashed"); err != nil {
			return nil, err
		}
		srv.Crash()
		require.NoError(t, srv.Start())
		return nil, nil
	})
	require.Error(t, err, "the transaction died with the server")
	t.Logf("crashed: %v", err)
	rows, _ = pgEffects(t, pool)
	require.Equal(t, 2, rows, "the crashed transaction left no effect")
	redo("crashed")

	rows, distinct := pgEffects(t, pool)
	require.Equal(t, 3, rows, "one effect per key")
	require.Equal(t, 3, distinct)
}
