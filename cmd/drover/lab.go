//go:build lab

package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // the embedded database of `drover lab`

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/lab"
	"github.com/seed40057009/drover/pgmigrate"
)

func init() {
	commands["lab"] = commandInfo{
		summary: "run the failure lab: retry, killed worker and duplicate producer, with and without an operation key",
		make:    func(m *Main) command { return &labCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

type labCmd struct {
	out, errOut io.Writer
}

const labUsage = `Usage: drover lab [flags]

Runs three failure reproductions against Redis and a database, each with an
UNSAFE processor (the effect is written without an operation key) and a SAFE
one (the effect is written in the transaction that claims the operation key
with idempotency.Ledger.Do):

  throw-after-effect   the processor writes the effect, then fails; the job retries
  killed-after-effect  a worker process writes the effect and is SIGKILLed before it
                       acknowledges; another worker recovers the job as stalled
  duplicate-producer   two producers add the same operation at once; the safe
                       producers use a deterministic job id

Executions and effects are counted from the database. The lab exits non-zero
when a run does not show what it should: unsafe 2 executions / 2 effects,
safe 2 executions / 1 effect, duplicate producer with a deterministic id 1 job.

Flags:
`

func (c *labCmd) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "worker" {
		return (&labWorkerCmd{out: c.out, errOut: c.errOut}).Run(ctx, args[1:])
	}
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(c.out)
	fs.Usage = func() {
		fmt.Fprint(c.out, labUsage)
		fs.PrintDefaults()
	}
	redisURL := fs.String("redis", os.Getenv("DROVER_REDIS_URL"), "Redis URL (redis://host:port/db); empty = embedded engine (env DROVER_REDIS_URL)")
	hidePassword(fs, "redis")
	database := fs.String("database", "", "postgres://... URL, or file:PATH for a SQLite file; empty = SQLite in a temporary directory")
	prefix := fs.String("prefix", drover.PrefixDefault, "key prefix of the lab's queues")
	scenarios := fs.String("scenario", "", "comma-separated scenarios to run; empty = all")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	verbose := fs.Bool("v", false, "log every processor start and finish (slog, to stderr), the worker process's too")
	keep := fs.Bool("keep", false, "keep the lab's queues in Redis after the run")
	sabotage := fs.Bool("sabotage", false, "replace the safe processor by a broken one that commits the effect before claiming the key, to see the lab fail")
	lockDuration := durationFlag(fs, "lock-duration", lab.LockDurationDefault, "lock duration of the killed worker process (how long until its job is recovered)")
	stalledInterval := durationFlag(fs, "stalled-interval", lab.StalledIntervalDefault, "stalled-check interval of the recovering worker")
	timeout := durationFlag(fs, "timeout", lab.TimeoutDefault, "time limit of each run")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("lab: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("lab: unexpected arguments %q", fs.Args())
	}
	var only []lab.Scenario
	if *scenarios != "" {
		for name := range strings.SplitSeq(*scenarios, ",") {
			s, err := lab.ParseScenario(strings.TrimSpace(name))
			if err != nil {
				return usagef("lab: --scenario: %v", err)
			}
			only = append(only, s)
		}
	}

	// This process's logger and the worker processes' stderr copies write
	// here at the same time.
	errOut := &syncWriter{w: c.errOut}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}

	rdb, whereRedis, closeRedis, err := openRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	childRedis := *redisURL
	if childRedis == "" {
		client, ok := rdb.(*redis.Client)
		if !ok {
			return errors.New("lab: embedded engine: unexpected client type")
		}
		childRedis = "redis://" + client.Options().Addr
	}

	dsn := *database
	if dsn == "" {
		dir, err := os.MkdirTemp("", "drover-lab-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dsn = "file:" + filepath.Join(dir, "lab.db")
	}
	db, whereDB, closeDB, err := openLabDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := pgmigrate.Up(ctx, db.migrate, nil); err != nil {
		return fmt.Errorf("lab: migrate %s: %w", whereDB, err)
	}
	if err := db.lab.CreateTables(ctx); err != nil {
		return err
	}

	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("lab: find own executable for the worker process: %w", err)
	}
	opts := &lab.Options{
		Prefix: *prefix, Scenarios: only, KeepQueues: *keep, Logger: logger,
		LockDuration: *lockDuration, StalledInterval: *stalledInterval, Timeout: *timeout,
		WorkerCommand: func(spec lab.WorkerSpec) *exec.Cmd {
			args := []string{"lab", "worker", "--redis", childRedis, "--database", dsn, "--spec", spec.Encode()}
			if *verbose {
				args = append(args, "-v")
			}
			cmd := exec.CommandContext(ctx, exe, args...)
			cmd.Stderr = errOut
			return cmd
		},
	}
	if *sabotage {
		unsafe, _ := db.lab.Subject(lab.SubjectUnsafe)
		broken, _ := db.lab.Subject(lab.SubjectSabotaged)
		opts.Subjects = []lab.Subject{unsafe, broken}
	}

	if !*asJSON {
		fmt.Fprintf(c.out, "drover lab: Redis: %s\n", whereRedis)
		fmt.Fprintf(c.out, "drover lab: database: %s\n\n", whereDB)
	}
	report, err := lab.Run(ctx, rdb, db.lab, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := report.WriteJSON(c.out); err != nil {
			return err
		}
	} else {
		if err := report.WriteTable(c.out); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "\nrun %s: %d runs in %s\n", report.Run, len(report.Results),
			(time.Duration(report.ElapsedMS) * time.Millisecond).String())
	}
	if failed := report.Failed(); len(failed) > 0 {
		return fmt.Errorf("lab: %d of %d runs did not show what they should", len(failed), len(report.Results))
	}
	return nil
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// labDB is the lab's database, and the same database for pgmigrate.
type labDB struct {
	lab     *lab.DB
	migrate pgmigrate.DB
}

// openLabDB opens a postgres:// URL with pgx, or a file: DSN (or a plain
// path) with SQLite, in WAL mode with a busy timeout, since the worker
// process writes to the same file.
func openLabDB(ctx context.Context, dsn string) (*labDB, string, func(), error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return nil, "", nil, usagef("lab: --database: %v", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, "", nil, fmt.Errorf("lab: connect to PostgreSQL: %w", err)
		}
		cfg := pool.Config().ConnConfig
		where := fmt.Sprintf("PostgreSQL %s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
		return &labDB{lab: lab.NewPostgres(pool), migrate: pgmigrate.Postgres(pool)}, where, pool.Close, nil
	case strings.Contains(dsn, "://"):
		return nil, "", nil, usagef("lab: --database %q: want a postgres:// URL or file:PATH (SQLite)", dsn)
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if path == "" {
		return nil, "", nil, usagef("lab: --database %q: no SQLite file path", dsn)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, "", nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, "", nil, fmt.Errorf("lab: open SQLite %s: %w", path, err)
	}
	return &labDB{lab: lab.NewSQLite(db), migrate: pgmigrate.SQLite(db)}, "SQLite " + path, func() { _ = db.Close() }, nil
}
