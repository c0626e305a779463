// Package pgtest starts a throwaway PostgreSQL cluster for tests and hands each
// test its own database, so the tests of one package can run in parallel
// against one server.
//
// The cluster is created lazily, once per test binary: initdb into a temporary
// directory, then the postgres server on a free loopback port with its unix
// socket in that directory and durability off (fsync, synchronous_commit and
// full_page_writes off), since nothing in it needs to survive. [Main] (or
// [Stop]) shuts it down and removes the directory after the package's tests.
//
// Every call to [DSN] or [Pool] creates a fresh database (a file copy of
// template1, a few tens of milliseconds) that is dropped when the test ends.
// A database per test, rather than a schema, keeps LISTEN/NOTIFY channels and
// advisory locks, which are database-wide, from leaking between parallel tests.
//
// # Finding PostgreSQL
//
// The server binaries (initdb, postgres) are looked up in $DROVER_PG_BINDIR,
// then on PATH, then in /usr/lib/postgresql/<version>/bin (where Debian's
// postgresql package installs them without touching PATH), newest version
// first. When none is found the test fails, with a message that says how to
// install them: tests never skip because a server is missing.
//
// To use an already running server instead (a CI service container, say), set
// $DROVER_TEST_DATABASE_URL to a postgres:// URL of a role that may CREATE
// DATABASE; each test then gets a database there.
//
// # Running as root
//
// initdb and postgres refuse to run as root. When the test binary is root,
// pgtest runs both as the "postgres" user if it exists, else as "nobody",
// with the cluster directory owned by that user; on Linux the server also gets
// a parent-death signal, so a test binary killed by -timeout or SIGKILL does
// not leave a server behind. Directories of such killed runs are removed by
// the next run. A non-root developer runs the server as themselves.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed40057009/drover/internal/testkit/faultproxy"
)

// Environment variables that change where the server comes from.
const (
	// EnvBinDir names a directory holding initdb and postgres.
	EnvBinDir = "DROVER_PG_BINDIR"
	// EnvDatabaseURL points pgtest at a running server instead of starting one.
	EnvDatabaseURL = "DROVER_TEST_DATABASE_URL"
)

const installHint = "install PostgreSQL's server binaries: `apt-get install -y postgresql` on Debian/Ubuntu " +
	"(they land in /usr/lib/postgresql/<version>/bin, which pgtest searches), `brew install postgresql@15` on macOS; " +
	"or set " + EnvBinDir + " to the directory holding initdb and postgres, or " + EnvDatabaseURL +
	" to a postgres:// URL of a running server"

var (
	shared     *cluster
	sharedErr  error
	sharedOnce sync.Once
	sharedMu   sync.Mutex // guards shared against Stop racing a late first use
	dbSeq      atomic.Int64
)

// Main runs the package's tests and then stops the shared cluster, if one was
// started. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop shuts the shared cluster down and removes its directory. It is for a
// TestMain that already wraps m.Run in another helper (redistest.Main, say);
// otherwise use [Main]. Stop is a no-op when no cluster was started.
func Stop() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.stop()
		shared = nil
	}
}

// DSN creates a fresh database for this test and returns a postgres:// URL
// for it, for handing to a child process or to [Connect]. The database is
// dropped (disconnecting any remaining sessions) when the test ends.
func DSN(tb testing.TB) string {
	tb.Helper()
	c := sharedCluster(tb)
	name := dbName(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+c.createSuffix); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := c.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return c.dsnFor(name)
}

// Pool creates a fresh database for this test (see [DSN]) and returns a pool
// of connections to it, closed when the test ends. The pool's DSN, for child
// processes, is pool.Config().ConnString().
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return Connect(tb, DSN(tb))
}

