package idempotency_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestDoWhilePostgresIsFrozen: the server freezes (SIGSTOP of the
// postmaster and its backends: a stuck host, connections open) after fn
// wrote its effect and before the claim is completed. Do must return when
// its ctx ends, not wait for the server; once the server thaws, Do with the
// same key runs fn again, and the effect is there once: the frozen
// transaction never committed.
func TestDoWhilePostgresIsFrozen(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	ctx := context.Background()
	pool := srv.Pool(t, "frozen")
	_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE effects (key text NOT NULL)`)
	require.NoError(t, err)
	ledger := idempotency.NewPostgres(pool, nil)

	thawed := true
	thaw := func() {
		if !thawed {
			thawed = true
			require.NoError(t, srv.Signal(syscall.SIGCONT))
		}
	}
	defer thaw()
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ledger.Do(dctx, "pay-1", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			if _, err := tx.Exec(ctx, `INSERT INTO effects VALUES ('pay-1')`); err != nil {
				return nil, err
			}
			thawed = false
			return []byte("ok"), srv.Signal(syscall.SIGSTOP)
		})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(15 * time.Second):
		thaw()
		t.Fatal("Do did not return 15 s after its context ended while PostgreSQL was frozen")
	}
	thaw()

	runs := 0
	testkit := func() (idempotency.Result, error) {
		return ledger.Do(ctx, "pay-1", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			runs++
			_, err := tx.Exec(ctx, `INSERT INTO effects VALUES ('pay-1')`)
			return []byte("ok"), err
		})
	}
	var res idempotency.Result
	for range 50 { // the frozen claim's row lock goes with its backend
		if res, err = testkit(); err == nil {
			break
		}
		require.ErrorIs(t, err, idempotency.ErrInProgressElsewhere)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Status)
	require.Equal(t, 1, runs)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM effects`).Scan(&n))
	require.Equal(t, 1, n)
}
