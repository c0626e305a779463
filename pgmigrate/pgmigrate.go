// Package pgmigrate creates and updates the tables of drover's database kit:
// the operations ledger of package idempotency and the outbox of package
// outbox, on PostgreSQL (pgx v5) or SQLite (database/sql).
//
// Migrations are numbered, embedded in the binary, and applied only when you
// ask: call [Up] from your deploy step (a small main, or your application's
// migrate command); nothing in drover migrates at startup.
//
//	if _, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil); err != nil {
//		return err
//	}
//
// Applied versions are recorded in the table drover_migrations. A run of
// [Up] or [Down] is a single transaction that takes an exclusive lock first
// (a transaction-scoped advisory lock on PostgreSQL, BEGIN IMMEDIATE on
// SQLite): concurrent runs from several deploys apply each migration once,
// and a failing migration leaves the schema as it was. On SQLite a run
// waits up to a minute for the database's write lock, even on a database
// opened without a busy timeout.
//
// On PostgreSQL the tables are created in the first schema of the
// connection's search_path, where drover's queries also find them. Up
// refuses a search_path whose first schema lacks them while a later one
// has them (a schema created ahead of theirs, such as one named after the
// role, "$user"): it would create a second, empty set that drover's
// queries would use from then on.
package pgmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed40057009/drover/internal/pgsql"
)

// Attribute keys of the log lines. They move to internal/logkey once it exists.
const (
	logKeyVersion   = "version"
	logKeyMigration = "migration"
	logKeyDialect   = "dialect"
)

// Migration names one schema change.
type Migration struct {
	Version int    // 1, 2, ...
	Name    string // "operations", "outbox", ...
}

// MigrationStatus is one line of [Status].
type MigrationStatus struct {
	Migration
	// Applied reports whether the database has the migration.
	Applied bool
	// AppliedAt is when it was applied; zero when it was not.
	AppliedAt time.Time
	// Known is false for a version the database has but this binary does not:
	// applied by a newer drover. Its Name is the one recorded in the database.
	Known bool
}

// UpOptions configure [Up]. A nil *UpOptions means all defaults.
type UpOptions struct {
	// TargetVersion is the last migration to apply.
	//
	// Defaults to 0, which means the latest.
	TargetVersion int

	// Logger receives an info line for each applied migration.
	//
	// Defaults to nil, which discards.
	Logger *slog.Logger
}

// DownOptions configure [Down]. A nil *DownOptions means all defaults.
type DownOptions struct {
	// Logger receives an info line for each reverted migration.
	//
	// Defaults to nil, which discards.
	Logger *slog.Logger
}

// DB is a database pgmigrate can migrate; make one with [Postgres] or
// [SQLite].
type DB interface {
	dialect() pgsql.Dialect
	// inTx runs fn in a transaction, committing when fn returns nil. An
	// exclusive transaction holds the lock that serializes migration runs.
	inTx(ctx context.Context, exclusive bool, fn func(execer) error) error
}

// execer runs the statements of one migration run.
type execer interface {
	exec(ctx context.Context, sql string, args ...any) error
	queryBool(ctx context.Context, sql string) (bool, error)
	queryRow(ctx context.Context, sql string, dest ...any) error
	listApplied(ctx context.Context, sql string) ([]MigrationStatus, error)
}

