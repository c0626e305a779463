package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
)

// TestDoOnAFullDisk: the ledger's table lives on a file system that is
// full (a 1 MiB tmpfs tablespace, filled by another table), so its claim
// cannot extend the table (SQLSTATE 53100, "could not extend file"). Do
// must fail with that error, writing no effect; once space is freed, the
// same Do claims the key and writes the effect once, without a new ledger
// or pool.
func TestDoOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	t.Parallel()
	ctx := context.Background()
	b := setupPostgres(t)
	admin := pgtest.Connect(t, b.dsn)
	tryExec := func(sql string) error {
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

	ts := fmt.Sprintf("tiny_%d", os.Getpid())
	b.exec(t, "CREATE TABLESPACE "+ts+" LOCATION '"+space+"'")
	t.Cleanup(func() {
		// The tablespace must be empty before it goes.
		_ = tryExec("DROP TABLE IF EXISTS filler")
		_ = tryExec("ALTER TABLE drover_operations SET TABLESPACE pg_default")
		_ = tryExec("DROP TABLESPACE " + ts)
	})
	b.exec(t, "ALTER TABLE drover_operations SET TABLESPACE "+ts)
	b.exec(t, "CREATE TABLE filler (pad text) TABLESPACE "+ts)
	b.exec(t, "ALTER TABLE filler ALTER COLUMN pad SET STORAGE PLAIN")
	var full error
	for range 1000 {
		if full = tryExec("INSERT INTO filler SELECT repeat('x', 2000) FROM generate_series(1, 20)"); full != nil {
			break
		}
	}
	var pgErr *pgconn.PgError
	require.True(t, errors.As(full, &pgErr), "the tablespace filled up: %v", full)
	require.Equal(t, "53100", pgErr.Code, "disk full: %v", full)

	key := idempotency.OpKey("effect", "full-disk")
	effect := func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		return []byte("done"), b.writeEffect(ctx, tx, key)
	}
	_, err = b.ledger.Do(ctx, key, effect)
	require.Error(t, err, "the claim cannot be stored")
	require.True(t, errors.As(err, &pgErr) && pgErr.Code == "53100", "the error says why: %v", err)
	require.ErrorContains(t, err, "operation")
	rows, _ := b.effects(t)
	require.Zero(t, rows, "no effect without its claim")

	b.exec(t, "DROP TABLE filler")
	res, err := b.ledger.Do(ctx, key, effect)
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Status)
	res, err = b.ledger.Do(ctx, key, effect)
	require.NoError(t, err)
	require.Equal(t, idempotency.AlreadyCompleted, res.Status)
	rows, _ = b.effects(t)
	require.Equal(t, 1, rows, "the effect written once")
}
