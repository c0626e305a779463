package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// redisServer is the one redis-server every Redis-backed peer shares:
// fresh, loopback only, persistence off.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
	rdb  *redis.Client
}

func startRedis(ctx context.Context) (*redisServer, error) {
	return startRedisWith(ctx, nil, 10*time.Second)
}

// startRedisCallgrind starts a second redis-server under valgrind's
// callgrind with instrumentation off; callgrind_c100 turns it on around the
// measured process only, so seeding is not counted. Instruction counts do
// not depend on the machine's load.
func startRedisCallgrind(ctx context.Context) (*redisServer, error) {
	for _, t := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(t); err != nil {
			return nil, fmt.Errorf("%s not found (apt-get install valgrind)", t)
		}
	}
	return startRedisWith(ctx, []string{"valgrind", "--tool=callgrind", "--instr-atstart=no"}, time.Minute)
}

func startRedisWith(ctx context.Context, wrapper []string, ready time.Duration) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found on PATH")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "drover-bench-redis-")
	if err != nil {
		return nil, err
	}
	s := &redisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	argv := append(append([]string{}, wrapper...), bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
		"--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log"))
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir = dir // callgrind writes callgrind.out.<pid> here
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	// FLUSHALL of a million-job backlog takes seconds: the harness' own
	// client waits for it (the peers keep their defaults).
	s.rdb = redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 2 * time.Minute})
	deadline := time.Now().Add(ready)
	for {
		if err = s.rdb.Ping(ctx).Err(); err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server at %s not ready: %w", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *redisServer) Stop() {
	if s.rdb != nil {
		s.rdb.Close()
	}
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	os.RemoveAll(s.dir)
}

func (s *redisServer) Reset(ctx context.Context) error {
	if err := s.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	return s.rdb.ConfigResetStat(ctx).Err()
}

func (s *redisServer) Version(ctx context.Context) string {
	info, err := s.rdb.Info(ctx, "server").Result()
	if err != nil {
		return "?"
	}
	return infoFields(info)["redis_version"]
}

// redisStats is a snapshot of INFO commandstats and INFO cpu.
type redisStats struct {
	calls   int64   // all command calls (commands run inside scripts included), INFO excluded
	evals   int64   // EVAL/EVALSHA/FCALL calls: round trips that ran a script
	reads   int64   // total_reads_processed: read events, i.e. client round trips
	cpuSecs float64 // used_cpu_user + used_cpu_sys
}

func (s *redisServer) Stats(ctx context.Context) (redisStats, error) {
	var st redisStats
	cmdstats, err := s.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return st, err
	}
	for name, v := range infoFields(cmdstats) {
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok || cmd == "info" {
			continue
		}
		for _, kv := range strings.Split(v, ",") {
			if c, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseInt(c, 10, 64)
				st.calls += n
				switch cmd {
				case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
					st.evals += n
				}
			}
		}
	}
	stats, err := s.rdb.Info(ctx, "stats").Result()
	if err != nil {
		return st, err
	}
	st.reads, _ = strconv.ParseInt(infoFields(stats)["total_reads_processed"], 10, 64)
	cpu, err := s.rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return st, err
	}
	f := infoFields(cpu)
	u, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
	y, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
	st.cpuSecs = u + y
	return st, nil
}

// callgrind runs callgrind_control with args against this server.
func (s *redisServer) callgrind(ctx context.Context, args ...string) error {
	argv := append(append([]string{}, args...), strconv.Itoa(s.cmd.Process.Pid))
	out, err := exec.CommandContext(ctx, "callgrind_control", argv...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("callgrind_control %v: %w: %s", args, err, out)
	}
	return nil
}

