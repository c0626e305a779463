package clustertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// installHint says how to get the binaries this package runs.
const installHint = "install them with `apt-get install -y redis-server redis-tools` (make deps does this); " +
	"cluster and sentinel tests need redis-server >= 7.0 and redis-cli"

// lookPath finds a Redis binary or says how to install it.
func lookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH; %s", name, installHint)
	}
	return p, nil
}

// Node is one redis-server process (a cluster node, a sentinel's data node or
// a sentinel) owned by the test binary.
type Node struct {
	// Addr is "127.0.0.1:<port>".
	Addr string
	// Port is the client port. A cluster node's bus is Port+10000.
	Port int

	bin  string
	args []string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process was reaped
}

// Port range for nodes. Ports are drawn below the kernel's ephemeral range
// (32768 and up on Linux) so that a cluster bus port (Port+10000) cannot
// collide with an outgoing connection's port.
const (
	portMin  = 12000
	portSpan = 10000
	busShift = 10000
)

var (
	portMu   sync.Mutex
	usedPort = map[int]bool{}
)

// pickPort returns a loopback port that is free now and not handed out
// before by this process; with bus, Port+10000 is free too.
func pickPort(bus bool) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 500 {
		p := portMin + rand.IntN(portSpan)
		if usedPort[p] || (bus && usedPort[p+busShift]) {
			continue
		}
		if !portFree(p) || (bus && !portFree(p+busShift)) {
			continue
		}
		usedPort[p] = true
		if bus {
			usedPort[p+busShift] = true
		}
		return p, nil
	}
	return 0, errors.New("no free loopback port pair (p, p+10000) found in 12000-31999")
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// startNode starts redis-server on a fresh port with args built by mkArgs
// (given the port and the node's directory), retrying on another port when
// the first one was taken in the meantime. conf, if not empty, is written to
// <dir>/node.conf and passed as the config file (sentinels need one).
func startNode(bin string, bus bool, conf func(port int, dir string) string, mkArgs func(port int, dir string) []string) (*Node, error) {
	var lastErr error
	for range 5 {
		port, err := pickPort(bus)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "drover-cluster-")
		if err != nil {
			return nil, err
		}
		var args []string
		if conf != nil {
			path := filepath.Join(dir, "node.conf")
			if err := os.WriteFile(path, []byte(conf(port, dir)), 0o600); err != nil {
				return nil, err
			}
			args = append(args, path)
		}
		args = append(args,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--daemonize", "no", "--protected-mode", "no", "--logfile", "", "--shutdown-timeout", "0")
		args = append(args, mkArgs(port, dir)...)
		n := &Node{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, bin: bin, args: args, dir: dir}
		if err := n.launch(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if err := n.waitReady(10 * time.Second); err != nil {
			n.Stop()
			lastErr = err
			continue
		}
		return n, nil
	}
	return nil, fmt.Errorf("redis-server did not start: %w", lastErr)
}

// launch starts the process, logging to <dir>/redis.log (appended).
func (n *Node) launch() error {
	n.done = make(chan struct{})
	n.cmd = exec.Command(n.bin, n.args...)
	n.cmd.SysProcAttr = sysProcAttr()
	logFile, err := os.OpenFile(filepath.Join(n.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	err = n.cmd.Start()
	_ = logFile.Close()
	if err != nil {
		return fmt.Errorf("start %s: %w", n.bin, err)
	}
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(n.cmd, n.done)
	return nil
}

// Kill ends the node with SIGKILL, as a crash would, and keeps its directory
// (a cluster node's nodes.conf) so that Restart brings the same node back.
func (n *Node) Kill() {
	_ = n.cmd.Process.Kill()
	<-n.done
}

// Freeze stops the node's process (SIGSTOP), as a stalled VM would: its
// connections stay open and nothing is answered. The returned function
// resumes it (SIGCONT); calling it more than once is harmless.
func (n *Node) Freeze() (thaw func()) {
	_ = n.cmd.Process.Signal(syscall.SIGSTOP)
	var once sync.Once
	return func() { once.Do(func() { _ = n.cmd.Process.Signal(syscall.SIGCONT) }) }
}

// Restart starts a killed node again on the same port with the same
// configuration and waits until it answers. A cluster node rejoins the
// cluster; one whose slots were taken over comes back as a replica.
func (n *Node) Restart() error {
	if err := n.launch(); err != nil {
		return err
	}
	return n.waitReady(10 * time.Second)
}

// waitReady waits until the node answers PING.
func (n *Node) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-n.done:
			return fmt.Errorf("redis-server on %s exited: %s", n.Addr, n.Log())
		default:
		}
		conn, err := net.DialTimeout("tcp", n.Addr, 200*time.Millisecond)
		if err == nil {
			_, _ = conn.Write([]byte("PING\r\n"))
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			line, rerr := bufio.NewReader(conn).ReadString('\n')
			_ = conn.Close()
			if rerr == nil && strings.HasPrefix(line, "+PONG") {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s not ready after %s: %s", n.Addr, timeout, n.Log())
}

// Log returns the tail of the node's log.
func (n *Node) Log() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "redis.log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// Stop ends the node (SIGTERM, so it also ends a replication fork child;
// SIGKILL after two seconds) and removes its directory. It is idempotent.
func (n *Node) Stop() {
	if n.cmd.Process != nil {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(2 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	}
	_ = os.RemoveAll(n.dir)
}

// CPUTime returns the CPU time (user + system) the node's process has used so
// far. It reads /proc/<pid>/stat, so it works on Linux only, and assumes the
// usual 100 clock ticks per second.
func (n *Node) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after "(comm)": state is field 3, utime 14, stime 15.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc stat for pid %d", n.cmd.Process.Pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// Client returns a new single-node client of this node; the caller closes it.
func (n *Node) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
}

// waitReplicated waits until replicas replicas are attached to master and
// each has acknowledged master's replication offset as of the call, so every
// write the master took before the call survives its failover.
func waitReplicated(ctx context.Context, master *Node, replicas int) error {
	rdb := master.Client()
	defer func() { _ = rdb.Close() }()
	repl, err := info(ctx, rdb, "replication")
	if err != nil {
		return err
	}
	target, err := strconv.ParseInt(repl["master_repl_offset"], 10, 64)
	if err != nil {
		return fmt.Errorf("master_repl_offset of %s: %w", master.Addr, err)
	}
	return poll(ctx, 20*time.Millisecond, "wait for the replicas of "+master.Addr+" to catch up", func(ctx context.Context) (bool, string, error) {
		repl, err := info(ctx, rdb, "replication")
		if err != nil {
			return notYet("", err)
		}
		acked := 0
		for i := range replicas {
			// slave0:ip=127.0.0.1,port=6380,state=online,offset=1234,lag=0
			f := parseFields(strings.ReplaceAll(repl[fmt.Sprintf("slave%d", i)], ",", "\n"), '=')
			if off, err := strconv.ParseInt(f["offset"], 10, 64); err == nil && off >= target && f["state"] == "online" {
				acked++
			}
		}
		return acked == replicas, fmt.Sprintf("%d of %d replicas at offset %d", acked, replicas, target), nil
	})
}

// info returns the fields of INFO section.
func info(ctx context.Context, rdb *redis.Client, section string) (map[string]string, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	return parseFields(s, ':'), nil
}

// parseFields parses "k<sep>v" lines (INFO, CLUSTER INFO).
func parseFields(s string, sep byte) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.IndexByte(line, sep); i > 0 && !strings.HasPrefix(line, "#") {
			m[line[:i]] = line[i+1:]
		}
	}
	return m
}

// notYet is a poll condition's answer to a transient error: not ready, with
// the error as the reason. (Nodes refuse commands while they change role.)
func notYet(where string, err error) (bool, string, error) {
	return false, where + err.Error(), nil
}

// poll calls cond every interval until it returns true or an error, or ctx
// ends; the last "not yet" reason is reported on timeout.
func poll(ctx context.Context, interval time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) error {
	last := ""
	for {
		ok, why, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if why != last && os.Getenv("CLUSTERTEST_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "%s %s: %s\n", time.Now().Format("15:04:05.000"), what, why)
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %s)", what, context.Cause(ctx), last)
		case <-time.After(interval):
		}
	}
}