// Connect opens a pool to dsn, closed when the test ends. Pool settings can
// ride on the DSN, e.g. "&pool_max_conns=64". Connect starts no server, so
// a child process handed a DSN uses Connect, never [Pool].
func Connect(tb testing.TB, dsn string) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", dsn, err)
	}
	tb.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		tb.Fatalf("pgtest: ping %s: %v", dsn, err)
	}
	return pool
}

// ConnectThroughProxy is Connect to dsn through a fault proxy of its own
// (closed when the test ends), for tests that break the network to the
// server: the proxy and the pool.
func ConnectThroughProxy(tb testing.TB, dsn string) (*faultproxy.Proxy, *pgxpool.Pool) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("pgtest: parse %s: %v", dsn, err)
	}
	proxy, err := faultproxy.Start(u.Host)
	if err != nil {
		tb.Fatalf("pgtest: proxy to %s: %v", u.Host, err)
	}
	tb.Cleanup(func() { _ = proxy.Close() })
	u.Host = proxy.Addr
	return proxy, Connect(tb, u.String())
}

// Server is a PostgreSQL cluster of the caller's own, not the shared one,
// for tests that crash and restart the server (the chaos soak). Close it.
type Server struct {
	c *cluster
}

// StartServer initialises and starts a throwaway cluster on a free loopback
// port. $DROVER_PG_DATABASE_URL is not used: an external server cannot be
// restarted.
//
// Unlike the shared cluster it commits durably (synchronous_commit on): a
// crashed server keeps every transaction it reported committed.
func StartServer() (*Server, error) {
	c, err := startLocal(true)
	if err != nil {
		return nil, err
	}
	return &Server{c: c}, nil
}

// Own starts a cluster of the test's own (StartServer), stopped when the
// test ends, for tests that freeze, crash or restart it.
func Own(tb testing.TB) *Server {
	tb.Helper()
	s, err := StartServer()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Pool creates database name on s and returns a pool of connections to it,
// closed when the test ends.
func (s *Server) Pool(tb testing.TB, name string) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, err := s.CreateDB(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	return Connect(tb, dsn)
}

// CreateDB creates database name and returns its postgres:// URL.
func (s *Server) CreateDB(ctx context.Context, name string) (string, error) {
	if _, err := s.c.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+s.c.createSuffix); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return s.c.dsnFor(name), nil
}

// Crash stops the server at once (SIGQUIT: no checkpoint; on start it
// recovers from its WAL) and returns when it has exited.
func (s *Server) Crash() {
	s.c.admin.Close()
	s.c.admin = nil
	s.c.killServer()
}

// Start starts a crashed server again on the same port and data directory
// and returns once it accepts connections.
func (s *Server) Start() error {
	if err := s.c.startServer(s.c.binDir, s.c.dataDir, s.c.port, s.c.runAs); err != nil {
		return err
	}
	if err := s.c.connectAdmin(60 * time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, s.c.log())
	}
	return nil
}

// Signal sends sig to the server's postmaster and every process it
// started (backends and auxiliary processes, each in a session of its
// own): SIGSTOP freezes the server as a stuck host would, with its
// connections open; SIGCONT thaws it. SIGSTOP stops the postmaster first,
// so that it starts no backend the signal would miss.
func (s *Server) Signal(sig syscall.Signal) error {
	if s.c.cmd == nil || s.c.cmd.Process == nil {
		return errors.New("pgtest: the server is not running")
	}
	pid := s.c.cmd.Process.Pid
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("pgtest: signal the postmaster: %w", err)
	}
	children, err := childrenOf(pid)
	if err != nil {
		return err
	}
	for _, c := range children {
		_ = syscall.Kill(c, sig) // one that exited meanwhile needs none
	}
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() { s.c.stop() }

func sharedCluster(tb testing.TB) *cluster {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		tb.Fatalf("pgtest: %v", sharedErr)
	}
	if shared == nil {
		tb.Fatalf("pgtest: the cluster was already stopped (a test ran after pgtest.Main or pgtest.Stop)")
	}
	return shared
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName is unique in this cluster and carries the test's name, for whoever
// looks at pg_stat_activity while a test hangs.
func dbName(tb testing.TB) string {
	name := "t" + strconv.FormatInt(dbSeq.Add(1), 10) + "_" + nonIdent.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimRight(name, "_")
}

