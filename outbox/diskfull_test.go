package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/outbox"
)

// TestRelayOnAFullDisk: drover_outbox lives on a file system that is full
// (a 1 MiB tmpfs tablespace, filled by another table) and its pages are
// full, so a batch's marks (an UPDATE whose new row versions need a new
// page) fail with SQLSTATE 53100 after the batch added its jobs. Flush
// must fail saying so, the rows stay pending, and once space is freed the
// same relay marks them, finding their jobs as duplicates: one job per
// row, without a restart.
func TestRelayOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	t.Parallel()
	ctx := context.Background()
	bundle := setupPostgres(t)
	admin := pgtest.Connect(t, bundle.dsn)
	exec1 := func(sql string) error {
		_, err := admin.Exec(ctx, sql)
		return err
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	owner, err := user.Lookup("postgres")
	if err != nil {
		owner, err = user.Lookup("nobody")
	}
	require.NoError(t, err)
	uid, _ := strconv.Atoi(owner.Uid)
	gid, _ := strconv.Atoi(owner.Gid)
	space := filepath.Join(dir, "ts")
	require.NoError(t, os.Mkdir(space, 0o700))
	require.NoError(t, os.Chown(space, uid, gid))
	// The server's user must reach the tablespace.
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	ts := fmt.Sprintf("tiny_outbox_%d", os.Getpid())
	require.NoError(t, exec1("CREATE TABLESPACE "+ts+" LOCATION '"+space+"'"))
	t.Cleanup(func() {
		_ = exec1("DROP TABLE IF EXISTS filler")
		_ = exec1("ALTER TABLE drover_outbox SET TABLESPACE pg_default")
		_ = exec1("DROP TABLESPACE " + ts)
	})
	require.NoError(t, exec1("ALTER TABLE drover_outbox SET TABLESPACE "+ts))

	// Rows of about 1.9 kB (kept in the page, not compressed): four fill
	// a page, and marking one needs room on another.
	pad := strings.Repeat("x", 1900)
	const n = 8
	for i := range n {
		bundle.add(t, job{queue: "q", name: "n", data: map[string]any{"i": i, "pad": pad}})
	}
	require.NoError(t, exec1("CREATE TABLE filler (pad text) TABLESPACE "+ts))
	require.NoError(t, exec1("ALTER TABLE filler ALTER COLUMN pad SET STORAGE PLAIN"))
	var full error
	for range 1000 {
		if full = exec1("INSERT INTO filler SELECT repeat('x', 2000) FROM generate_series(1, 20)"); full != nil {
			break
		}
	}
	var pgErr *pgconn.PgError
	require.True(t, errors.As(full, &pgErr) && pgErr.Code == "53100", "the tablespace filled up: %v", full)
	for range 100 { // the last pages' crumbs
		if exec1("INSERT INTO filler VALUES ('x')") != nil {
			break
		}
	}

	relay := bundle.relay(t, bundle.rdb, nil)
	_, err = relay.Flush(ctx)
	require.Error(t, err, "the marks cannot be stored")
	require.True(t, errors.As(err, &pgErr) && pgErr.Code == "53100", "the error says why: %v", err)
	require.Len(t, pending(bundle.rows(t)), n, "the rows stay pending")
	require.EqualValues(t, n, bundle.jobCount(t, "q"), "the batch's jobs are in Redis")

	require.NoError(t, exec1("DROP TABLE filler"))
	stats, err := relay.Flush(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Stats{Duplicates: n}, stats)
	require.Empty(t, pending(bundle.rows(t)))
	require.EqualValues(t, n, bundle.jobCount(t, "q"), "one job per row")
}
