package outbox_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

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

			// The table is re-created: its ids start again at 1.
			_, err = pgmigrate.Down(ctx, migrate, 1, nil)
			require.NoError(t, err)
			_, err = pgmigrate.Up(ctx, migrate, nil)
			require.NoError(t, err)

			b.add(t, job{queue: "mail", name: "welcome", data: map[string]any{"user": 2}})
			stats, err = b.newRelay(t, nil).Flush(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Stats{Failed: 1}, stats, "the new row is not the old job's duplicate")
			rows := b.rows(t)
			require.Len(t, rows, 1)
			require.True(t, rows[0].Failed, "the row is kept, failed")
			require.Contains(t, rows[0].LastError, "row ids restarted")
			require.Contains(t, rows[0].LastError, "JobIDPrefix")
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
