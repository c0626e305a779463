package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// env is what the runs share: the servers and how to start each peer.
type env struct {
	impls  []string
	redis  *redisServer
	cg     *redisServer // redis-server under callgrind (callgrind_c100); nil: not used
	pg     *pgCluster
	peer   string // Go peer binary
	drover string // drover CLI binary (bigqueue)
	notes  []string
	// load averages (/proc/loadavg) when the runs began and ended
	loadStart, loadEnd string
}

func (e *env) Close() {
	if e.redis != nil {
		e.redis.Stop()
	}
	if e.cg != nil {
		e.cg.Stop()
	}
	if e.pg != nil {
		e.pg.Stop()
	}
}

// prepare installs what is missing, builds the Go peer and starts the servers.
func prepare(ctx context.Context, o options, impls []string, steps []step) (*env, error) {
	e := &env{impls: impls}
	t0 := time.Now()
	if !o.SkipInstall {
		if err := ensureTools(ctx); err != nil {
			return nil, err
		}
	}
	if slices.Contains(impls, "bullmq") {
		if err := ensureNodePeer(ctx, o.SkipInstall); err != nil {
			return nil, err
		}
	}
	var err error
	e.peer, err = buildPeer(ctx)
	if err != nil {
		return nil, err
	}
	e.drover, _ = filepath.Abs(filepath.Join("bin", "drover"))
	if out, err := command(ctx, "..", "go", "build", "-o", e.drover, "./cmd/drover"); err != nil {
		return nil, fmt.Errorf("go build ./cmd/drover: %w: %s", err, out)
	}
	logf("installed and built in %s", time.Since(t0).Round(100*time.Millisecond))
	if e.redis, err = startRedis(ctx); err != nil {
		return nil, err
	}
	logf("redis-server %s on %s", e.redis.Version(ctx), e.redis.Addr)
	if slices.Contains(e.impls, "river") {
		if e.pg, err = startPostgres(ctx, logf); err != nil {
			e.Close()
			return nil, err
		}
		logf("postgres %s at %s", e.pg.version, e.pg.URL)
	}
	if slices.ContainsFunc(steps, func(st step) bool { return st.callgrind }) {
		if e.cg, err = startRedisCallgrind(ctx); err != nil {
			e.notes = append(e.notes, "callgrind_c100 not run: "+err.Error())
			logf("callgrind: %v", err)
		} else {
			logf("redis-server under callgrind on %s", e.cg.Addr)
		}
	}
	return e, nil
}

// ensureTools installs redis-server (Debian package) when it is missing and
// checks for node and the PostgreSQL binaries.
func ensureTools(ctx context.Context) error {
	var pkgs []string
	if _, err := exec.LookPath("redis-server"); err != nil {
		pkgs = append(pkgs, "redis-server")
	}
	if _, err := exec.LookPath("node"); err != nil {
		pkgs = append(pkgs, "nodejs", "npm")
	}
	if _, err := findPGBin("initdb"); err != nil {
		pkgs = append(pkgs, "postgresql")
	}
	if len(pkgs) == 0 {
		return nil
	}
	logf("installing %s", strings.Join(pkgs, " "))
	apt := []string{"apt-get"}
	if os.Geteuid() != 0 {
		apt = []string{"sudo", "apt-get"}
	}
	install := append(slices.Clone(apt), append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)...)
	if out, err := command(ctx, "", install...); err != nil {
		if out2, err2 := command(ctx, "", append(slices.Clone(apt), "update")...); err2 != nil {
			return fmt.Errorf("apt-get update: %w: %s", err2, out2)
		}
		if out, err = command(ctx, "", install...); err != nil {
			return fmt.Errorf("apt-get install %s: %w: %s", strings.Join(pkgs, " "), err, out)
		}
		_ = out
	}
	return nil
}