// cluster is a running server: one started by us, or an external one.
type cluster struct {
	base         *url.URL // URL of the maintenance database; dsnFor swaps the path
	admin        *pgxpool.Pool
	createSuffix string // CREATE DATABASE options the server supports

	// Set only for a server we started.
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	binDir  string
	dataDir string
	port    int
	runAs   *osUser
	// durable makes a commit wait for its WAL write (synchronous_commit
	// on), so a crash of the server loses no committed transaction; fsync
	// stays off, as the machine itself does not crash.
	durable bool
}

func (c *cluster) dsnFor(db string) string {
	u := *c.base
	u.Path = "/" + db
	return u.String()
}

func start() (*cluster, error) {
	if raw := os.Getenv(EnvDatabaseURL); raw != "" {
		return connectExternal(raw)
	}
	return startLocal(false)
}

func connectExternal(raw string) (*cluster, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s must be a postgres:// URL, got %q", EnvDatabaseURL, raw)
	}
	c := &cluster{base: u}
	if err := c.connectAdmin(30 * time.Second); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", EnvDatabaseURL, err)
	}
	return c, nil
}

func startLocal(durable bool) (*cluster, error) {
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	runAs, err := serverUser()
	if err != nil {
		return nil, err
	}
	base, err := baseDir(runAs != nil)
	if err != nil {
		return nil, err
	}
	sweepStale(base)

	dir, err := os.MkdirTemp(base, "drover-pg-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	c := &cluster{dir: dir, durable: durable}
	ok := false
	defer func() {
		if !ok {
			c.stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("write owner.pid: %w", err)
	}
	if runAs != nil {
		if err := os.Chown(dir, runAs.uid, runAs.gid); err != nil {
			return nil, fmt.Errorf("give %s to user %s: %w", dir, runAs.name, err)
		}
	}

	dataDir := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(binDir, "initdb"),
		"-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.Env = serverEnv(dir)
	initdb.SysProcAttr = sysProcAttr(runAs, false)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb %s: %w\n%s", dataDir, err, tail(out))
	}

	// The port is free when we look and may be taken when postgres binds it;
	// try a few.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		if err := c.startServer(binDir, dataDir, port, runAs); err != nil {
			lastErr = err
			continue
		}
		c.binDir, c.dataDir, c.port, c.runAs = binDir, dataDir, port, runAs
		c.base = &url.URL{
			Scheme:   "postgres",
			User:     url.User("postgres"),
			Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Path:     "/postgres",
			RawQuery: "sslmode=disable",
		}
		if err := c.connectAdmin(30 * time.Second); err != nil {
			lastErr = fmt.Errorf("%w\n%s", err, c.log())
			c.killServer()
			continue
		}
		ok = true
		return c, nil
	}
	return nil, fmt.Errorf("postgres did not start: %w", lastErr)
}

func (c *cluster) startServer(binDir, dataDir string, port int, runAs *osUser) error {
	logFile, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// The server runs in the foreground as our child rather than through
	// pg_ctl, which daemonizes it: as a child it can be tied to our lifetime
	// (see sysProcAttr) and waited for.
	syncCommit := "off"
	if c.durable {
		syncCommit = "on"
	}
	cmd := exec.Command(filepath.Join(binDir, "postgres"),
		"-D", dataDir,
		"-p", strconv.Itoa(port),
		"-k", c.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit="+syncCommit,
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=64MB",
		"-c", "log_min_messages=warning",
	)
	cmd.Dir = c.dir
	cmd.Env = serverEnv(c.dir)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(runAs, true)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	return nil
}

