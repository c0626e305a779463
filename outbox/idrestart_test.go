package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestRelayRowIDsRestarted: the outbox table re-created (pgmigrate.Down to
// 1, then Up) restarts its row ids while Redis keeps the jobs of the old
// rows. A new row whose derived job id names an old row's job is not that
// job's duplicate: it is marked failed with the reason, never marked sent
// without becoming a job; and once the relays have a new JobIDPrefix and
// the row is set pending again, it becomes its own job.
func TestRelayRowIDsRestarted(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			b := d.setup(t)
			var migrate pgmigrate.DB
			if b.dialect == "postgres" {
				migrate = pgmigrate.Postgres(pgtest.Connect(t, b.dsn))
			} else {
				db, err := sql.Open("sqlite", b.dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = db.Close() })
				migrate = pgmigrate.SQLite(db)
			}

			b.add(t, job{queue: "mail", name: "welcome", data: map[string]any{"user": 1}})
			stats, err := b.newRelay(t, nil).Flush(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, stats.Created)
			// Time passes (the job's timestamp and the rows' created_at
			// count milliseconds).
			time.Sleep(5 * time.Millisecond)

			// The table is re-created: its ids start again at 1.
			_, err = pgmigrate.Down(ctx, migrate, 1, nil)
			require.NoError(t, err)
			_, err = pgmigrate.Up(ctx, migrate, nil)
			require.NoError(t, err)

			b.add(t, job{queue: "mail", name: "welcome", data: map[string]any{"user": 2}})
			logs := &testkit.SyncBuffer{}
			stats, err = b.newRelay(t, &outbox.RelayOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))}).Flush(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Stats{Failed: 1}, stats, "the new row is not the old job's duplicate")
			rows := b.rows(t)
			require.Len(t, rows, 1)
			require.True(t, rows[0].Failed, "the row is kept, failed")
			require.Contains(t, rows[0].LastError, "row ids restarted")
			require.Contains(t, rows[0].LastError, "JobIDPrefix")
			require.Contains(t, logs.String(), `level=ERROR msg="outbox row's job id names another row's job; marked failed" outbox_id=1 queue=mail job_id=outbox-1`)
			require.EqualValues(t, 1, b.jobCount(t, "mail"))

			// The remedy the reason names.
			b.exec(t, "UPDATE drover_outbox SET failed_at = NULL, last_error = NULL")
			stats, err = b.newRelay(t, &outbox.RelayOptions{JobIDPrefix: "outbox2-"}).Flush(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Stats{Created: 1}, stats)
			require.EqualValues(t, 2, b.jobCount(t, "mail"))
			job, err := b.queue(t, "mail").GetJob(ctx, "outbox2-1")
			require.NoError(t, err)
			require.JSONEq(t, `{"user":2}`, string(job.Data))
		})
	}
}

// TestRelayReAddOfARewrittenJobIsADuplicate: a relay that died after its
// add leaves the row pending; the job it added carries data an
// AddMiddleware rewrote, so the re-add finds a job with other data than
// the row's. Added after the row was written, it is the row's own job: a
// duplicate, not another row's (TestRelayRowIDsRestarted).
func TestRelayReAddOfARewrittenJobIsADuplicate(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			b := d.setup(t)
			stamp := func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
				out := make([]drover.BulkJob, len(jobs))
				for i, j := range jobs {
					j.Data = map[string]any{"stamped": time.Now().UnixNano(), "row": j.Data}
					out[i] = j
				}
				return next(ctx, out)
			}
			opts := func() *outbox.RelayOptions {
				return &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{
					Prefix: b.prefix, AddMiddleware: []drover.AddMiddleware{stamp},
				}}
			}
			b.add(t, job{queue: "mail", name: "welcome", data: map[string]any{"user": 1}})
			crashed := b.newRelay(t, opts())
			crash := errors.New("relay died after the add")
			outbox.SetTestHooks(crashed, nil, func(context.Context) error { return crash }, nil)
			_, err := crashed.Flush(ctx)
			require.ErrorIs(t, err, crash)

			stats, err := b.newRelay(t, opts()).Flush(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Stats{Duplicates: 1}, stats)
			require.Empty(t, pending(b.rows(t)))
			require.EqualValues(t, 1, b.jobCount(t, "mail"))
		})
	}
}
