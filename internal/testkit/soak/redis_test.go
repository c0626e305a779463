package soak_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// redisProc is a redis-server with AOF in a directory the soak owns, so it
// can be killed and started again on the same port with its data.
type redisProc struct {
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

func (r *redisProc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// start runs the server with the given appendfsync policy and waits until it
// answers PING (after loading its AOF).
func (r *redisProc) start(fsync string) error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found on PATH; install it with `apt-get install -y redis-server` (make deps does this)")
	}
	logFile, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", fsync,
		"--daemonize", "no", "--protected-mode", "no")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	r.cmd = cmd
	r.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ping(r.addr()) {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("redis-server exited: %s", r.log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("redis-server at %s not ready: %s", r.addr(), r.log())
}

func ping(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("PING\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// signal sends sig to the server.
func (r *redisProc) signal(sig syscall.Signal) {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}

// stop ends the server with sig and waits for it to exit.
func (r *redisProc) stop(sig syscall.Signal) {
	if r.cmd == nil {
		return
	}
	r.signal(sig)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.signal(syscall.SIGKILL)
		<-r.exited
	}
	r.cmd = nil
}

func (r *redisProc) log() string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
