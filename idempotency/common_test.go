package idempotency_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/pgmigrate"
)

func TestMain(m *testing.M) {
	// A re-executed copy of this binary is a claimer process of the
	// concurrency test (see concurrency_test.go), not a test run.
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(workerChildEnv) != "" {
		os.Exit(runWorkerChild())
	}
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testBundle is a migrated database with an effects table, and the ledger
// over it. Tx is the database's transaction type.
type testBundle[Tx any] struct {
	ledger *idempotency.Ledger[Tx]
	logs   *testkit.SyncBuffer
	// dsn reaches the database from another process.
	dsn      string
	begin    func(t *testing.T) Tx
	commit   func(t *testing.T, tx Tx)
	rollback func(t *testing.T, tx Tx)
	// writeEffect inserts a row into the effects table: the side effect
	// whose count the tests check.
	writeEffect func(ctx context.Context, tx Tx, key string) error
	// effects returns the effects table's row count and distinct keys.
	effects func(t *testing.T) (rows, distinct int)
	// exec runs SQL outside of the ledger.
	exec func(t *testing.T, sql string, args ...any)
}

func testLogger(w *testkit.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

const (
	pgEffectsTable   = "CREATE TABLE effects (id bigserial PRIMARY KEY, op_key text NOT NULL, pid integer NOT NULL)"
	liteEffectsTable = "CREATE TABLE effects (id INTEGER PRIMARY KEY, op_key TEXT NOT NULL, pid INTEGER NOT NULL)"
	pgWriteEffect    = "INSERT INTO effects (op_key, pid) VALUES ($1, $2)"
	liteWriteEffect  = "INSERT INTO effects (op_key, pid) VALUES (?1, ?2)"
	countEffects     = "SELECT count(*), count(DISTINCT op_key) FROM effects"
)

func setupPostgres(t *testing.T) *testBundle[pgx.Tx] {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, pgEffectsTable)
	require.NoError(t, err)

	logs := &testkit.SyncBuffer{}
	return &testBundle[pgx.Tx]{
		ledger: idempotency.NewPostgres(pool, &idempotency.Options{Logger: testLogger(logs)}),
		logs:   logs,
		dsn:    pool.Config().ConnString(),
		begin: func(t *testing.T) pgx.Tx {
			t.Helper()
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback(ctx) })
			return tx
		},
		commit: func(t *testing.T, tx pgx.Tx) {
			t.Helper()
			require.NoError(t, tx.Commit(ctx))
		},
		rollback: func(t *testing.T, tx pgx.Tx) {
			t.Helper()
			require.NoError(t, tx.Rollback(ctx))
		},
		writeEffect: pgEffect,
		effects: func(t *testing.T) (int, int) {
			t.Helper()
			return pgEffects(t, pool)
		},
		exec: func(t *testing.T, sql string, args ...any) {
			t.Helper()
			_, err := pool.Exec(ctx, sql, args...)
			require.NoError(t, err)
		},
	}
}

func pgEffect(ctx context.Context, tx pgx.Tx, key string) error {
	_, err := tx.Exec(ctx, pgWriteEffect, key, os.Getpid())
	return err
}

func pgEffects(t *testing.T, pool *pgxpool.Pool) (rows, distinct int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(), countEffects).Scan(&rows, &distinct))
	return rows, distinct
}

// sqliteDSN is how every process of a test opens the same SQLite file:
// writers wait for each other for up to 30s, readers never wait (WAL).
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
}

func openSQLite(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func setupSQLite(t *testing.T) *testBundle[*sql.Tx] {
	t.Helper()
	ctx := context.Background()
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "ledger.db"))
	db := openSQLite(t, dsn)
	_, err := pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, liteEffectsTable)
	require.NoError(t, err)

	logs := &testkit.SyncBuffer{}
	return &testBundle[*sql.Tx]{
		ledger: idempotency.NewSQLite(db, &idempotency.Options{Logger: testLogger(logs)}),
		logs:   logs,
		dsn:    dsn,
		begin: func(t *testing.T) *sql.Tx {
			t.Helper()
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback() })
			return tx
		},
		commit: func(t *testing.T, tx *sql.Tx) {
			t.Helper()
			require.NoError(t, tx.Commit())
		},
		rollback: func(t *testing.T, tx *sql.Tx) {
			t.Helper()
			require.NoError(t, tx.Rollback())
		},
		writeEffect: liteEffect,
		effects: func(t *testing.T) (int, int) {
			t.Helper()
			return liteEffects(t, db)
		},
		exec: func(t *testing.T, sql string, args ...any) {
			t.Helper()
			_, err := db.ExecContext(ctx, sql, args...)
			require.NoError(t, err)
		},
	}
}

func liteEffect(ctx context.Context, tx *sql.Tx, key string) error {
	_, err := tx.ExecContext(ctx, liteWriteEffect, key, os.Getpid())
	return err
}

func liteEffects(t *testing.T, db *sql.DB) (rows, distinct int) {
	t.Helper()
	require.NoError(t, db.QueryRow(countEffects).Scan(&rows, &distinct))
	return rows, distinct
}

// exampleDB opens a migrated SQLite database in a temporary directory, with
// the business table of the examples: charges. The examples use SQLite so
// they run anywhere; on PostgreSQL, only the constructor and the
// transaction type change (NewPostgres, pgx.Tx).
func exampleDB() (db *sql.DB, cleanup func()) {
	dir, err := os.MkdirTemp("", "idempotency-example-")
	if err != nil {
		panic(err)
	}
	db, err = sql.Open("sqlite", sqliteDSN(filepath.Join(dir, "app.db")))
	if err != nil {
		panic(err)
	}
	cleanup = func() {
		db.Close()
		os.RemoveAll(dir)
	}
	ctx := context.Background()
	if _, err := pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil); err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE charges (order_id TEXT NOT NULL, cents INTEGER NOT NULL)"); err != nil {
		panic(err)
	}
	return db, cleanup
}