// Up applies, in version order, every migration up to the target version
// (by default, the latest) that the database does not have yet, and returns
// the ones it applied: none when the schema is current.
func Up(ctx context.Context, db DB, opts *UpOptions) ([]Migration, error) {
	if opts == nil {
		opts = &UpOptions{}
	}
	if err := checkDB(db); err != nil {
		return nil, fmt.Errorf("pgmigrate: up: %w", err)
	}
	all := pgsql.Migrations(db.dialect())
	target := opts.TargetVersion
	if target == 0 {
		target = len(all)
	}
	if target < 0 || target > len(all) {
		return nil, fmt.Errorf("pgmigrate: UpOptions.TargetVersion must be between 0 (latest) and %d, got %d", len(all), opts.TargetVersion)
	}
	logger := loggerOrDiscard(opts.Logger)

	var done []Migration
	err := db.inTx(ctx, true, func(x execer) error {
		done = done[:0] // inTx does not retry today, but stay correct if it does
		d := db.dialect()
		if d == pgsql.Postgres {
			if err := checkSchema(ctx, x); err != nil {
				return err
			}
		}
		if err := x.exec(ctx, pgsql.Query(d, "MigrationsCreateTable")); err != nil {
			return fmt.Errorf("create table drover_migrations: %w", err)
		}
		applied, err := x.listApplied(ctx, pgsql.Query(d, "MigrationsList"))
		if err != nil {
			return err
		}
		have := make(map[int]bool, len(applied))
		for _, a := range applied {
			have[a.Version] = true
		}
		for _, m := range all[:target] {
			if have[m.Version] {
				continue
			}
			if err := x.exec(ctx, m.Up); err != nil {
				return fmt.Errorf("apply migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if err := x.exec(ctx, pgsql.Query(d, "MigrationsInsert"), m.Version, m.Name, nowFor(d)); err != nil {
				return fmt.Errorf("record migration %03d_%s: %w", m.Version, m.Name, err)
			}
			done = append(done, Migration{Version: m.Version, Name: m.Name})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: up: %w", err)
	}
	for _, m := range done {
		logger.InfoContext(ctx, "migration applied",
			slog.String(logKeyDialect, db.dialect().String()),
			slog.Int(logKeyVersion, m.Version), slog.String(logKeyMigration, m.Name))
	}
	return done, nil
}

// checkSchema refuses a PostgreSQL search_path that finds drover's tables
// in a schema after its first one: Up would create them again, empty, in
// the first schema, and drover's queries would use those from then on
// (the ledger forgetting every operation key, the relays leaving the
// pending rows behind). That happens when a schema is created whose name
// comes first, such as one named after the role ("$user").
func checkSchema(ctx context.Context, x execer) error {
	var elsewhere, first, path string
	if err := x.queryRow(ctx, pgsql.Query(pgsql.Postgres, "MigrationsElsewhere"), &elsewhere, &first, &path); err != nil {
		return fmt.Errorf("look for table drover_migrations: %w", err)
	}
	if elsewhere == "" {
		return nil
	}
	return fmt.Errorf("drover's tables are in schema %q, but the first schema of the search_path (%s) is %q: "+
		"Up would create them again there, empty, and drover's queries would use those, forgetting the operation "+
		"keys and the pending outbox rows in %q; put %q first in the search_path (or move the tables to %q)",
		elsewhere, path, first, elsewhere, elsewhere, first)
}

// Down reverts, newest first, every applied migration with a version above
// targetVersion, and returns the ones it reverted. targetVersion 0 reverts
// everything, dropping drover's tables and their data; there is no default,
// because a rollback should always say how far it goes.
//
// Down refuses to revert a version this binary does not know (applied by a
// newer drover): it cannot know how.
//
// Reverting 002_outbox drops drover_outbox, and Up creates it again with
// its row ids starting at 1: the ids, and the job ids the relays derive
// from them, name jobs of the old rows that Redis may still keep. Give the
// relays a new outbox.RelayOptions.JobIDPrefix then (the relays mark such
// rows failed rather than relay them as the old jobs' duplicates).
func Down(ctx context.Context, db DB, targetVersion int, opts *DownOptions) ([]Migration, error) {
	if opts == nil {
		opts = &DownOptions{}
	}
	if targetVersion < 0 {
		return nil, fmt.Errorf("pgmigrate: Down target version must be 0 or more, got %d", targetVersion)
	}
	if err := checkDB(db); err != nil {
		return nil, fmt.Errorf("pgmigrate: down to %d: %w", targetVersion, err)
	}
	all := pgsql.Migrations(db.dialect())
	logger := loggerOrDiscard(opts.Logger)

	var done []Migration
	err := db.inTx(ctx, true, func(x execer) error {
		done = done[:0]
		d := db.dialect()
		exists, err := x.queryBool(ctx, pgsql.Query(d, "MigrationsTableExists"))
		if err != nil {
			return fmt.Errorf("look for table drover_migrations: %w", err)
		}
		if !exists {
			return nil // nothing was ever applied
		}
		applied, err := x.listApplied(ctx, pgsql.Query(d, "MigrationsList"))
		if err != nil {
			return err
		}
		for i := len(applied) - 1; i >= 0; i-- {
			a := applied[i]
			if a.Version <= targetVersion {
				break
			}
			if a.Version > len(all) {
				return fmt.Errorf("the database has migration %03d_%s, which this drover does not know; "+
					"revert it with the drover that applied it", a.Version, a.Name)
			}
			m := all[a.Version-1]
			if err := x.exec(ctx, m.Down); err != nil {
				return fmt.Errorf("revert migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if err := x.exec(ctx, pgsql.Query(d, "MigrationsDelete"), m.Version); err != nil {
				return fmt.Errorf("unrecord migration %03d_%s: %w", m.Version, m.Name, err)
			}
			done = append(done, Migration{Version: m.Version, Name: m.Name})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: down to %d: %w", targetVersion, err)
	}
	for _, m := range done {
		logger.InfoContext(ctx, "migration reverted",
			slog.String(logKeyDialect, db.dialect().String()),
			slog.Int(logKeyVersion, m.Version), slog.String(logKeyMigration, m.Name))
	}
	return done, nil
}

// Status lists every migration this binary knows, applied or not, followed
// by any applied version it does not know, in version order. It changes
// nothing: on a database never migrated, it reports every migration pending.
func Status(ctx context.Context, db DB) ([]MigrationStatus, error) {
	if err := checkDB(db); err != nil {
		return nil, fmt.Errorf("pgmigrate: status: %w", err)
	}
	all := pgsql.Migrations(db.dialect())
	var applied []MigrationStatus
	err := db.inTx(ctx, false, func(x execer) error {
		d := db.dialect()
		exists, err := x.queryBool(ctx, pgsql.Query(d, "MigrationsTableExists"))
		if err != nil || !exists {
			return err
		}
		applied, err = x.listApplied(ctx, pgsql.Query(d, "MigrationsList"))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: status: %w", err)
	}
	byVersion := make(map[int]MigrationStatus, len(applied))
	for _, a := range applied {
		byVersion[a.Version] = a
	}
	out := make([]MigrationStatus, 0, len(all))
	for _, m := range all {
		s := MigrationStatus{Migration: Migration{Version: m.Version, Name: m.Name}, Known: true}
		if a, ok := byVersion[m.Version]; ok {
			s.Applied, s.AppliedAt = true, a.AppliedAt
		}
		out = append(out, s)
	}
	for _, a := range applied {
		if a.Version > len(all) {
			out = append(out, a) // Known is false
		}
	}
	return out, nil
}

// checkDB refuses a nil DB, or one made from a nil handle (Postgres(nil),
// SQLite(nil)): a programming error, reported instead of a nil-pointer panic
// inside pgx or database/sql.
func checkDB(db DB) error {
	switch d := db.(type) {
	case nil:
		return errors.New("the DB is nil (make it with Postgres or SQLite)")
	case postgresDB:
		if pgsql.IsNil(d.db) {
			return errors.New("the database handle given to Postgres is nil")
		}
	case sqliteDB:
		if d.db == nil {
			return errors.New("the database handle given to SQLite is nil")
		}
	}
	return nil
}

// nowFor returns the current time in the dialect's column format.
func nowFor(d pgsql.Dialect) any {
	now := time.Now().UTC().Truncate(time.Microsecond)
	if d == pgsql.SQLite {
		return now.UnixMilli()
	}
	return now
}

func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// PostgresDB is what pgmigrate needs of a PostgreSQL handle:
// *pgxpool.Pool and *pgx.Conn have it.
type PostgresDB interface {
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

// Postgres returns the PostgreSQL database behind db for [Up], [Down] and
// [Status].
func Postgres(db PostgresDB) DB { return postgresDB{db} }

type postgresDB struct{ db PostgresDB }

func (postgresDB) dialect() pgsql.Dialect { return pgsql.Postgres }

func (p postgresDB) inTx(ctx context.Context, exclusive bool, fn func(execer) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	if !exclusive {
		opts.AccessMode = pgx.ReadOnly
	}
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	x := pgxExecer{tx}
	if exclusive {
		if err := x.exec(ctx, pgsql.Query(pgsql.Postgres, "MigrationsLock")); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
	}
	if err := fn(x); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

type pgxExecer struct{ tx pgx.Tx }

func (x pgxExecer) exec(ctx context.Context, sql string, args ...any) error {
	// Without arguments pgx uses the simple protocol, which runs a
	// multi-statement migration file in one call.
	_, err := x.tx.Exec(ctx, sql, args...)
	return err
}

func (x pgxExecer) queryRow(ctx context.Context, sql string, dest ...any) error {
	return x.tx.QueryRow(ctx, sql).Scan(dest...)
}

func (x pgxExecer) queryBool(ctx context.Context, sql string) (bool, error) {
	var b bool
	err := x.tx.QueryRow(ctx, sql).Scan(&b)
	return b, err
}

func (x pgxExecer) listApplied(ctx context.Context, sql string) ([]MigrationStatus, error) {
	rows, err := x.tx.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("list applied migrations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (MigrationStatus, error) {
		var s MigrationStatus
		err := row.Scan(&s.Version, &s.Name, &s.AppliedAt)
		s.Applied = true
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("list applied migrations: %w", err)
	}
	return out, nil
}

// SQLite returns the SQLite database behind db for [Up], [Down] and
// [Status]. Any database/sql SQLite driver works; drover tests with
// modernc.org/sqlite.
func SQLite(db *sql.DB) DB { return sqliteDB{db} }

type sqliteDB struct{ db *sql.DB }

func (sqliteDB) dialect() pgsql.Dialect { return pgsql.SQLite }

// inTx drives the transaction by hand on one connection: database/sql's
// BeginTx cannot ask for BEGIN IMMEDIATE, which takes the write lock before
// the first read, so two migration runs cannot both see version N missing.
func (s sqliteDB) inTx(ctx context.Context, exclusive bool, fn func(execer) error) (err error) {
	var conn *sql.Conn
	err = whileBusy(ctx, func() (err error) {
		// Opening a connection runs the driver's pragmas, which may need
		// the lock too (journal_mode).
		conn, err = s.db.Conn(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("get a connection: %w", err)
	}
	defer conn.Close()
	begin := "BEGIN"
	if exclusive {
		begin = "BEGIN IMMEDIATE"
	}
	if err := whileBusy(ctx, func() error {
		_, err := conn.ExecContext(ctx, begin)
		return err
	}); err != nil {
		return fmt.Errorf("%s: %w", begin, err)
	}
	defer func() {
		if err == nil {
			return
		}
		// The rollback must happen even when ctx is what failed, or the
		// connection would go back to the pool inside a transaction.
		if _, rbErr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // discard the connection
		}
	}()
	if err := fn(sqlExecer{conn}); err != nil {
		return err
	}
	// A COMMIT that found the database busy (a reader in the way of the
	// write) leaves the transaction open, to be committed again.
	if err := whileBusy(ctx, func() error {
		_, err := conn.ExecContext(ctx, "COMMIT")
		return err
	}); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// sqliteLockWait is how long a run on SQLite waits for the database's
// write lock, beyond the connection's busy timeout.
const sqliteLockWait = time.Minute

// whileBusy runs fn until it does not fail with SQLite's "database is
// locked" (SQLITE_BUSY), for up to sqliteLockWait, ctx permitting: a run
// on a database opened without a busy timeout then waits for a concurrent
// run, or a writer of the application, instead of failing at once.
func whileBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(sqliteLockWait)
	pause := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil || !sqliteBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// sqliteBusy reports whether err is SQLite's SQLITE_BUSY, by its message
// (drivers differ in their error types).
func sqliteBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY")
}

type sqlExecer struct{ conn *sql.Conn }

func (x sqlExecer) exec(ctx context.Context, sql string, args ...any) error {
	_, err := x.conn.ExecContext(ctx, sql, args...)
	return err
}

func (x sqlExecer) queryRow(ctx context.Context, sql string, dest ...any) error {
	return x.conn.QueryRowContext(ctx, sql).Scan(dest...)
}

func (x sqlExecer) queryBool(ctx context.Context, sql string) (bool, error) {
	var b bool
	err := x.conn.QueryRowContext(ctx, sql).Scan(&b)
	return b, err
}

func (x sqlExecer) listApplied(ctx context.Context, sql string) ([]MigrationStatus, error) {
	rows, err := x.conn.QueryContext(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("list applied migrations: %w", err)
	}
	defer rows.Close()
	var out []MigrationStatus
	for rows.Next() {
		var s MigrationStatus
		var ms int64
		if err := rows.Scan(&s.Version, &s.Name, &ms); err != nil {
			return nil, fmt.Errorf("list applied migrations: %w", err)
		}
		s.Applied, s.AppliedAt = true, time.UnixMilli(ms).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list applied migrations: %w", err)
	}
	return out, nil
}
