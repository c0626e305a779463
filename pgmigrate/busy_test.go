package pgmigrate_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/pgmigrate"
)

// TestMigrateSQLiteWithoutABusyTimeout: deploys that run Up at once, each
// with a handle of its own on a SQLite file opened without a busy timeout
// (several processes), all succeed and apply each migration once, in
// rollback-journal and WAL mode; one of them only had the lock before, the
// others failed with "database is locked". A run still ends with its ctx
// while another writer holds the lock.
func TestMigrateSQLiteWithoutABusyTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for _, mode := range []struct{ name, params string }{
		{"RollbackJournal", ""},
		{"WAL", "?_pragma=journal_mode(WAL)"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			dsn := "file:" + filepath.Join(t.TempDir(), "drover.db") + mode.params
			const runs = 4
			var (
				wg    sync.WaitGroup
				mu    sync.Mutex
				total []pgmigrate.Migration
			)
			errs := make([]error, runs)
			for i := range runs {
				db, err := sql.Open("sqlite", dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = db.Close() })
				wg.Go(func() {
					done, err := pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
					errs[i] = err
					mu.Lock()
					total = append(total, done...)
					mu.Unlock()
				})
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "run %d", i)
			}
			require.ElementsMatch(t, []pgmigrate.Migration{operations, outbox, claims}, total)
		})
	}

	t.Run("ARunEndsWithItsContext", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "drover.db")
		holder, err := sql.Open("sqlite", "file:"+path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = holder.Close() })
		conn, err := holder.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = conn.ExecContext(ctx, "ROLLBACK") })

		db, err := sql.Open("sqlite", "file:"+path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err = pgmigrate.Up(cctx, pgmigrate.SQLite(db), nil)
		require.ErrorContains(t, err, "database is locked")
		require.Error(t, cctx.Err(), "it waited for the lock until its ctx ended")
	})
}