func (c *cluster) connectAdmin(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(c.base.String())
	if err != nil {
		return err
	}
	cfg.MaxConns = 4
	for {
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			if err = pool.Ping(ctx); err == nil {
				if err := c.probeServer(ctx, pool); err != nil {
					pool.Close()
					return err
				}
				c.admin = pool
				return nil
			}
			pool.Close()
		}
		select {
		case <-c.exited: // nil channel for an external server: never ready
			return errors.New("postgres exited")
		case <-ctx.Done():
			return fmt.Errorf("server at %s not ready after %s: %w", c.base.Host, timeout, err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// probeServer picks the fastest CREATE DATABASE form the server has: a file
// copy (PostgreSQL 15+) is cheaper than WAL-logging every page of template1.
func (c *cluster) probeServer(ctx context.Context, pool *pgxpool.Pool) error {
	var version int
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fmt.Errorf("read server version: %w", err)
	}
	if version < 130000 {
		return fmt.Errorf("PostgreSQL %d is too old: pgtest needs 13 or newer (DROP DATABASE ... WITH (FORCE))", version)
	}
	if version >= 150000 {
		c.createSuffix = " STRATEGY FILE_COPY"
	}
	return nil
}

func (c *cluster) stop() {
	if c.admin != nil {
		c.admin.Close()
	}
	c.killServer()
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

func (c *cluster) killServer() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	// SIGQUIT is an immediate shutdown: the cluster is thrown away, so there
	// is no point in a checkpoint.
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
}

func (c *cluster) log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	return tail(b)
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// findBinDir returns the directory holding both initdb and postgres.
func findBinDir() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(EnvBinDir); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("%s=%s does not hold both initdb and postgres; %s", EnvBinDir, dir, installHint)
		}
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		// Follow a symlink on PATH (Debian's postgresql-common wrappers, a
		// hand-made /usr/local/bin link) to the directory with postgres.
		for _, candidate := range []string{p, resolve(p)} {
			if dir := filepath.Dir(candidate); has(dir) {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found; " + installHint)
}

func resolve(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return p
	}
	return r
}

// versionOf reads 15 from /usr/lib/postgresql/15/bin.
func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// osUser is the unprivileged user the server runs as when we are root.
type osUser struct {
	name     string
	uid, gid int
}

// serverUser returns nil when we are not root: the server runs as us.
func serverUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &osUser{name: name, uid: uid, gid: gid}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run initdb " +
		"and postgres as (they refuse root); create one with `useradd --system postgres`")
}

// baseDir is where cluster directories go: os.TempDir(), unless we are root
// and the server user could not reach into it (a TMPDIR under /root, say).
func baseDir(asOtherUser bool) (string, error) {
	dir := os.TempDir()
	if !asOtherUser || searchableByAll(dir) {
		return dir, nil
	}
	if searchableByAll("/tmp") {
		return "/tmp", nil
	}
	return "", fmt.Errorf("neither %s nor /tmp can be entered by other users, so the unprivileged server user cannot use them; set TMPDIR to a directory it can reach", dir)
}

func searchableByAll(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// sweepStale removes cluster directories whose test binary is gone and whose
// server is no longer running: what a killed run leaves behind.
func sweepStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "drover-pg-*"))
	for _, dir := range dirs {
		owner, err := readPID(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue // being created right now, or not ours
		}
		if alive(owner) {
			continue
		}
		if server, err := readPID(filepath.Join(dir, "data", "postmaster.pid")); err == nil && alive(server) {
			continue // never stop a server we did not start
		}
		_ = os.RemoveAll(dir)
	}
}

// readPID reads the number on the first line of a pid file.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// serverEnv is a minimal environment: the "nobody" user's HOME does not
// exist, and a developer's PG* variables must not leak into the cluster.
func serverEnv(dir string) []string {
	env := []string{"HOME=" + dir, "LC_ALL=C", "TZ=UTC"}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
