package idempotency_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNilContextIsAnError: a nil context.Context given to the ledger is an
// error naming it, on PostgreSQL and SQLite, never a panic, and nothing is
// claimed or written. Before, Do, ClaimTx, CompleteTx and Prune panicked
// with a nil pointer dereference in pgx or database/sql.
func TestNilContextIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var nilCtx context.Context
	const want = "the context.Context is nil"
	noPanic := func(name string, fn func() error) error {
		t.Helper()
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
					t.Errorf("%s panicked on a nil context: %v", name, r)
				}
			}()
			err = fn()
		}()
		return err
	}

	pg := setupPostgres(t)
	pgTx := pg.begin(t)
	lite := setupSQLite(t)
	liteTx := lite.begin(t)
	calls := map[string]func() error{
		"postgres Do": func() error {
			_, err := pg.ledger.Do(nilCtx, "k", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
				return nil, pg.writeEffect(ctx, tx, "k")
			})
			return err
		},
		"postgres ClaimTx":    func() error { _, err := pg.ledger.ClaimTx(nilCtx, pgTx, "k"); return err },
		"postgres CompleteTx": func() error { return pg.ledger.CompleteTx(nilCtx, pgTx, "k", nil) },
		"postgres Prune":      func() error { _, err := pg.ledger.Prune(nilCtx, time.Now()); return err },
		"sqlite Do": func() error {
			_, err := lite.ledger.Do(nilCtx, "k", func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
				return nil, lite.writeEffect(ctx, tx, "k")
			})
			return err
		},
		"sqlite ClaimTx":    func() error { _, err := lite.ledger.ClaimTx(nilCtx, liteTx, "k"); return err },
		"sqlite CompleteTx": func() error { return lite.ledger.CompleteTx(nilCtx, liteTx, "k", nil) },
		"sqlite Prune":      func() error { _, err := lite.ledger.Prune(nilCtx, time.Now()); return err },
	}
	for name, call := range calls {
		err := noPanic(name, call)
		assert.ErrorContains(t, err, want, name)
	}
	rows, _ := pg.effects(t)
	require.Zero(t, rows)
	rows, _ = lite.effects(t)
	require.Zero(t, rows)
	// The key is still free.
	res, err := pg.ledger.Do(ctx, "k", func(ctx context.Context, tx pgx.Tx) ([]byte, error) { return nil, pg.writeEffect(ctx, tx, "k") })
	require.NoError(t, err)
	require.Equal(t, "claimed", res.Status.String())
}
