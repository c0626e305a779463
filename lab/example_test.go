package lab_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/lab"
	"github.com/seed40057009/drover/pgmigrate"
)

// exampleDB opens a migrated SQLite database with the lab's tables in a
// temporary directory.
func exampleDB() (sqlDB *sql.DB, dsn string, cleanup func()) {
	dir, err := os.MkdirTemp("", "lab-example-")
	if err != nil {
		panic(err)
	}
	dsn = sqliteDSN(filepath.Join(dir, "lab.db"))
	sqlDB, err = sql.Open("sqlite", dsn)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := pgmigrate.Up(ctx, pgmigrate.SQLite(sqlDB), nil); err != nil {
		panic(err)
	}
	if err := lab.NewSQLite(sqlDB).CreateTables(ctx); err != nil {
		panic(err)
	}
	return sqlDB, dsn, func() { sqlDB.Close(); os.RemoveAll(dir) }
}

// Run the three scenarios with the built-in unsafe and safe subjects. The
// worker process that the killed-after-effect scenario SIGKILLs is this
// test binary again (see workerCommand in main_test.go); drover's own is
// `drover lab worker`.
func ExampleRun() {
	ctx := context.Background()
	srv, err := redistest.SharedServer()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	sqlDB, dsn, cleanup := exampleDB()
	defer cleanup()

	report, err := lab.Run(ctx, rdb, lab.NewSQLite(sqlDB), &lab.Options{
		Prefix:        redistest.UniquePrefix(),
		WorkerCommand: workerCommand(srv.Addr, "sqlite", dsn),
	})
	if err != nil {
		panic(err)
	}
	for _, res := range report.Results {
		fmt.Printf("%-19s %-6s executions=%d effects=%d jobs=%d: %s\n",
			res.Scenario, res.Mode, res.Executions, res.Effects, res.JobsCreated, res.Verdict)
	}
	fmt.Println("ok:", report.OK)
	// Output:
	// throw-after-effect  unsafe executions=2 effects=2 jobs=1: ok: duplicate effect reproduced (2x)
	// throw-after-effect  safe   executions=2 effects=1 jobs=1: ok: effect once, 1 duplicate execution(s) absorbed
	// killed-after-effect unsafe executions=2 effects=2 jobs=1: ok: duplicate effect reproduced (2x)
	// killed-after-effect safe   executions=2 effects=1 jobs=1: ok: effect once, 1 duplicate execution(s) absorbed
	// duplicate-producer  unsafe executions=2 effects=2 jobs=2: ok: duplicate effect reproduced (2x)
	// duplicate-producer  safe   executions=1 effects=1 jobs=1: ok: one job, effect once
	// ok: true
}

// Wrap a processor with Observe and claim through ObserveDo: every execution
// logs a start and a finish line with what its claim found, and the counters
// tell executions from effects from duplicates suppressed.
func ExampleObserve() {
	ctx := context.Background()
	sqlDB, _, cleanup := exampleDB()
	defer cleanup()
	ledger := idempotency.NewSQLite(sqlDB, nil)

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "pid", "duration": // they vary from run to run
				return slog.Attr{}
			}
			return a
		},
	}))
	counters := &lab.Counters{}
	proc := lab.Observe(drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		key := idempotency.OpKey("charge", "order-42")
		_, err := lab.ObserveDo(ctx, ledger, key, func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
			return nil, nil // charge the card, in tx
		})
		return nil, err
	}), &lab.ObserveOptions{Logger: logger, Counters: counters})

	// The same job twice, as a retry or a stall recovery would run it.
	for attempt := 1; attempt <= 2; attempt++ {
		if _, err := proc.Process(ctx, &drover.Job{ID: "17", Name: "charge", AttemptsStarted: attempt}); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%+v\n", counters.Values())
	// Output:
	// level=INFO msg="processor start" queue="" job_name=charge job_id=17 op_key="" attempt=1
	// level=INFO msg="processor finish" queue="" job_name=charge job_id=17 op_key=charge:order-42 attempt=1 claim=inserted effect=true outcome=ok
	// level=INFO msg="processor start" queue="" job_name=charge job_id=17 op_key="" attempt=2
	// level=INFO msg="processor finish" queue="" job_name=charge job_id=17 op_key=charge:order-42 attempt=2 claim=existed effect=false outcome=ok
	// {Executions:2 Effects:1 DuplicatesSuppressed:1}
}
