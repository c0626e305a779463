package idempotency_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/pgmigrate"
)

// nestedLimit bounds the outer Do of the nested tests: an inner Do that
// waits for its own caller ends with it instead of hanging the test.
const nestedLimit = 5 * time.Second

// TestDoInsideDo: a Do called from inside another Do's function on the same
// database, through the ctx it was handed, that could only wait for the
// outer Do's transaction is refused at once with ErrNestedDo, and the outer
// Do goes on. On SQLite with one connection the inner Do used to wait for
// that connection until ctx ended (forever without a deadline); with more
// it waited out the busy timeout for the write lock the outer transaction
// held, then failed with "database is locked".
func TestDoInsideDo(t *testing.T) {
	t.Parallel()

	t.Run("SQLiteOneConnection", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		db := openSQLite(t, sqliteDSN(filepath.Join(t.TempDir(), "ledger.db")))
		db.SetMaxOpenConns(1)
		_, err := pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
		require.NoError(t, err)
		ledger := idempotency.NewSQLite(db, nil)
		other := idempotency.NewSQLite(db, nil) // another ledger on the same handle is the same database

		for _, c := range []struct {
			name, inner string
			ledger      *idempotency.Ledger[*sql.Tx]
			want        string
		}{
			{"SameKey", "outer-1", ledger, `idempotency: do operation "outer-1": ` +
				`idempotency: Do inside the function of a Do it would wait for: ` +
				`the enclosing Do holds operation "outer-1" on this database`},
			{"OtherKey", "inner", ledger, `idempotency: do operation "inner": ` +
				`idempotency: Do inside the function of a Do it would wait for: ` +
				`the enclosing Do of operation "outer-2" holds this SQLite database's write lock ` +
				`(claim inside its transaction with ClaimTx and CompleteTx instead)`},
			{"OtherLedger", "inner", other, `idempotency: do operation "inner": ` +
				`idempotency: Do inside the function of a Do it would wait for: ` +
				`the enclosing Do of operation "outer-3" holds this SQLite database's write lock ` +
				`(claim inside its transaction with ClaimTx and CompleteTx instead)`},
		} {
			outerKey := map[string]string{"SameKey": "outer-1", "OtherKey": "outer-2", "OtherLedger": "outer-3"}[c.name]
			dctx, cancel := context.WithTimeout(ctx, nestedLimit)
			start := time.Now()
			var innerErr error
			res, err := ledger.Do(dctx, outerKey, func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
				_, innerErr = c.ledger.Do(ctx, c.inner, func(context.Context, *sql.Tx) ([]byte, error) {
					return nil, nil
				})
				return []byte("outer"), nil
			})
			cancel()
			require.ErrorIs(t, innerErr, idempotency.ErrNestedDo, c.name)
			require.EqualError(t, innerErr, c.want, c.name)
			require.Less(t, time.Since(start), nestedLimit/2, c.name)
			require.NoError(t, err, c.name)
			require.Equal(t, idempotency.Claimed, res.Status, c.name)
		}

		// The way to claim another key in the same unit of work: in the
		// outer Do's transaction.
		res, err := ledger.Do(ctx, "outer-4", func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
			claim, err := ledger.ClaimTx(ctx, tx, "inner")
			if err != nil || claim.Status != idempotency.Claimed {
				return nil, err
			}
			return nil, ledger.CompleteTx(ctx, tx, "inner", []byte("in"))
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status)
		res, err = ledger.Do(ctx, "inner", func(context.Context, *sql.Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "inner", Status: idempotency.AlreadyCompleted, Value: []byte("in")}, res)
	})

	t.Run("SQLiteBusyTimeout", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		bundle := setupSQLite(t) // several connections, a 30 s busy timeout
		dctx, cancel := context.WithTimeout(ctx, nestedLimit)
		defer cancel()
		var innerErr error
		_, err := bundle.ledger.Do(dctx, "outer", func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
			_, innerErr = bundle.ledger.Do(ctx, "inner", func(context.Context, *sql.Tx) ([]byte, error) { return nil, nil })
			return nil, nil
		})
		require.ErrorIs(t, innerErr, idempotency.ErrNestedDo)
		require.NoError(t, err)
	})

	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		bundle := setupPostgres(t)
		dctx, cancel := context.WithTimeout(ctx, nestedLimit)
		defer cancel()
		var same, other error
		var otherRes idempotency.Result
		_, err := bundle.ledger.Do(dctx, "outer", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, same = bundle.ledger.Do(ctx, "outer", func(context.Context, pgx.Tx) ([]byte, error) { return nil, nil })
			// Another key is another transaction, which PostgreSQL runs
			// beside this one: allowed.
			otherRes, other = bundle.ledger.Do(ctx, "other", func(context.Context, pgx.Tx) ([]byte, error) { return []byte("o"), nil })
			return nil, nil
		})
		require.NoError(t, err)
		require.ErrorIs(t, same, idempotency.ErrNestedDo)
		require.EqualError(t, same, `idempotency: do operation "outer": `+
			`idempotency: Do inside the function of a Do it would wait for: `+
			`the enclosing Do holds operation "outer" on this database`)
		require.NoError(t, other)
		require.Equal(t, idempotency.Result{Key: "other", Status: idempotency.Claimed, Value: []byte("o")}, otherRes)
	})
}
