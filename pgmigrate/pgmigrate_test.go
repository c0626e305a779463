package pgmigrate_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/pgmigrate"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testDB is one database under test, with a way to poke at it directly.
type testDB struct {
	db pgmigrate.DB
	// exec runs SQL outside of pgmigrate.
	exec func(t *testing.T, sql string)
	// tableExists reports whether a table is there.
	tableExists func(t *testing.T, name string) bool
}

var dialects = []struct {
	name string
	open func(t *testing.T) *testDB
}{
	{"Postgres", openPostgres},
	{"SQLite", openSQLite},
}

func openPostgres(t *testing.T) *testDB {
	t.Helper()
	pool := pgtest.Pool(t)
	return &testDB{
		db: pgmigrate.Postgres(pool),
		exec: func(t *testing.T, sql string) {
			t.Helper()
			_, err := pool.Exec(context.Background(), sql)
			require.NoError(t, err)
		},
		tableExists: func(t *testing.T, name string) bool {
			t.Helper()
			var ok bool
			require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok))
			return ok
		},
	}
}

// openSQLiteDB opens a fresh SQLite file whose writers wait for each other.
func openSQLiteDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "drover.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func openSQLite(t *testing.T) *testDB {
	t.Helper()
	db := openSQLiteDB(t)
	return &testDB{
		db: pgmigrate.SQLite(db),
		exec: func(t *testing.T, sql string) {
			t.Helper()
			_, err := db.Exec(sql)
			require.NoError(t, err)
		},
		tableExists: func(t *testing.T, name string) bool {
			t.Helper()
			var n int
			require.NoError(t, db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n))
			return n == 1
		},
	}
}

var (
	operations = pgmigrate.Migration{Version: 1, Name: "operations"}
	outbox     = pgmigrate.Migration{Version: 2, Name: "outbox"}
	claims     = pgmigrate.Migration{Version: 3, Name: "outbox_claims"}
)

func applied(statuses []pgmigrate.MigrationStatus) []int {
	var out []int
	for _, s := range statuses {
		if s.Applied {
			out = append(out, s.Version)
		}
	}
	return out
}

