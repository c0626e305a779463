package lab_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/lab"
	"github.com/seed40057009/drover/pgmigrate"
)

// sqliteDSN is how both processes of a run open the same SQLite file.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
}

type testBundle struct {
	rdb    *redis.Client
	prefix string
	db     *lab.DB
	logs   *testkit.SyncBuffer
	// opts run every scenario, with the worker process re-running this test binary.
	opts *lab.Options
}

// setup returns a migrated database of the dialect ("postgres" or "sqlite")
// with the lab's tables, and a key prefix on the shared redis-server.
func setup(t *testing.T, dialect string) *testBundle {
	t.Helper()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	var (
		db      *lab.DB
		migrate pgmigrate.DB
		dsn     string
	)
	switch dialect {
	case "postgres":
		pool := pgtest.Pool(t)
		dsn = pool.Config().ConnString()
		db, migrate = lab.NewPostgres(pool), pgmigrate.Postgres(pool)
	case "sqlite":
		dsn = sqliteDSN(filepath.Join(t.TempDir(), "lab.db"))
		sqlDB, err := sql.Open("sqlite", dsn)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, sqlDB.Close()) })
		db, migrate = lab.NewSQLite(sqlDB), pgmigrate.SQLite(sqlDB)
	default:
		t.Fatalf("unknown dialect %q", dialect)
	}
	_, err := pgmigrate.Up(ctx, migrate, nil)
	require.NoError(t, err)
	require.NoError(t, db.CreateTables(ctx))
	require.NoError(t, db.CreateTables(ctx), "CreateTables is idempotent")

	logs := &testkit.SyncBuffer{}
	return &testBundle{
		rdb: rdb, prefix: prefix, db: db, logs: logs,
		opts: &lab.Options{
			Prefix:        prefix,
			WorkerCommand: workerCommand(redistest.Shared(t).Addr, dialect, dsn),
			Logger:        slog.New(slog.NewJSONHandler(logs, nil)),
		},
	}
}

// requireExpected checks a passing report: every count as Expect says, and
// the details that show each failure really happened.
func requireExpected(t *testing.T, report *lab.Report, subjects ...string) {
	t.Helper()
	var table bytes.Buffer
	require.NoError(t, report.WriteTable(&table))
	require.True(t, report.OK, "report:\n%s", table.String())
	require.Len(t, report.Results, 3*len(subjects))
	i := 0
	for _, sc := range lab.Scenarios() {
		for _, subject := range subjects {
			res := report.Results[i]
			i++
			require.Equal(t, sc, res.Scenario)
			require.Equal(t, subject, res.Mode)
			safe := subject != lab.SubjectUnsafe
			exp := lab.Expect(sc, safe)
			require.Equal(t, exp, res.Expected)
			require.Equal(t, exp, lab.Expectation{
				Executions: res.Executions, Effects: res.Effects, AttemptsMade: res.AttemptsMade,
				StalledCount: res.StalledCount, JobsCreated: res.JobsCreated,
			}, "%s/%s", sc, subject)
			require.Empty(t, res.Problems)
			require.Len(t, res.ExecutionLog, res.Executions)

			claims := make([]string, len(res.ExecutionLog))
			for j, e := range res.ExecutionLog {
				claims[j] = e.Claim
			}
			switch {
			case !safe:
				require.Equal(t, []string{"none", "none"}, claims)
				require.Equal(t, 0, res.DuplicatesSuppressed)
			case sc == lab.DuplicateProducer:
				require.Equal(t, []string{"inserted"}, claims)
			default:
				require.Equal(t, []string{"inserted", "existed"}, claims)
				require.Equal(t, 1, res.DuplicatesSuppressed)
			}

			switch sc {
			case lab.ThrowAfterEffect:
				require.Equal(t, []int{1, 2}, []int{res.ExecutionLog[0].Attempt, res.ExecutionLog[1].Attempt})
				require.Equal(t, int64(2), res.InProcess.Executions)
			case lab.KilledAfterEffect:
				// The first execution ran in the killed process, the second
				// in this one; only the second is in this process's memory.
				require.Equal(t, "signal: killed", res.WorkerExit)
				require.Equal(t, res.WorkerPID, res.ExecutionLog[0].PID)
				require.NotEqual(t, os.Getpid(), res.WorkerPID)
				require.Equal(t, os.Getpid(), res.ExecutionLog[1].PID)
				require.Equal(t, 2, res.AttemptsStarted)
				require.Equal(t, int64(1), res.InProcess.Executions)
			case lab.DuplicateProducer:
				if safe {
					require.Equal(t, []string{"created", "duplicate"}, sortedAdds(res.Adds))
				} else {
					require.Equal(t, []string{"created", "created"}, res.Adds)
				}
			}
		}
	}
}

