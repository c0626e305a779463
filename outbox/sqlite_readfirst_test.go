package outbox_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestSQLiteBusinessTransactionThatReadsFirst checks what NewSQLite's doc
// says: a business transaction that reads before it writes (WAL, busy
// timeout set) fails with "database is locked" (SQLITE_BUSY_SNAPSHOT)
// when a relay wrote in between, busy timeout or not; begun IMMEDIATE
// (modernc.org/sqlite: _txlock=immediate) it writes its row, and the
// relay's batch waits for it.
func TestSQLiteBusinessTransactionThatReadsFirst(t *testing.T) {
	for _, c := range []struct {
		name, params string
		fails        bool
	}{
		{"Deferred", "", true},
		{"Immediate", "&_txlock=immediate", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := sqliteDSN(filepath.Join(t.TempDir(), "app.db")) + c.params
			db, err := sql.Open("sqlite", dsn)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			_, err = pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "CREATE TABLE orders (id INTEGER PRIMARY KEY)")
			require.NoError(t, err)
			ob := outbox.NewSQLite(db)
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, ob.AddTx(ctx, tx, "mail", "welcome", 1, nil))
			require.NoError(t, tx.Commit())
			rdb, prefix := redistest.Client(t)
			relay, err := outbox.NewRelay(ob, rdb, &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: prefix}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, relay.Close(ctx)) })

			// The business transaction reads; a relay runs a batch; the
			// transaction writes.
			tx, err = db.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			var n int
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&n))
			flushed := make(chan error, 1)
			go func() {
				_, err := relay.Flush(ctx)
				flushed <- err
			}()
			if c.fails {
				require.NoError(t, <-flushed) // the relay wrote its marks
			}
			_, err = tx.ExecContext(ctx, "INSERT INTO orders DEFAULT VALUES")
			if err == nil {
				err = ob.AddTx(ctx, tx, "mail", "welcome", 2, nil)
			}
			if c.fails {
				require.ErrorContains(t, err, "database is locked")
				return
			}
			require.NoError(t, err)
			require.NoError(t, tx.Commit())
			require.NoError(t, <-flushed, "the relay's batch waited for the transaction")
			require.Empty(t, pending(rowsOf(t, db)))
		})
	}
}

func rowsOf(t *testing.T, db *sql.DB) []rowState {
	t.Helper()
	rs, err := db.Query(liteRows)
	require.NoError(t, err)
	defer rs.Close()
	var out []rowState
	for rs.Next() {
		var s rowState
		require.NoError(t, rs.Scan(&s.ID, &s.Queue, &s.Sent, &s.JobID, &s.Failed, &s.LastError))
		out = append(out, s)
	}
	require.NoError(t, rs.Err())
	return out
}