func TestMigrate(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	for _, dialect := range dialects {
		t.Run(dialect.name, func(t *testing.T) {
			t.Parallel()

			setup := func(t *testing.T) *testDB {
				t.Helper()
				return dialect.open(t)
			}

			t.Run("UpAppliesEveryMigrationOnce", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				done, err := pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				require.Equal(t, []pgmigrate.Migration{operations, outbox, claims}, done)
				require.True(t, tdb.tableExists(t, "drover_operations"))
				require.True(t, tdb.tableExists(t, "drover_outbox"))

				done, err = pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				require.Empty(t, done)

				statuses, err := pgmigrate.Status(ctx, tdb.db)
				require.NoError(t, err)
				require.Equal(t, []int{1, 2, 3}, applied(statuses))
				for _, s := range statuses {
					require.True(t, s.Known)
					require.False(t, s.AppliedAt.IsZero())
				}
			})

			t.Run("UpStopsAtTheTargetVersion", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				done, err := pgmigrate.Up(ctx, tdb.db, &pgmigrate.UpOptions{TargetVersion: 1})
				require.NoError(t, err)
				require.Equal(t, []pgmigrate.Migration{operations}, done)
				require.False(t, tdb.tableExists(t, "drover_outbox"))

				done, err = pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				require.Equal(t, []pgmigrate.Migration{outbox, claims}, done)
			})

			t.Run("TargetVersionOutOfRangeIsRejected", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				_, err := pgmigrate.Up(ctx, tdb.db, &pgmigrate.UpOptions{TargetVersion: 4})
				require.EqualError(t, err, "pgmigrate: UpOptions.TargetVersion must be between 0 (latest) and 3, got 4")
				_, err = pgmigrate.Down(ctx, tdb.db, -1, nil)
				require.EqualError(t, err, "pgmigrate: Down target version must be 0 or more, got -1")
			})

			t.Run("DownRevertsNewestFirstToTheTarget", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				_, err := pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)

				done, err := pgmigrate.Down(ctx, tdb.db, 1, nil)
				require.NoError(t, err)
				require.Equal(t, []pgmigrate.Migration{claims, outbox}, done)
				require.False(t, tdb.tableExists(t, "drover_outbox"))
				require.True(t, tdb.tableExists(t, "drover_operations"))

				done, err = pgmigrate.Down(ctx, tdb.db, 0, nil)
				require.NoError(t, err)
				require.Equal(t, []pgmigrate.Migration{operations}, done)
				require.False(t, tdb.tableExists(t, "drover_operations"))

				statuses, err := pgmigrate.Status(ctx, tdb.db)
				require.NoError(t, err)
				require.Empty(t, applied(statuses))

				// And back up: the down files really undo the up files.
				done, err = pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				require.Len(t, done, 3)
			})

			t.Run("DownOnANeverMigratedDatabaseDoesNothing", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				done, err := pgmigrate.Down(ctx, tdb.db, 0, nil)
				require.NoError(t, err)
				require.Empty(t, done)
			})

			t.Run("StatusOfAFreshDatabaseChangesNothing", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				statuses, err := pgmigrate.Status(ctx, tdb.db)
				require.NoError(t, err)
				require.Equal(t, []pgmigrate.MigrationStatus{
					{Migration: operations, Known: true},
					{Migration: outbox, Known: true},
					{Migration: claims, Known: true},
				}, statuses)
				require.False(t, tdb.tableExists(t, "drover_migrations"))
			})

			t.Run("VersionsFromANewerDroverAreReportedAndNotReverted", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				_, err := pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				tdb.exec(t, "INSERT INTO drover_migrations (version, name, applied_at) VALUES (4, 'future', "+
					map[string]string{"Postgres": "now()", "SQLite": "0"}[dialect.name]+")")

				statuses, err := pgmigrate.Status(ctx, tdb.db)
				require.NoError(t, err)
				require.Len(t, statuses, 4)
				require.Equal(t, pgmigrate.Migration{Version: 4, Name: "future"}, statuses[3].Migration)
				require.False(t, statuses[3].Known)
				require.True(t, statuses[3].Applied)

				done, err := pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				require.Empty(t, done)

				_, err = pgmigrate.Down(ctx, tdb.db, 0, nil)
				require.ErrorContains(t, err, "the database has migration 004_future, which this drover does not know")
				require.True(t, tdb.tableExists(t, "drover_outbox"), "a refused Down must not revert anything")
			})

			t.Run("AFailingMigrationLeavesTheSchemaAsItWas", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				tdb.exec(t, "CREATE TABLE drover_outbox (squatter integer)")

				_, err := pgmigrate.Up(ctx, tdb.db, nil)
				require.ErrorContains(t, err, "apply migration 002_outbox")
				require.False(t, tdb.tableExists(t, "drover_operations"))
				require.False(t, tdb.tableExists(t, "drover_migrations"))
			})

			t.Run("ConcurrentRunsApplyEachMigrationOnce", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				var (
					wg    sync.WaitGroup
					mu    sync.Mutex
					total []pgmigrate.Migration
				)
				errs := make(chan error, 4)
				for range 4 {
					wg.Go(func() {
						done, err := pgmigrate.Up(ctx, tdb.db, nil)
						errs <- err
						mu.Lock()
						total = append(total, done...)
						mu.Unlock()
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				require.ElementsMatch(t, []pgmigrate.Migration{operations, outbox, claims}, total)
			})

			t.Run("LogsEachMigration", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				var buf bytes.Buffer
				logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
					ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
						if a.Key == slog.TimeKey {
							return slog.Attr{}
						}
						return a
					},
				}))
				_, err := pgmigrate.Up(ctx, tdb.db, &pgmigrate.UpOptions{Logger: logger})
				require.NoError(t, err)
				_, err = pgmigrate.Down(ctx, tdb.db, 1, &pgmigrate.DownOptions{Logger: logger})
				require.NoError(t, err)
				d := map[string]string{"Postgres": "postgres", "SQLite": "sqlite"}[dialect.name]
				require.Equal(t, ""+
					"level=INFO msg=\"migration applied\" dialect="+d+" version=1 migration=operations\n"+
					"level=INFO msg=\"migration applied\" dialect="+d+" version=2 migration=outbox\n"+
					"level=INFO msg=\"migration applied\" dialect="+d+" version=3 migration=outbox_claims\n"+
					"level=INFO msg=\"migration reverted\" dialect="+d+" version=3 migration=outbox_claims\n"+
					"level=INFO msg=\"migration reverted\" dialect="+d+" version=2 migration=outbox\n",
					buf.String())
			})

			t.Run("CanceledContextFailsCleanly", func(t *testing.T) {
				t.Parallel()

				tdb := setup(t)
				canceled, cancel := context.WithCancel(ctx)
				cancel()
				_, err := pgmigrate.Up(canceled, tdb.db, nil)
				require.ErrorIs(t, err, context.Canceled)

				done, err := pgmigrate.Up(ctx, tdb.db, nil)
				require.NoError(t, err)
				require.Len(t, done, 3)
			})
		})
	}
}

// TestNilHandlesAreErrors: Up, Down and Status on a nil DB, or on one made
// from a nil handle, return an error naming it. Before, each panicked with a
// nil-pointer dereference inside pgx or database/sql (a deploy step's
// migrate command crashing instead of saying what is wrong).
func TestNilHandlesAreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, tt := range map[string]struct {
		db   pgmigrate.DB
		want string
	}{
		"NilDB":               {nil, "the DB is nil (make it with Postgres or SQLite)"},
		"Postgres(nil)":       {pgmigrate.Postgres(nil), "the database handle given to Postgres is nil"},
		"Postgres(typed nil)": {pgmigrate.Postgres((*pgxpool.Pool)(nil)), "the database handle given to Postgres is nil"},
		"SQLite(nil)":         {pgmigrate.SQLite(nil), "the database handle given to SQLite is nil"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := pgmigrate.Up(ctx, tt.db, nil)
			require.EqualError(t, err, "pgmigrate: up: "+tt.want)
			_, err = pgmigrate.Down(ctx, tt.db, 0, nil)
			require.EqualError(t, err, "pgmigrate: down to 0: "+tt.want)
			_, err = pgmigrate.Status(ctx, tt.db)
			require.EqualError(t, err, "pgmigrate: status: "+tt.want)
		})
	}
}
