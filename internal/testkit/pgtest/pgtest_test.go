package pgtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func TestPool(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("EachTestGetsItsOwnDatabase", func(t *testing.T) {
		t.Parallel()

		a, b := Pool(t), Pool(t)
		var nameA, nameB string
		require.NoError(t, a.QueryRow(ctx, "SELECT current_database()").Scan(&nameA))
		require.NoError(t, b.QueryRow(ctx, "SELECT current_database()").Scan(&nameB))
		require.NotEqual(t, nameA, nameB)
		require.Contains(t, nameA, "eachtestgetsitsowndatabase")

		_, err := a.Exec(ctx, "CREATE TABLE only_in_a (id int)")
		require.NoError(t, err)
		var found bool
		require.NoError(t, b.QueryRow(ctx, "SELECT to_regclass('only_in_a') IS NOT NULL").Scan(&found))
		require.False(t, found)
	})

	t.Run("DatabaseIsDroppedWhenTheTestEnds", func(t *testing.T) {
		t.Parallel()

		var name string
		t.Run("Inner", func(t *testing.T) {
			require.NoError(t, Pool(t).QueryRow(ctx, "SELECT current_database()").Scan(&name))
		})
		var exists bool
		require.NoError(t, Pool(t).QueryRow(ctx,
			"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists))
		require.False(t, exists, "database %s outlived its test", name)
	})

	t.Run("DSNWorksWithConnect", func(t *testing.T) {
		t.Parallel()

		dsn := DSN(t)
		require.True(t, strings.HasPrefix(dsn, "postgres://"), dsn)
		pool := Connect(t, dsn+"&pool_max_conns=7")
		require.EqualValues(t, 7, pool.Config().MaxConns)
		var one int
		require.NoError(t, pool.QueryRow(ctx, "SELECT 1").Scan(&one))
		require.Equal(t, 1, one)
	})

	t.Run("ServerSettingsAreForThrowawayData", func(t *testing.T) {
		t.Parallel()

		if os.Getenv(EnvDatabaseURL) != "" {
			t.Skip("an external server keeps its own settings")
		}
		pool := Pool(t)
		var fsync, listen string
		require.NoError(t, pool.QueryRow(ctx, "SHOW fsync").Scan(&fsync))
		require.NoError(t, pool.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen))
		require.Equal(t, "off", fsync)
		require.Equal(t, "127.0.0.1", listen)
	})
}

func TestDBName(t *testing.T) {
	t.Parallel()

	t.Run("IsALowerCaseIdentifierOfAtMost63Bytes", func(t *testing.T) {
		t.Parallel()

		name := dbName(t)
		require.LessOrEqual(t, len(name), 63)
		require.Regexp(t, `^t[0-9]+_[a-z0-9_]+$`, name)
	})

	t.Run("IsUniqueForTheSameTest", func(t *testing.T) {
		t.Parallel()

		require.NotEqual(t, dbName(t), dbName(t))
	})
}

func TestFindBinDir(t *testing.T) {
	// Not parallel: it sets an environment variable.

	t.Run("EnvVarWithoutBinariesFailsWithInstallHint", func(t *testing.T) {
		t.Setenv(EnvBinDir, t.TempDir())
		_, err := findBinDir()
		require.ErrorContains(t, err, "does not hold both initdb and postgres")
		require.ErrorContains(t, err, "apt-get install -y postgresql")
	})

	t.Run("FindsTheMachinesBinaries", func(t *testing.T) {
		t.Setenv(EnvBinDir, "")
		dir, err := findBinDir()
		require.NoError(t, err)
		require.FileExists(t, filepath.Join(dir, "postgres"))
	})
}

func TestSweepStale(t *testing.T) {
	t.Parallel()

	base := t.TempDir()
	mk := func(name string, ownerPID int) string {
		dir := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(ownerPID)), 0o644))
		return dir
	}

	// A pid that certainly belonged to a process which has exited.
	done := exec.Command("true")
	require.NoError(t, done.Run())
	deadPID := done.Process.Pid

	stale := mk("drover-pg-stale", deadPID)
	live := mk("drover-pg-live", os.Getpid())
	serverAlive := mk("drover-pg-server-alive", deadPID)
	require.NoError(t, os.WriteFile(filepath.Join(serverAlive, "data", "postmaster.pid"),
		[]byte(strconv.Itoa(os.Getpid())+"\n/some/dir\n"), 0o600))
	notOurs := filepath.Join(base, "drover-pg-no-owner")
	require.NoError(t, os.Mkdir(notOurs, 0o755))

	sweepStale(base)

	require.NoDirExists(t, stale)
	require.DirExists(t, live)
	require.DirExists(t, serverAlive)
	require.DirExists(t, notOurs)
}

func TestSearchableByAll(t *testing.T) {
	t.Parallel()

	require.True(t, searchableByAll("/"))
	private := filepath.Join(t.TempDir(), "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.False(t, searchableByAll(private))
	require.False(t, searchableByAll(filepath.Join(private, "child")))
}
