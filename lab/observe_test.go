package lab_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/lab"
	"github.com/seed40057009/drover/pgmigrate"
)

func TestObserve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		ledger   *idempotency.Ledger[*sql.Tx]
		logs     *testkit.SyncBuffer
		counters *lab.Counters
		opts     *lab.ObserveOptions
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(t.TempDir(), "ledger.db")))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		_, err = pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil)
		require.NoError(t, err)
		logs := &testkit.SyncBuffer{}
		counters := &lab.Counters{}
		return &testBundle{
			ledger: idempotency.NewSQLite(db, nil), logs: logs, counters: counters,
			opts: &lab.ObserveOptions{
				Logger: slog.New(slog.NewJSONHandler(logs, nil)), Counters: counters,
				OpKey: func(job *drover.Job) string { return "charge:" + job.ID },
			},
		}
	}

	lines := func(t *testing.T, b *testBundle) []map[string]any {
		t.Helper()
		var out []map[string]any
		for line := range strings.Lines(b.logs.String()) {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m))
			delete(m, "time")
			delete(m, "duration")
			delete(m, "pid") // checked apart
			out = append(out, m)
		}
		return out
	}

	t.Run("ClaimInsertedThenExisted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		proc := lab.Observe(drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			_, err := lab.ObserveDo(ctx, b.ledger, "charge:"+job.ID, func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
				return nil, nil
			})
			return nil, err
		}), b.opts)
		for attempt := 1; attempt <= 2; attempt++ {
			_, err := proc.Process(ctx, &drover.Job{ID: "7", Name: "charge", AttemptsStarted: attempt})
			require.NoError(t, err)
		}
		require.Equal(t, lab.CounterValues{Executions: 2, Effects: 1, DuplicatesSuppressed: 1}, b.counters.Values())
		start := func(attempt float64) map[string]any {
			return map[string]any{"level": "INFO", "msg": "processor start", "queue": "", "job_name": "charge",
				"job_id": "7", "op_key": "charge:7", "attempt": attempt}
		}
		finish := func(attempt float64, claim string, effect bool) map[string]any {
			m := start(attempt)
			m["msg"], m["claim"], m["effect"], m["outcome"] = "processor finish", claim, effect, "ok"
			return m
		}
		require.Equal(t, []map[string]any{
			start(1), finish(1, "inserted", true), start(2), finish(2, "existed", false),
		}, lines(t, b))
		require.Contains(t, b.logs.String(), `"pid":`)
	})

	t.Run("ErrorRollsBackTheClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		boom := errors.New("card declined")
		proc := lab.Observe(drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			return lab.ObserveDo(ctx, b.ledger, "charge:"+job.ID, func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
				return nil, boom
			})
		}), b.opts)
		_, err := proc.Process(ctx, &drover.Job{ID: "8", Name: "charge", AttemptsStarted: 1})
		require.ErrorIs(t, err, boom)
		require.Equal(t, lab.CounterValues{Executions: 1}, b.counters.Values())
		got := lines(t, b)
		require.Len(t, got, 2)
		require.Equal(t, "inserted", got[1]["claim"])
		require.Equal(t, false, got[1]["effect"])
		require.Equal(t, "error", got[1]["outcome"])
		require.Equal(t, "card declined", got[1]["error"])
	})

	t.Run("EffectWithoutClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		proc := lab.Observe(drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			lab.ObserveEffect(ctx)
			return nil, nil
		}), b.opts)
		_, err := proc.Process(ctx, &drover.Job{ID: "9", Name: "mail", AttemptsStarted: 1})
		require.NoError(t, err)
		require.Equal(t, lab.CounterValues{Executions: 1, Effects: 1}, b.counters.Values())
		got := lines(t, b)
		require.Equal(t, "none", got[1]["claim"])
		require.Equal(t, true, got[1]["effect"])
	})

	t.Run("NilOptionsAndNoWrapper", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Without Observe around it, ObserveDo is Ledger.Do.
		res, err := lab.ObserveDo(ctx, b.ledger, "k", func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
			return []byte("r"), nil
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status)
		lab.ObserveEffect(ctx) // no-op

		proc := lab.Observe(drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			return "done", nil
		}), nil)
		v, err := proc.Process(ctx, &drover.Job{ID: "1"})
		require.NoError(t, err)
		require.Equal(t, "done", v)
	})
}
