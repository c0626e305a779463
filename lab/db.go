package lab

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seed40057009/drover/idempotency"
)

// Names of the built-in subjects, see [DB.Subject].
const (
	// SubjectUnsafe writes the effect without an operation key: every
	// execution writes it again.
	SubjectUnsafe = "unsafe"
	// SubjectSafe writes the effect in the transaction that claims the
	// operation key, with idempotency.Ledger.Do: only the first execution to
	// commit writes it.
	SubjectSafe = "safe"
	// SubjectSabotaged claims to be safe but commits the effect in a
	// transaction of its own before claiming the key in another: the
	// classic mistake, and the lab's way to show that it can fail.
	SubjectSabotaged = "sabotaged"
)

// DB is the lab's durable record in one PostgreSQL or SQLite database: a row
// per processor execution (drover_lab_executions) and per effect written
// (drover_lab_effects), and the operations ledger (drover_operations) that
// the safe subject claims its keys in. The lab counts from these rows, not
// from memory, because the worker process it kills takes its memory with it.
//
// Create the ledger with pgmigrate.Up and the lab's tables with
// [DB.CreateTables] before a run. Every process of a run (the lab and the
// worker process it kills) opens the same database.
type DB struct {
	dialect string
	queries map[string]string
	be      backend
}

// backend is what the lab needs of one kind of database.
type backend interface {
	exec(ctx context.Context, query string, args ...any) error
	queryInt(ctx context.Context, query string, args ...any) (int64, error)
	queryRows(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error
	// inClaim runs ObserveDo on the ledger: it claims key and, only when the
	// claim inserted it, runs query with args in the claiming transaction.
	inClaim(ctx context.Context, key string, query string, args ...any) error
}

//go:embed sql/*.sql
var sqlFiles embed.FS

// PostgresDB is what the lab needs of a PostgreSQL handle: *pgxpool.Pool
// has it.
type PostgresDB interface {
	idempotency.PostgresDB
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// NewPostgres returns the lab's record in the PostgreSQL database behind db.
// The caller keeps db and closes it.
func NewPostgres(db PostgresDB) *DB {
	return newDB("postgres", pgBackend{db: db, ledger: idempotency.NewPostgres(db, nil)})
}

// NewSQLite returns the lab's record in the SQLite database behind db, which
// any database/sql SQLite driver may have opened; open it with a busy timeout
// and in WAL mode, as idempotency.NewSQLite says, because the lab's worker
// process writes to the same file. The caller keeps db and closes it.
func NewSQLite(db *sql.DB) *DB {
	return newDB("sqlite", liteBackend{db: db, ledger: idempotency.NewSQLite(db, nil)})
}

func newDB(dialect string, be backend) *DB {
	b, err := sqlFiles.ReadFile("sql/" + dialect + ".sql")
	if err != nil {
		panic(fmt.Sprintf("lab: embedded sql/%s.sql: %v", dialect, err)) // built in: cannot happen
	}
	return &DB{dialect: dialect, queries: parseQueries(string(b)), be: be}
}

// parseQueries splits a query file into its "-- name: Name :kind" sections.
func parseQueries(src string) map[string]string {
	out := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() {
		if name != "" {
			out[name] = strings.TrimSpace(body.String())
		}
		body.Reset()
	}
	for line := range strings.Lines(src) {
		if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
			flush()
			name = strings.Fields(rest)[0]
			continue
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	flush()
	return out
}

func (d *DB) q(name string) string {
	s, ok := d.queries[name]
	if !ok {
		panic("lab: no query " + name + " in sql/" + d.dialect + ".sql") // built in: a test covers every name
	}
	return s
}

// Dialect is "postgres" or "sqlite".
func (d *DB) Dialect() string { return d.dialect }

// CreateTables creates the lab's tables when they do not exist. It does not
// create the operations ledger: run pgmigrate.Up for that.
func (d *DB) CreateTables(ctx context.Context) error {
	for _, name := range []string{"CreateExecutions", "CreateExecutionsIndex", "CreateEffects", "CreateEffectsIndex"} {
		if err := d.be.exec(ctx, d.q(name)); err != nil {
			return fmt.Errorf("lab: create tables (%s): %w", name, err)
		}
	}
	return nil
}

// recordExecution commits a row for an execution of op and returns its id.
func (d *DB) recordExecution(ctx context.Context, op Operation) (int64, error) {
	id, err := d.be.queryInt(ctx, d.q("ExecutionInsert"), op.Key, op.Job.ID, op.Job.AttemptsStarted, os.Getpid())
	if err != nil {
		return 0, fmt.Errorf("lab: record execution of job %s: %w", op.Job.ID, err)
	}
	return id, nil
}

// recordClaim stores what the execution's claim found.
func (d *DB) recordClaim(ctx context.Context, execID int64, claim string) error {
	if err := d.be.exec(ctx, d.q("ExecutionClaim"), execID, claim); err != nil {
		return fmt.Errorf("lab: record claim of execution %d: %w", execID, err)
	}
	return nil
}

// Execution is one processor execution as the lab recorded it.
type Execution struct {
	JobID   string `json:"job_id"`
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"`
	// Claim is what the operation claim found: inserted, existed,
	// in_progress, none (no claim: the effect was written unconditionally),
	// or "" when the execution ended before its effect.
	Claim string `json:"claim"`
}

// Executions lists the recorded executions of the operation key, oldest
// first.
func (d *DB) Executions(ctx context.Context, key string) ([]Execution, error) {
	var out []Execution
	err := d.be.queryRows(ctx, d.q("ExecutionList"), []any{key}, func(scan func(...any) error) error {
		var e Execution
		var attempt, pid int64
		if err := scan(&e.JobID, &attempt, &pid, &e.Claim); err != nil {
			return err
		}
		e.Attempt, e.PID = int(attempt), int(pid)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lab: list executions of %q: %w", key, err)
	}
	return out, nil
}

// Effects counts the effects written for the operation key.
func (d *DB) Effects(ctx context.Context, key string) (int, error) {
	n, err := d.be.queryInt(ctx, d.q("EffectCount"), key)
	if err != nil {
		return 0, fmt.Errorf("lab: count effects of %q: %w", key, err)
	}
	return int(n), nil
}

// Subject returns one of the built-in subjects by name: [SubjectUnsafe],
// [SubjectSafe] or [SubjectSabotaged]. Their effect is a row in
// drover_lab_effects.
func (d *DB) Subject(name string) (Subject, error) {
	s := Subject{Name: name, CountEffects: d.Effects}
	insert := d.q("EffectInsert")
	args := func(op Operation) []any { return []any{op.Key, op.Job.ID, os.Getpid()} }
	switch name {
	case SubjectUnsafe:
		s.Effect = func(ctx context.Context, op Operation) error {
			if err := d.be.exec(ctx, insert, args(op)...); err != nil {
				return err
			}
			ObserveEffect(ctx)
			return nil
		}
	case SubjectSafe:
		s.Safe = true
		s.Effect = func(ctx context.Context, op Operation) error {
			return d.be.inClaim(ctx, op.Key, insert, args(op)...)
		}
	case SubjectSabotaged:
		s.Safe = true
		s.Effect = func(ctx context.Context, op Operation) error {
			// The mistake: the effect commits on its own, and the claim
			// that should guard it comes afterwards, in another
			// transaction that writes nothing.
			if err := d.be.exec(ctx, insert, args(op)...); err != nil {
				return err
			}
			ObserveEffect(ctx)
			return d.be.inClaim(ctx, op.Key, "")
		}
	default:
		return Subject{}, fmt.Errorf("lab: no built-in subject %q (want %s, %s or %s)", name, SubjectUnsafe, SubjectSafe, SubjectSabotaged)
	}
	return s, nil
}

type pgBackend struct {
	db     PostgresDB
	ledger *idempotency.Ledger[pgx.Tx]
}

func (b pgBackend) exec(ctx context.Context, query string, args ...any) error {
	_, err := b.db.Exec(ctx, query, args...)
	return err
}

func (b pgBackend) queryInt(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := b.db.QueryRow(ctx, query, args...).Scan(&n)
	return n, err
}

func (b pgBackend) queryRows(ctx context.Context, query string, args []any, row func(func(...any) error) error) error {
	rows, err := b.db.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, row)
}

func (b pgBackend) inClaim(ctx context.Context, key string, query string, args ...any) error {
	_, err := ObserveDo(ctx, b.ledger, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if query == "" {
			return nil, nil
		}
		_, err := tx.Exec(ctx, query, args...)
		return nil, err
	})
	return err
}

type liteBackend struct {
	db     *sql.DB
	ledger *idempotency.Ledger[*sql.Tx]
}

func (b liteBackend) exec(ctx context.Context, query string, args ...any) error {
	_, err := b.db.ExecContext(ctx, query, args...)
	return err
}

func (b liteBackend) queryInt(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := b.db.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

func (b liteBackend) queryRows(ctx context.Context, query string, args []any, row func(func(...any) error) error) error {
	rows, err := b.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, row)
}

// eachRow hands every row's Scan to row; pgx and database/sql rows share
// these three methods.
func eachRow(rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}, row func(func(...any) error) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (b liteBackend) inClaim(ctx context.Context, key string, query string, args ...any) error {
	_, err := ObserveDo(ctx, b.ledger, key, func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
		if query == "" {
			return nil, nil
		}
		_, err := tx.ExecContext(ctx, query, args...)
		return nil, err
	})
	return err
}
