package lab_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/lab"
)

// workerEnv, when set, makes this test binary the worker process of the
// killed-after-effect scenario instead of running tests: the lab's
// WorkerCommand in these tests re-runs the binary with it.
const workerEnv = "DROVER_LAB_TEST_WORKER"

// workerConfig is what the worker process needs besides the spec.
type workerConfig struct {
	Redis   string `json:"redis"`
	Dialect string `json:"dialect"`
	DSN     string `json:"dsn"`
	Spec    string `json:"spec"`
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(runWorker(cfg))
	}
	code := redistest.Main(m)
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// workerCommand returns a WorkerCommand that re-runs this test binary as the
// worker process.
func workerCommand(redisAddr, dialect, dsn string) func(spec lab.WorkerSpec) *exec.Cmd {
	return func(spec lab.WorkerSpec) *exec.Cmd {
		cfg, err := json.Marshal(workerConfig{Redis: redisAddr, Dialect: dialect, DSN: dsn, Spec: spec.Encode()})
		if err != nil {
			panic(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"="+string(cfg))
		cmd.Stderr = os.Stderr
		return cmd
	}
}

func runWorker(cfgText string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "lab test worker:", err)
		return 1
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(cfgText), &cfg); err != nil {
		return fail(err)
	}
	spec, err := lab.DecodeWorkerSpec(cfg.Spec)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Redis})
	defer rdb.Close()
	var db *lab.DB
	switch cfg.Dialect {
	case "postgres":
		pool, err := pgxpool.New(ctx, cfg.DSN)
		if err != nil {
			return fail(err)
		}
		defer pool.Close()
		db = lab.NewPostgres(pool)
	default:
		sqlDB, err := sql.Open("sqlite", cfg.DSN)
		if err != nil {
			return fail(err)
		}
		defer sqlDB.Close()
		db = lab.NewSQLite(sqlDB)
	}
	if err := lab.RunWorker(ctx, rdb, db, spec, os.Stdout, &lab.WorkerOptions{Stdin: os.Stdin}); err != nil {
		return fail(err)
	}
	return 0
}
