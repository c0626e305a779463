package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

func TestMain(m *testing.M) {
	// A re-executed copy of this binary is a relay process of the crash
	// test (see crash_test.go), not a test run.
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
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

// job is one row to add through AddTx.
type job struct {
	queue string
	name  string
	data  any
	opts  *drover.JobOptions
}

// rowState is a drover_outbox row as the tests check it.
type rowState struct {
	ID        int64
	Queue     string
	Sent      bool
	JobID     string
	Failed    bool
	LastError string
}

// testBundle is a migrated database, a Redis key prefix, and the outbox
// between them. It hides the database's transaction type.
type testBundle struct {
	dialect string
	dsn     string
	rdb     *redis.Client
	prefix  string
	// add writes the jobs with AddTx in one transaction and commits.
	add func(t *testing.T, jobs ...job)
	// addErr is one AddTx, committed if it succeeds; it returns AddTx's error.
	addErr func(t *testing.T, j job) error
	// addRolledBack writes the jobs with AddTx and rolls back.
	addRolledBack func(t *testing.T, jobs ...job)
	// relay makes a relay from the bundle's outbox to rdb, closed when the
	// test ends; without QueueOptions it adds to the bundle's prefix.
	relay func(t *testing.T, rdb redis.UniversalClient, opts *outbox.RelayOptions) *outbox.Relay
	prune func(ctx context.Context, before time.Time) (int64, error)
	rows  func(t *testing.T) []rowState
	exec  func(t *testing.T, sql string)
}

var dialects = []struct {
	name  string
	setup func(t *testing.T) *testBundle
}{
	{"Postgres", setupPostgres},
	{"SQLite", setupSQLite},
}

// newRelay makes a relay to the bundle's Redis.
func (b *testBundle) newRelay(t *testing.T, opts *outbox.RelayOptions) *outbox.Relay {
	t.Helper()
	return b.relay(t, b.rdb, opts)
}

func (b *testBundle) queue(t *testing.T, name string) *drover.Queue {
	t.Helper()
	q, err := drover.NewQueue(b.rdb, name, &drover.QueueOptions{Prefix: b.prefix})
	require.NoError(t, err)
	return q
}

// jobCount is how many jobs queue holds, in any state.
func (b *testBundle) jobCount(t *testing.T, name string) int64 {
	t.Helper()
	counts, err := b.queue(t, name).GetJobCounts(context.Background())
	require.NoError(t, err)
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

func relayWithPrefix(t *testing.T, prefix string, newRelay func(*outbox.RelayOptions) (*outbox.Relay, error), opts *outbox.RelayOptions) *outbox.Relay {
	t.Helper()
	o := outbox.RelayOptions{}
	if opts != nil {
		o = *opts
	}
	if o.QueueOptions == nil {
		o.QueueOptions = &drover.QueueOptions{Prefix: prefix}
	}
	r, err := newRelay(&o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

const (
	pgRows   = "SELECT id, queue, sent_at IS NOT NULL, coalesce(job_id, ''), failed_at IS NOT NULL, coalesce(last_error, '') FROM drover_outbox ORDER BY id"
	liteRows = pgRows
)

func setupPostgres(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	pool := pgtest.Connect(t, dsn)
	_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	rdb, prefix := redistest.Client(t)
	ob := outbox.NewPostgres(pool)

	addAll := func(t *testing.T, commit bool, jobs ...job) error {
		t.Helper()
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		for _, j := range jobs {
			if err := ob.AddTx(ctx, tx, j.queue, j.name, j.data, j.opts); err != nil {
				return err
			}
		}
		if commit {
			require.NoError(t, tx.Commit(ctx))
		}
		return nil
	}
	return &testBundle{
		dialect: "postgres",
		dsn:     dsn,
		rdb:     rdb,
		prefix:  prefix,
		add: func(t *testing.T, jobs ...job) {
			t.Helper()
			require.NoError(t, addAll(t, true, jobs...))
		},
		addErr: func(t *testing.T, j job) error {
			t.Helper()
			return addAll(t, true, j)
		},
		addRolledBack: func(t *testing.T, jobs ...job) {
			t.Helper()
			require.NoError(t, addAll(t, false, jobs...))
		},
		relay: func(t *testing.T, rdb redis.UniversalClient, opts *outbox.RelayOptions) *outbox.Relay {
			t.Helper()
			return relayWithPrefix(t, prefix, func(o *outbox.RelayOptions) (*outbox.Relay, error) {
				return outbox.NewRelay(ob, rdb, o)
			}, opts)
		},
		prune: ob.Prune,
		rows: func(t *testing.T) []rowState {
			t.Helper()
			rows, err := pool.Query(ctx, pgRows)
			require.NoError(t, err)
			out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rowState, error) {
				var s rowState
				err := r.Scan(&s.ID, &s.Queue, &s.Sent, &s.JobID, &s.Failed, &s.LastError)
				return s, err
			})
			require.NoError(t, err)
			return out
		},
		exec: func(t *testing.T, sql string) {
			t.Helper()
			_, err := pool.Exec(ctx, sql)
			require.NoError(t, err)
		},
	}
}

// sqliteDSN is how every process of a test opens the same SQLite file.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
}

func setupSQLite(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "outbox.db"))
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
	require.NoError(t, err)
	rdb, prefix := redistest.Client(t)
	ob := outbox.NewSQLite(db)

	addAll := func(t *testing.T, commit bool, jobs ...job) error {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		for _, j := range jobs {
			if err := ob.AddTx(ctx, tx, j.queue, j.name, j.data, j.opts); err != nil {
				return err
			}
		}
		if commit {
			require.NoError(t, tx.Commit())
		}
		return nil
	}
	return &testBundle{
		dialect: "sqlite",
		dsn:     dsn,
		rdb:     rdb,
		prefix:  prefix,
		add: func(t *testing.T, jobs ...job) {
			t.Helper()
			require.NoError(t, addAll(t, true, jobs...))
		},
		addErr: func(t *testing.T, j job) error {
			t.Helper()
			return addAll(t, true, j)
		},
		addRolledBack: func(t *testing.T, jobs ...job) {
			t.Helper()
			require.NoError(t, addAll(t, false, jobs...))
		},
		relay: func(t *testing.T, rdb redis.UniversalClient, opts *outbox.RelayOptions) *outbox.Relay {
			t.Helper()
			return relayWithPrefix(t, prefix, func(o *outbox.RelayOptions) (*outbox.Relay, error) {
				return outbox.NewRelay(ob, rdb, o)
			}, opts)
		},
		prune: ob.Prune,
		rows: func(t *testing.T) []rowState {
			t.Helper()
			rs, err := db.QueryContext(ctx, liteRows)
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
		},
		exec: func(t *testing.T, sql string) {
			t.Helper()
			_, err := db.ExecContext(ctx, sql)
			require.NoError(t, err)
		},
	}
}

// pending lists the ids of rows neither sent nor failed.
func pending(rows []rowState) []int64 {
	var out []int64
	for _, r := range rows {
		if !r.Sent && !r.Failed {
			out = append(out, r.ID)
		}
	}
	return out
}

func outboxJobID(id int64) string { return "outbox-" + strconv.FormatInt(id, 10) }
