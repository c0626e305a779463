package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestNilContextIsAnError: a nil context.Context given to the outbox or a
// relay, on PostgreSQL and SQLite, is an error naming it, never a panic;
// no row is written and Redis is untouched. Before, AddTx, Prune, Start
// and Flush panicked with a nil pointer dereference in pgx or
// database/sql (and a panic inside database/sql left the *sql.DB's lock
// held: every later query on it hung).
func TestNilContextIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var nilCtx context.Context
	rdb, prefix := redistest.Client(t)

	pool := pgtest.Pool(t)
	_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(t.TempDir(), "outbox.db")))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
	require.NoError(t, err)
	pgOutbox, liteOutbox := outbox.NewPostgres(pool), outbox.NewSQLite(db)
	relayOpts := &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: prefix}}
	pgRelay, err := outbox.NewRelay(pgOutbox, rdb, relayOpts)
	require.NoError(t, err)
	liteRelay, err := outbox.NewRelay(liteOutbox, rdb, relayOpts)
	require.NoError(t, err)
	pgTx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pgTx.Rollback(ctx) })
	liteTx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = liteTx.Rollback() })

	calls := map[string]func() error{
		"postgres AddTx": func() error { return pgOutbox.AddTx(nilCtx, pgTx, "q", "n", 1, nil) },
		"postgres Prune": func() error { _, err := pgOutbox.Prune(nilCtx, time.Now()); return err },
		"postgres Start": func() error { return pgRelay.Start(nilCtx) },
		"postgres Flush": func() error { _, err := pgRelay.Flush(nilCtx); return err },
		"postgres Close": func() error { return pgRelay.Close(nilCtx) },
		"sqlite AddTx":   func() error { return liteOutbox.AddTx(nilCtx, liteTx, "q", "n", 1, nil) },
		"sqlite Prune":   func() error { _, err := liteOutbox.Prune(nilCtx, time.Now()); return err },
		"sqlite Start":   func() error { return liteRelay.Start(nilCtx) },
		"sqlite Flush":   func() error { _, err := liteRelay.Flush(nilCtx); return err },
		"sqlite Close":   func() error { return liteRelay.Close(nilCtx) },
	}
	for name, call := range calls {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return call()
		}()
		assert.ErrorIs(t, err, drover.ErrInvalidOption, name)
		assert.ErrorContains(t, err, "the context.Context is nil", name)
	}
	require.NoError(t, pgTx.Commit(ctx))
	require.NoError(t, liteTx.Commit())
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM drover_outbox").Scan(&n))
	require.Zero(t, n, "no row written on PostgreSQL")
	require.NoError(t, db.QueryRow("SELECT count(*) FROM drover_outbox").Scan(&n))
	require.Zero(t, n, "no row written on SQLite")
	keys, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "Redis untouched")
	// Both relays still work with a context.
	for _, r := range []*outbox.Relay{pgRelay, liteRelay} {
		_, err := r.Flush(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Close(ctx))
	}
}