// ensureNodePeer runs npm ci in node/ when BullMQ is missing or the lock
// file is newer than the install.
func ensureNodePeer(ctx context.Context, skip bool) error {
	lock, err := os.Stat("node/package-lock.json")
	if err != nil {
		return err
	}
	inst, err := os.Stat("node/node_modules/.package-lock.json")
	_, errB := os.Stat("node/node_modules/bullmq/package.json")
	if err == nil && errB == nil && !lock.ModTime().After(inst.ModTime()) {
		return nil
	}
	if skip {
		return errors.New("node/node_modules is missing or stale and -skip-install is set")
	}
	logf("npm ci in bench/node")
	if out, err := command(ctx, "node", "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"); err != nil {
		return fmt.Errorf("npm ci: %w: %s", err, out)
	}
	return nil
}

// buildPeer builds the Go peer (asynq, River and drover, from ../).
func buildPeer(ctx context.Context) (string, error) {
	bin, _ := filepath.Abs(filepath.Join("bin", "peer"))
	if out, err := command(ctx, "", "go", "build", "-o", bin, "./cmd/peer"); err != nil {
		return "", fmt.Errorf("go build ./cmd/peer: %w: %s", err, out)
	}
	return bin, nil
}

func command(ctx context.Context, dir string, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// peerResult is the JSON line a peer prints (bench/cmd/peer, result).
type peerResult struct {
	Impl     string             `json:"impl"`
	Scenario string             `json:"scenario"`
	N        int                `json:"n"`
	Seconds  float64            `json:"seconds"`
	Rate     float64            `json:"rate"`
	P50ms    float64            `json:"p50_ms"`
	P99ms    float64            `json:"p99_ms"`
	MaxMs    float64            `json:"max_ms"`
	FirstMs  float64            `json:"first_ms"`
	Extra    map[string]float64 `json:"extra,omitempty"`
	CPUus    float64            `json:"cpu_us"`
	RSSkb    int64              `json:"rss_kb"`
	Inflight int                `json:"inflight"`
	Note     string             `json:"note"`
	Error    string             `json:"error"`
}

// sample is one measured process.
type sample struct {
	Run      int        `json:"run"`
	Step     string     `json:"step"`
	Impl     string     `json:"impl"`
	N        int        `json:"n"`
	Peer     peerResult `json:"peer"`
	WallSecs float64    `json:"wall_s"`     // the whole measured process, start-up included
	MaxRSSKB int64      `json:"max_rss_kb"` // peak RSS of the measured process (rusage)
	ProcCPUs float64    `json:"proc_cpu_s"` // user+sys of the whole measured process (rusage)
	SeedSecs float64    `json:"seed_s"`     // the seeding process, if any
	Redis    *srvDelta  `json:"redis,omitzero"`
	Load     [3]float64 `json:"load"` // /proc/loadavg (1, 5, 15 min) just before the measured process
	// QuietSecs is how long the machine took to become quiet before the
	// measured process (waitQuiet); QuietBusy the share of all CPUs busy in
	// the last window looked at.
	QuietSecs float64 `json:"quiet_s"`
	QuietBusy float64 `json:"quiet_busy"`
	PGCPUs    float64 `json:"pg_cpu_s,omitempty"`
	Err       string  `json:"error,omitempty"`
}

type srvDelta struct {
	Calls   int64   `json:"calls"`
	Evals   int64   `json:"evals"`
	Reads   int64   `json:"reads"` // read events (total_reads_processed): round trips
	CPUSecs float64 `json:"cpu_s"`
	Instr   int64   `json:"instr,omitempty"` // callgrind Ir (callgrind_c100)
}

func (s sample) summary() string {
	p := s.Peer
	var b strings.Builder
	if p.Rate > 0 && p.P50ms == 0 {
		fmt.Fprintf(&b, "%.0f jobs/s", p.Rate)
	}
	if p.P50ms != 0 {
		fmt.Fprintf(&b, "p50 %.2f ms p99 %.2f ms", p.P50ms, p.P99ms)
	}
	if s.Step == "mem" {
		fmt.Fprintf(&b, "%d in flight, rss %.1f MB, peak %.1f MB", p.Inflight, float64(p.RSSkb)/1024, float64(s.MaxRSSKB)/1024)
	}
	if s.N > 0 && p.CPUus > 0 && s.Step != "mem" {
		fmt.Fprintf(&b, ", client %.1f µs/job", p.CPUus/float64(s.N))
	}
	if s.Redis != nil && s.Redis.Calls > 0 {
		fmt.Fprintf(&b, ", redis %.1f cmds/job %.1f µs/job", float64(s.Redis.Calls)/float64(s.N), s.Redis.CPUSecs*1e6/float64(s.N))
	}
	if s.PGCPUs > 0 {
		fmt.Fprintf(&b, ", postgres %.1f µs/job", s.PGCPUs*1e6/float64(s.N))
	}
	if p.Note != "" {
		fmt.Fprintf(&b, " (%s)", p.Note)
	}
	return b.String()
}

// measure resets the backend, seeds if the step needs it and runs the
// measured peer process.
func (e *env) measure(ctx context.Context, o options, run int, st step, impl string) sample {
	s := sample{Run: run, Step: st.name, Impl: impl, N: st.n}
	fail := func(err error) sample { s.Err = err.Error(); return s }
	srv := e.redis
	if st.callgrind {
		if e.cg == nil {
			return fail(errors.New("no redis-server under callgrind"))
		}
		srv = e.cg
		o.PeerTimeout *= 4 // valgrind runs Redis several times slower
	}
	if err := srv.Reset(ctx); err != nil {
		return fail(fmt.Errorf("reset redis: %w", err))
	}
	if impl == "river" {
		if err := e.pg.Reset(ctx); err != nil {
			return fail(fmt.Errorf("reset postgres: %w", err))
		}
	}
	logName := filepath.Join(o.LogDir, fmt.Sprintf("run%d-%s-%s.log", run, st.name, impl))
	if st.pre != nil {
		pr, _, err := e.runPeer(ctx, o, srv, "drover", st.pre, logName+".pre")
		if err != nil {
			return fail(fmt.Errorf("pre-seed: %w", err))
		}
		s.SeedSecs += pr.Seconds
	}
	if st.seed != nil {
		pr, _, err := e.runPeer(ctx, o, srv, impl, st.seed, logName+".seed")
		if err != nil {
			return fail(fmt.Errorf("seed: %w", err))
		}
		s.SeedSecs += pr.Seconds
	}
	var before redisStats
	var pgBefore float64
	if st.server {
		var err error
		if impl == "river" {
			pgBefore, err = e.pg.CPUSecs()
		} else {
			before, err = srv.Stats(ctx)
		}
		if err != nil {
			return fail(fmt.Errorf("server stats: %w", err))
		}
	}
	if st.callgrind {
		if err := srv.callgrind(ctx, "-z"); err != nil {
			return fail(err)
		}
		if err := srv.callgrind(ctx, "-i", "on"); err != nil {
			return fail(err)
		}
	}
	s.QuietSecs, s.QuietBusy = waitQuiet(ctx)
	s.Load = loadAvg()
	pr, ru, err := e.runPeer(ctx, o, srv, impl, st.args, logName)
	s.Peer = pr
	if ru != nil {
		s.WallSecs = ru.wall.Seconds()
		s.MaxRSSKB = ru.maxRSSKB
		s.ProcCPUs = ru.cpu.Seconds()
	}
	if err != nil {
		return fail(err)
	}
	if st.server {
		if impl == "river" {
			// Let exited backends be reaped into the postmaster's cutime.
			time.Sleep(50 * time.Millisecond)
			after, err := e.pg.CPUSecs()
			if err != nil {
				return fail(fmt.Errorf("server stats: %w", err))
			}
			s.PGCPUs = after - pgBefore
		} else {
			var instr int64
			if st.callgrind {
				if instr, err = srv.callgrindDump(ctx); err != nil {
					return fail(err)
				}
			}
			after, err := srv.Stats(ctx)
			if err != nil {
				return fail(fmt.Errorf("server stats: %w", err))
			}
			// Stats itself runs three INFO commands, which are not counted
			// in calls (a few reads are).
			s.Redis = &srvDelta{Calls: after.calls - before.calls, Evals: after.evals - before.evals,
				Reads: after.reads - before.reads, CPUSecs: after.cpuSecs - before.cpuSecs, Instr: instr}
		}
	}
	return s
}

type rusage struct {
	wall     time.Duration
	cpu      time.Duration
	maxRSSKB int64
}

// runPeer starts one peer process, waits for it and returns its JSON line
// and rusage. Its stderr goes to logName.
func (e *env) runPeer(ctx context.Context, o options, srv *redisServer, impl string, args []string, logName string) (peerResult, *rusage, error) {
	var pr peerResult
	common := []string{
		"--redis=" + srv.Addr,
		// The peer gives up (and says why) a little before it is killed.
		fmt.Sprintf("--timeout-s=%.1f", max(o.PeerTimeout-10*time.Second, o.PeerTimeout*9/10).Seconds()),
	}
	var argv []string
	if impl == "bullmq" {
		argv = append([]string{"node", "node/peer.mjs"}, common...)
	} else {
		argv = append([]string{e.peer, "--impl=" + impl}, common...)
		if impl == "river" {
			argv = append(argv, "--pg="+e.pg.URL, "--river-poll="+o.RiverPoll.String())
		}
		if impl == "drover" {
			argv = append(argv, "--drover-bin="+e.drover)
		}
	}
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(ctx, o.PeerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	logFile, err := os.Create(logName)
	if err != nil {
		return pr, nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "$ %s\n", strings.Join(argv, " "))
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = logFile
	t0 := time.Now()
	runErr := cmd.Run()
	ru := &rusage{wall: time.Since(t0)}
	if st := cmd.ProcessState; st != nil {
		if r, ok := st.SysUsage().(*syscall.Rusage); ok {
			ru.maxRSSKB = r.Maxrss
			ru.cpu = time.Duration(r.Utime.Nano() + r.Stime.Nano())
		}
	}
	fmt.Fprintf(logFile, "stdout: %s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &pr); err != nil {
		return pr, ru, fmt.Errorf("%s peer: %v (no result line; see %s)", impl, runErr, logName)
	}
	if pr.Error != "" {
		return pr, ru, fmt.Errorf("%s peer: %s", impl, pr.Error)
	}
	if runErr != nil {
		return pr, ru, fmt.Errorf("%s peer: %w", impl, runErr)
	}
	return pr, ru, nil
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute load averages.
// Quiet-machine wait before a measured process: the servers' background work
// of the previous run (PostgreSQL's checkpointer and autovacuum after a
// River run, a big FLUSHALL's freeing) used to land in the next
// implementation's measurement. A window is quiet when at most quietBusy of
// all CPUs were busy; after quietMax the run goes on regardless (the sample
// records what it saw).
const (
	quietWindow = 100 * time.Millisecond
	quietBusy   = 0.15
	quietMax    = 5 * time.Second
)

// waitQuiet waits until a quietWindow passes with at most quietBusy of the
// CPUs busy, or quietMax. It returns the time waited and the busy share of
// the last window (-1 when /proc/stat cannot be read).
func waitQuiet(ctx context.Context) (waited, busy float64) {
	began := time.Now()
	prevBusy, prevTotal, ok := cpuTicks()
	if !ok {
		return 0, -1
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(began).Seconds(), busy
		case <-time.After(quietWindow):
		}
		b, t, ok := cpuTicks()
		if !ok || t == prevTotal {
			return time.Since(began).Seconds(), -1
		}
		busy = float64(b-prevBusy) / float64(t-prevTotal)
		prevBusy, prevTotal = b, t
		if busy <= quietBusy || time.Since(began) >= quietMax {
			return time.Since(began).Seconds(), busy
		}
	}
}

// cpuTicks reads the machine's busy and total CPU ticks from /proc/stat's
// first line (busy: everything but idle and iowait).
func cpuTicks() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, true
}

func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

func loadString() string {
	l := loadAvg()
	return fmt.Sprintf("%.2f, %.2f, %.2f", l[0], l[1], l[2])
}
