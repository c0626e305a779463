package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// flushResult is what a Flush returned.
type flushResult struct {
	stats outbox.Stats
	err   error
}

// TestRelaySQLiteOneVerdict: two relays of one SQLite outbox that would
// judge a row differently (one knows the row's custom backoff type, the
// other does not) settle it once, as on PostgreSQL: the relay that claimed
// it decides, and the other does not touch it meanwhile. Relays used to
// read the same pending rows; here the second marked the row failed while
// the first, holding its job already added, marked it sent, and the row
// ended both sent and failed.
func TestRelaySQLiteOneVerdict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupSQLite(t)
	bundle.add(t, job{queue: "q", name: "n", data: 1, opts: &drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: "custom"}}})

	knows := bundle.newRelay(t, &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: bundle.prefix, BackoffTypes: []string{"custom"}}})
	other := bundle.newRelay(t, nil)
	added, release := make(chan struct{}), make(chan struct{})
	outbox.SetTestHooks(knows, nil, func(context.Context) error {
		close(added)
		<-release
		return nil
	}, nil)
	done := make(chan flushResult, 1)
	go func() {
		stats, err := knows.Flush(ctx)
		done <- flushResult{stats, err}
	}()
	<-added // the job is in Redis, the row not marked yet
	otherStats, err := other.Flush(ctx)
	require.NoError(t, err)
	close(release)
	first := <-done
	require.NoError(t, first.err)

	rows := bundle.rows(t)
	require.Equal(t, []rowState{{ID: 1, Queue: "q", Sent: true, JobID: "outbox-1"}}, rows)
	require.Equal(t, outbox.Stats{Created: 1}, first.stats)
	require.Equal(t, outbox.Stats{}, otherStats, "the claimed row is not the other relay's to judge")
	require.EqualValues(t, 1, bundle.jobCount(t, "q"))
}

// TestRelaySQLiteLeaseRunsOut: a batch that outlives its claim's lease (here
// 300ms; Redis unreachable that long, say) may see another relay take its
// rows; that relay's verdict stands and the late batch marks nothing, so
// the row is settled once and its job added once.
func TestRelaySQLiteLeaseRunsOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupSQLite(t)
	bundle.add(t, job{queue: "q", name: "n", data: 1})
	db, err := sql.Open("sqlite", bundle.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	ob := outbox.NewSQLite(db)
	outbox.SetSQLiteLease(ob, 300*time.Millisecond)
	logs := &bytes.Buffer{}
	slow, err := outbox.NewRelay(ob, bundle.rdb, &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: bundle.prefix},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	added, release := make(chan struct{}), make(chan struct{})
	outbox.SetTestHooks(slow, nil, func(context.Context) error {
		close(added)
		<-release
		return nil
	}, nil)
	done := make(chan flushResult, 1)
	go func() {
		stats, err := slow.Flush(ctx)
		done <- flushResult{stats, err}
	}()
	<-added

	other := bundle.newRelay(t, nil)
	stats, err := other.Flush(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Stats{}, stats, "the lease holds")
	time.Sleep(400 * time.Millisecond)
	stats, err = other.Flush(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Stats{Duplicates: 1}, stats, "the lease ran out: the row is the other relay's")
	close(release)
	late := <-done
	require.NoError(t, late.err)
	require.Equal(t, outbox.Stats{Created: 1}, late.stats, "its add created the job")
	require.Contains(t, logs.String(), "outbox rows taken over by another relay while this batch ran; its verdict on them stands")
	require.Equal(t, []rowState{{ID: 1, Queue: "q", Sent: true, JobID: "outbox-1"}}, bundle.rows(t))
	require.EqualValues(t, 1, bundle.jobCount(t, "q"))
	require.NoError(t, slow.Close(ctx))
}

// TestRelaySQLiteNeedsClaimColumns: a relay over a SQLite outbox migrated
// before 003_outbox_claims fails its batch saying which migration is
// missing; the rows stay pending.
func TestRelaySQLiteNeedsClaimColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(t.TempDir(), "old.db")))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = pgmigrate.Up(ctx, pgmigrate.SQLite(db), &pgmigrate.UpOptions{TargetVersion: 2})
	require.NoError(t, err)
	ob := outbox.NewSQLite(db)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, ob.AddTx(ctx, tx, "q", "n", nil, nil))
	require.NoError(t, tx.Commit())
	rdb, prefix := redistest.Client(t)
	relay, err := outbox.NewRelay(ob, rdb, &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: prefix}})
	require.NoError(t, err)
	_, err = relay.Flush(ctx)
	require.ErrorContains(t, err, "the outbox table lacks the claim columns of migration 003_outbox_claims: run pgmigrate.Up")
	var pendingRows int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM drover_outbox WHERE sent_at IS NULL AND failed_at IS NULL").Scan(&pendingRows))
	require.Equal(t, 1, pendingRows)
}
