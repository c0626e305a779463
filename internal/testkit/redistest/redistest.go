// Package redistest starts a real redis-server for tests and hands each test
// its own key prefix, so tests of one package can run in parallel against one
// server without FLUSHDB.
//
// The server is started lazily, once per test binary, on a free loopback port
// with persistence off, and stopped by [Main] after the package's tests ran.
// When redis-server is not on PATH the test fails with a message that says how
// to install it: tests never skip because a server is missing.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process owned by the test binary.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	prefixSeq  atomic.Int64
)

// Main runs the package's tests and then stops the shared server, if one was
// started. Call it from TestMain: os.Exit(redistest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Shared returns the package's redis-server, starting it on first use.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	s, err := SharedServer()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return s
}

// SharedServer is Shared for code without a testing.TB, such as Example
// functions.
func SharedServer() (*Server, error) {
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	return shared, sharedErr
}

// Start launches a new redis-server on a free loopback port. extraArgs are
// passed through as config directives, e.g. "--cluster-enabled", "yes".
// The caller owns the server and must Stop it.
func Start(extraArgs ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found on PATH; install it with `apt-get install -y redis-server` (make test does this)")
	}
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		s, err := startOn(bin, port, extraArgs, 10*time.Second)
		if err != nil {
			lastErr = err
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("redis-server did not start: %w", lastErr)
}

// startOn starts redis-server on port and waits up to ready for it to
// answer there.
func startOn(bin string, port int, extraArgs []string, ready time.Duration) (*Server, error) {
	dir, err := os.MkdirTemp("", "drover-redis-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--protected-mode", "no",
	}
	args = append(args, extraArgs...)
	cmd := exec.Command(bin, args...)
	dieWithParent(cmd)
	logFile, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	logFile.Close()
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	if err := s.waitReady(ready); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady waits until s's own process answers on s.Addr. Another
// redis-server may hold the port (taken between FreePort's probe and this
// server's bind, by a test starting one in parallel): its answer is not
// this server's, whose bind failed. Each try reads INFO's process_id.
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid) + "\r\n"
	other := ""
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			_, _ = conn.Write([]byte("INFO server\r\n"))
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			info, rerr := readBulk(bufio.NewReader(conn))
			conn.Close()
			switch {
			case rerr == nil && strings.Contains(info, want):
				return nil
			case rerr == nil && strings.Contains(info, "process_id:"):
				other = " (another redis-server answers there)"
			}
		}
		if s.cmd.ProcessState != nil {
			return fmt.Errorf("redis-server exited: %s", s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server at %s not ready after %s%s: %s", s.Addr, timeout, other, s.log())
}

// readBulk reads one RESP bulk string reply; an error reply (LOADING, ...)
// is an error.
func readBulk(r *bufio.Reader) (string, error) {
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(head, "$"), "\r\n"))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		return "", fmt.Errorf("not a bulk reply: %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	return string(body[:n]), nil
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Signal sends sig to the server process: SIGSTOP pauses it (connections
// stay open and nothing answers, as a server stuck in a long fork or a
// frozen VM), SIGCONT resumes it.
func (s *Server) Signal(sig os.Signal) error {
	if s.cmd.Process == nil {
		return errors.New("redistest: server not started")
	}
	return s.cmd.Process.Signal(sig)
}

// Pausable starts a server of the test's own, which the test may pause
// with Signal(syscall.SIGSTOP); when the test ends it is resumed and
// stopped.
func Pausable(tb testing.TB) *Server {
	tb.Helper()
	srv, err := Start()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Signal(syscall.SIGCONT); srv.Stop() })
	return srv
}

// Crash kills the server (SIGKILL) and starts it again on the same address
// and directory with the same arguments: without persistence (the
// default) it comes back empty; with appendonly it reloads its file.
func (s *Server) Crash() error {
	if s.cmd.Process == nil {
		return errors.New("redistest: server not started")
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	logFile, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	var lastErr error
	for range 50 { // the port may take a moment to be free again
		cmd := exec.Command(s.cmd.Path, s.cmd.Args[1:]...)
		dieWithParent(cmd)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("restart redis-server: %w", err)
		}
		s.cmd = cmd
		if lastErr = s.waitReady(2 * time.Second); lastErr == nil {
			return nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redis-server did not restart: %w", lastErr)
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	_ = os.RemoveAll(s.dir)
}

// Replica starts a new server that replicates s (it refuses writes with
// READONLY, as a client meets after a failover), stopped when the test
// ends. It may still be syncing when it returns.
func (s *Server) Replica(tb testing.TB) *Server {
	tb.Helper()
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	replica, err := Start("--replicaof", host, port)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(replica.Stop)
	return replica
}

// Client returns a new client of the server, closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	// Timeouts longer than go-redis's 3 s: tests share one server and two
	// cores with other packages' tests, and a big script (10,000 jobs in one
	// call) may wait behind others' scripts; a test that wants a timeout sets
	// its own on its own client.
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 64, ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Client returns a client of the shared server and a key prefix unique to this
// test, so parallel tests never see each other's keys. The prefix's keys are
// deleted when the test ends.
func Client(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	s := Shared(tb)
	rdb := s.Client(tb)
	prefix := UniquePrefix()
	tb.Cleanup(func() { DeletePrefix(context.Background(), rdb, prefix) })
	return rdb, prefix
}

// UniquePrefix returns a key prefix not used before by this process.
func UniquePrefix() string {
	return fmt.Sprintf("t%d-%d", os.Getpid()%100000, prefixSeq.Add(1))
}

// DeletePrefix removes every key that starts with prefix + ":".
func DeletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) {
	iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			rdb.Del(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		rdb.Del(ctx, batch...)
	}
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