// callgrindDump turns instrumentation off, dumps the counters (which zeroes
// them) and returns the dump's total instructions (Ir).
func (s *redisServer) callgrindDump(ctx context.Context) (int64, error) {
	if err := s.callgrind(ctx, "-i", "off"); err != nil {
		return 0, err
	}
	before, _ := filepath.Glob(filepath.Join(s.dir, "callgrind.out.*"))
	if err := s.callgrind(ctx, "-d"); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		after, _ := filepath.Glob(filepath.Join(s.dir, "callgrind.out.*"))
		for _, f := range after {
			if slices.Contains(before, f) {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				for _, k := range []string{"totals:"} {
					if v, ok := strings.CutPrefix(line, k); ok {
						n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
						if err == nil {
							_ = os.Remove(f)
							return n, nil
						}
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, errors.New("callgrind dump: no totals line")
}

func infoFields(info string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// pgCluster is a throwaway PostgreSQL cluster for River: initdb into a temp
// dir (as an unprivileged user when we are root, since initdb refuses root),
// durability off like the Redis server (fsync, synchronous_commit and
// full_page_writes off), loopback only.
type pgCluster struct {
	URL     string // the bench database, recreated from a migrated template per run
	dir     string
	bindir  string
	cred    *syscall.Credential
	admin   *pgxpool.Pool
	version string
}

const (
	pgBenchDB    = "bench"
	pgTemplateDB = "bench_tpl"
)

func findPGBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/lib/postgresql/*/bin", name)
}

// unprivileged returns the credential to run initdb/postgres under when we
// are root: the "postgres" user if it exists, else "nobody".
func unprivileged() (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		if uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, name, nil
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}, "uid 65534", nil
}

func startPostgres(ctx context.Context, logf func(string, ...any)) (*pgCluster, error) {
	initdb, err := findPGBin("initdb")
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bindir: filepath.Dir(initdb)}
	cred, who, err := unprivileged()
	if err != nil {
		return nil, err
	}
	c.cred = cred
	// As root the cluster's user must reach the directory: use /tmp itself
	// rather than a TMPDIR that may sit under /root.
	parent := ""
	if cred != nil {
		parent = "/tmp"
	}
	c.dir, err = os.MkdirTemp(parent, "drover-bench-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		logf("postgres: running initdb and postgres as %s (initdb refuses root)", who)
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			c.Stop()
			return nil, err
		}
	}
	data := filepath.Join(c.dir, "data")
	if out, err := c.run(ctx, "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		c.Stop()
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		c.Stop()
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB", port, c.dir)
	if out, err := c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(c.dir, "postgres.log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		c.Stop()
		return nil, fmt.Errorf("pg_ctl start: %w: %s %s", err, out, c.log())
	}
	adminURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, pgBenchDB)
	c.admin, err = pgxpool.New(ctx, adminURL)
	if err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.admin.QueryRow(ctx, "SHOW server_version").Scan(&c.version); err != nil {
		c.Stop()
		return nil, err
	}
	// Migrate River's schema once into a template; every run gets a fresh copy.
	if _, err := c.admin.Exec(ctx, "CREATE DATABASE "+pgTemplateDB); err != nil {
		c.Stop()
		return nil, err
	}
	tplURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, pgTemplateDB)
	if err := migrateRiver(ctx, tplURL); err != nil {
		c.Stop()
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	return c, nil
}

func migrateRiver(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// run runs a PostgreSQL binary as the cluster's user.
func (c *pgCluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bindir, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "HOME="+c.dir, "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

func (c *pgCluster) log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Reset gives the bench database a fresh copy of the migrated schema.
func (c *pgCluster) Reset(ctx context.Context) error {
	if _, err := c.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgBenchDB+" WITH (FORCE)"); err != nil {
		return err
	}
	_, err := c.admin.Exec(ctx, "CREATE DATABASE "+pgBenchDB+" TEMPLATE "+pgTemplateDB)
	return err
}

// CPUSecs is the CPU time (user+sys) of the whole cluster so far: the
// postmaster, its reaped children (cutime/cstime) and its live children.
func (c *pgCluster) CPUSecs() (float64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0, err
	}
	total, _, err := procCPU(pm, true)
	if err != nil {
		return 0, err
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pm {
			continue
		}
		t, ppid, err := procCPU(pid, false)
		if err == nil && ppid == pm {
			total += t
		}
	}
	return total, nil
}

// procCPU reads utime+stime (plus cutime+cstime if withChildren) of pid in
// seconds, and its parent pid.
func procCPU(pid int, withChildren bool) (float64, int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may contain spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14 -> f[11].
	if len(f) < 15 {
		return 0, 0, errors.New("short stat")
	}
	ppid, _ := strconv.Atoi(f[1])
	ticks := 0.0
	idx := []int{11, 12}
	if withChildren {
		idx = append(idx, 13, 14)
	}
	for _, k := range idx {
		v, _ := strconv.ParseFloat(f[k], 64)
		ticks += v
	}
	return ticks / clockTicks, ppid, nil
}

// clockTicks is USER_HZ, 100 on every Linux we run on.
const clockTicks = 100.0

func (c *pgCluster) Stop() {
	if c.admin != nil {
		c.admin.Close()
	}
	if _, err := os.Stat(filepath.Join(c.dir, "data", "postmaster.pid")); err == nil {
		_, _ = c.run(context.Background(), "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	}
	os.RemoveAll(c.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
