package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DiskFullCode is PostgreSQL's SQLSTATE for a file system out of space
// ("could not extend file").
const DiskFullCode = "53100"

// TinySpace is a 1 MiB tmpfs tablespace that a test moves a table onto and
// then fills, so the server answers writes that need a new page with
// [DiskFullCode]: the disk-full fault, without filling the machine's disk.
type TinySpace struct {
	admin *pgxpool.Pool
	name  string
	table string
}

var tinySpaces atomic.Int64

// NewTinySpace mounts a 1 MiB tmpfs, makes it a tablespace of the server
// admin is connected to, and moves table onto it. Mounting needs root: the
// test is skipped otherwise (the only pgtest helper that skips, because the
// fault cannot be made without it). When the test ends the table goes back
// to pg_default and the tablespace and the mount go away.
func NewTinySpace(tb testing.TB, admin *pgxpool.Pool, table string) *TinySpace {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to mount a tmpfs")
	}
	dir := tb.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		tb.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	tb.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	owner, err := user.Lookup("postgres")
	if err != nil {
		owner, err = user.Lookup("nobody")
	}
	if err != nil {
		tb.Fatalf("pgtest: no user to own the tablespace: %v", err)
	}
	uid, _ := strconv.Atoi(owner.Uid)
	gid, _ := strconv.Atoi(owner.Gid)
	space := filepath.Join(dir, "ts")
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatalf("pgtest: tiny tablespace: %v", err)
		}
	}
	must(os.Mkdir(space, 0o700))
	must(os.Chown(space, uid, gid))
	// The server's user must reach the tablespace.
	must(os.Chmod(dir, 0o755))
	must(os.Chmod(filepath.Dir(dir), 0o755))

	s := &TinySpace{admin: admin, table: table,
		name: fmt.Sprintf("tiny_%d_%d", os.Getpid(), tinySpaces.Add(1))}
	must(s.exec("CREATE TABLESPACE " + s.name + " LOCATION '" + space + "'"))
	tb.Cleanup(func() {
		// The tablespace must be empty before it goes.
		_ = s.exec("DROP TABLE IF EXISTS " + s.filler())
		_ = s.exec("ALTER TABLE " + table + " SET TABLESPACE pg_default")
		_ = s.exec("DROP TABLESPACE " + s.name)
	})
	must(s.exec("ALTER TABLE " + table + " SET TABLESPACE " + s.name))
	return s
}

// Fill fills the tablespace with a table of its own until the server
// answers [DiskFullCode], then takes the last pages' crumbs, so that any
// write needing a new page of the moved table fails. It fails the test if
// the space never fills or fails for another reason.
func (s *TinySpace) Fill(tb testing.TB) {
	tb.Helper()
	if err := s.exec("CREATE TABLE " + s.filler() + " (pad text) TABLESPACE " + s.name); err != nil {
		tb.Fatalf("pgtest: filler table: %v", err)
	}
	// Kept in the page, uncompressed: 2,000 bytes take 2,000 bytes.
	if err := s.exec("ALTER TABLE " + s.filler() + " ALTER COLUMN pad SET STORAGE PLAIN"); err != nil {
		tb.Fatalf("pgtest: filler table: %v", err)
	}
	var full error
	for range 1000 {
		if full = s.exec("INSERT INTO " + s.filler() + " SELECT repeat('x', 2000) FROM generate_series(1, 20)"); full != nil {
			break
		}
	}
	if !IsDiskFull(full) {
		tb.Fatalf("pgtest: the tablespace did not fill up: %v", full)
	}
	for range 100 {
		if s.exec("INSERT INTO "+s.filler()+" VALUES ('x')") != nil {
			break
		}
	}
}

// Free drops the filler, giving the space back.
func (s *TinySpace) Free(tb testing.TB) {
	tb.Helper()
	if err := s.exec("DROP TABLE " + s.filler()); err != nil {
		tb.Fatalf("pgtest: drop the filler: %v", err)
	}
}

// IsDiskFull reports whether err is the server's disk-full error.
func IsDiskFull(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == DiskFullCode
}

func (s *TinySpace) filler() string { return s.name + "_filler" }

func (s *TinySpace) exec(sql string) error {
	_, err := s.admin.Exec(context.Background(), sql)
	return err
}