func sortedAdds(adds []string) []string {
	// The two producers race; which one created the job does not matter.
	if len(adds) == 2 && adds[0] == "duplicate" {
		return []string{adds[1], adds[0]}
	}
	return adds
}

func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite")
		report, err := lab.Run(ctx, b.rdb, b.db, b.opts)
		require.NoError(t, err)
		require.Equal(t, "sqlite", report.Database)
		requireExpected(t, report, lab.SubjectUnsafe, lab.SubjectSafe)
		keys, err := b.rdb.Keys(ctx, b.prefix+":*").Result()
		require.NoError(t, err)
		require.Empty(t, keys, "the lab obliterates its queues")
	})

	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "postgres")
		report, err := lab.Run(ctx, b.rdb, b.db, b.opts)
		require.NoError(t, err)
		require.Equal(t, "postgres", report.Database)
		requireExpected(t, report, lab.SubjectUnsafe, lab.SubjectSafe)

		// Observability: a finish line per execution in this process, with
		// the claim it found.
		var finishes []map[string]any
		for line := range strings.Lines(b.logs.String()) {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m))
			if m["msg"] == "processor finish" {
				finishes = append(finishes, m)
			}
		}
		// 2 + 1 (the other execution was the killed process's) + 2, per subject.
		require.Len(t, finishes, 2*(2+1+2)-1) // the safe duplicate producer runs once
		claims := map[string]int{}
		for _, m := range finishes {
			for _, k := range []string{"queue", "job_name", "job_id", "op_key", "attempt", "pid", "claim", "effect", "outcome"} {
				require.Contains(t, m, k)
			}
			claims[m["claim"].(string)]++
		}
		require.Equal(t, map[string]int{"none": 5, "inserted": 2, "existed": 2}, claims)
	})

	t.Run("KeepQueues", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite")
		b.opts.Scenarios = []lab.Scenario{lab.DuplicateProducer}
		b.opts.KeepQueues = true
		report, err := lab.Run(ctx, b.rdb, b.db, b.opts)
		require.NoError(t, err)
		require.True(t, report.OK)
		for _, res := range report.Results {
			n, err := b.rdb.Exists(ctx, b.prefix+":"+res.Queue+":completed").Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), n, "queue %s kept", res.Queue)
		}
	})

	// The lab must be able to fail: a "safe" subject that commits its
	// effect before claiming the key writes it twice, and the lab says so.
	t.Run("SabotagedSafeSubjectFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite")
		unsafe, err := b.db.Subject(lab.SubjectUnsafe)
		require.NoError(t, err)
		sabotaged, err := b.db.Subject(lab.SubjectSabotaged)
		require.NoError(t, err)
		b.opts.Subjects = []lab.Subject{unsafe, sabotaged}
		report, err := lab.Run(ctx, b.rdb, b.db, b.opts)
		require.NoError(t, err)
		require.False(t, report.OK)

		failed := report.Failed()
		require.Len(t, failed, 2)
		for i, sc := range []lab.Scenario{lab.ThrowAfterEffect, lab.KilledAfterEffect} {
			require.Equal(t, sc, failed[i].Scenario)
			require.Equal(t, lab.SubjectSabotaged, failed[i].Mode)
			require.Equal(t, 2, failed[i].Executions)
			require.Equal(t, 2, failed[i].Effects)
			require.Equal(t, []string{"effect written 2 times by a safe subject"}, failed[i].Problems)
			require.Equal(t, "FAIL: effect written 2 times by a safe subject", failed[i].Verdict)
		}
		var table bytes.Buffer
		require.NoError(t, report.WriteTable(&table))
		require.Contains(t, table.String(), "2 (want 1)")
		require.Contains(t, table.String(), "killed-after-effect / sabotaged failed")
	})

	// A subject of the user's own: its effects live in its own table.
	t.Run("OwnSubject", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "sqlite")
		var mu sync.Mutex
		written := map[string]int{} // in memory: fine without the killed-worker scenario
		own := lab.Subject{
			Name: "own",
			Safe: true,
			Effect: func(ctx context.Context, op lab.Operation) error {
				mu.Lock()
				defer mu.Unlock()
				if written[op.Key] == 0 {
					lab.ObserveEffect(ctx)
				}
				written[op.Key] = 1
				return nil
			},
			CountEffects: func(ctx context.Context, key string) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				return written[key], nil
			},
		}
		b.opts.Subjects = []lab.Subject{own}
		b.opts.WorkerCommand = nil // runs all scenarios but killed-after-effect
		report, err := lab.Run(ctx, b.rdb, b.db, b.opts)
		require.NoError(t, err)
		require.True(t, report.OK, "%+v", report.Failed())
		require.Len(t, report.Results, 2)
		require.Equal(t, lab.ThrowAfterEffect, report.Results[0].Scenario)
		require.Equal(t, lab.DuplicateProducer, report.Results[1].Scenario)
	})
}
