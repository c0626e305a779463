//go:build cluster

package clustertest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// The test binary doubles as a drover worker process: TestMain runs runChild
// instead of the tests when childRoleEnv is set, with the childSpec JSON in
// childSpecEnv. The child prints JSON lines (childLine) on stdout and its
// worker logs (slog JSON, Warn and up) on stderr.
const (
	childRoleEnv = "DROVER_CLUSTERTEST_CHILD"
	childSpecEnv = "DROVER_CLUSTERTEST_SPEC"

	// roleWork runs one worker per queue until SIGTERM, then reports how many
	// jobs it completed per queue.
	roleWork = "work"
	// roleHang runs one worker on Queues[0] whose processor never returns:
	// it prints "started" and waits for SIGKILL.
	roleHang = "hang"
)

type childSpec struct {
	Seeds           []string      `json:"seeds"`
	Prefix          string        `json:"prefix"`
	Queues          []string      `json:"queues"`
	Concurrency     int           `json:"concurrency"`
	LockDuration    time.Duration `json:"lockDuration"`
	StalledInterval time.Duration `json:"stalledInterval"`
}

type childLine struct {
	Event     string           `json:"event"` // ready, started, done
	PID       int              `json:"pid,omitempty"`
	JobID     string           `json:"jobId,omitempty"`
	Completed map[string]int64 `json:"completed,omitempty"`
	Stalled   int64            `json:"stalled,omitempty"`
	Error     string           `json:"error,omitempty"`
}

func runChild(role string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childSpecEnv)), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", childSpecEnv, err)
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	print := func(l childLine) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = out.Encode(l)
	}
	fail := func(err error) int {
		print(childLine{Event: "error", Error: err.Error()})
		return 1
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: spec.Seeds, PoolSize: 64})
	defer func() { _ = rdb.Close() }()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()

	if role == roleHang {
		w, err := drover.NewWorker(rdb, spec.Queues[0], drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			print(childLine{Event: "started", JobID: job.ID})
			select {} // only SIGKILL ends this process
		}), &drover.WorkerOptions{Prefix: spec.Prefix, LockDuration: spec.LockDuration, SkipStalledCheck: true, Logger: logger})
		if err != nil {
			return fail(err)
		}
		if err := w.Start(ctx); err != nil {
			return fail(err)
		}
		print(childLine{Event: "ready", PID: os.Getpid()})
		select {}
	}

	var stalled atomic.Int64
	completed := make([]atomic.Int64, len(spec.Queues))
	workers := make([]*drover.Worker, len(spec.Queues))
	for i, name := range spec.Queues {
		w, err := drover.NewWorker(rdb, name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
			return nil, nil
		}), &drover.WorkerOptions{
			Prefix: spec.Prefix, Name: fmt.Sprintf("pid%d", os.Getpid()), Concurrency: spec.Concurrency,
			LockDuration: spec.LockDuration, StalledInterval: spec.StalledInterval, Logger: logger,
			Hooks: &drover.WorkerHooks{
				JobFinished: func(job *drover.Job, outcome drover.Outcome, took time.Duration, err error) {
					if outcome == drover.OutcomeCompleted {
						completed[i].Add(1)
					}
				},
				Stalled: func(string, int) { stalled.Add(1) },
			},
		})
		if err != nil {
			return fail(err)
		}
		workers[i] = w
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	for _, w := range workers {
		if err := w.Start(ctx); err != nil {
			return fail(err)
		}
	}
	print(childLine{Event: "ready", PID: os.Getpid()})
	<-sig
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			if err := w.Close(cctx); err != nil {
				logger.Error("close worker", slog.Any("error", err))
			}
		})
	}
	wg.Wait()
	done := childLine{Event: "done", Completed: map[string]int64{}, Stalled: stalled.Load()}
	for i, name := range spec.Queues {
		done.Completed[name] = completed[i].Load()
	}
	print(done)
	return 0
}

// child is a worker process started by startChild.
type child struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed when stdout and stderr were read to the end

	mu       sync.Mutex
	lines    []childLine
	changed  chan struct{}
	logLines int      // stderr lines
	logTail  []string // the last stderr lines
	matches  map[string]int
}

// watchedLog are substrings counted in children's logs.
var watchedLog = []string{"CROSSSLOT", "MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "UNBLOCKED", "NOSCRIPT"}

// startChild starts the test binary as a worker process with role and spec,
// and waits for its "ready" line. It is killed when the test ends.
func startChild(t testing.TB, role string, spec childSpec) *child {
	t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childSpecEnv+"="+string(b))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{}), changed: make(chan struct{}), matches: map[string]int{}}
	var wg sync.WaitGroup
	wg.Go(func() { c.readStdout(stdout) })
	wg.Go(func() { c.readStderr(stderr) })
	go func() { wg.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("worker process %d log tail:\n%s", c.pid, strings.Join(c.tail(), "\n"))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.wait(ctx, "ready")
	require.NoError(t, err)
	return c
}

func (c *child) readStdout(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var l childLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			l = childLine{Event: "bad-line", Error: sc.Text()}
		}
		c.mu.Lock()
		c.lines = append(c.lines, l)
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

func (c *child) readStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		c.logLines++
		for _, w := range watchedLog {
			if strings.Contains(line, w) {
				c.matches[w]++
			}
		}
		c.logTail = append(c.logTail, line)
		if len(c.logTail) > 100 {
			c.logTail = c.logTail[len(c.logTail)-50:]
		}
		c.mu.Unlock()
	}
}

func (c *child) tail() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.logTail...)
}

// logStats returns how many log lines the child wrote and how many
// contained each watched substring.
func (c *child) logStats() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.matches))
	for k, v := range c.matches {
		m[k] = v
	}
	return c.logLines, m
}

// wait returns the first line with event, waiting for it.
func (c *child) wait(ctx context.Context, event string) (childLine, error) {
	for {
		c.mu.Lock()
		for _, l := range c.lines {
			if l.Event == event {
				c.mu.Unlock()
				return l, nil
			}
			if l.Event == "error" || l.Event == "bad-line" {
				c.mu.Unlock()
				return l, fmt.Errorf("worker process %d: %s", c.pid, l.Error)
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-c.done:
			return childLine{}, fmt.Errorf("worker process %d ended before %q; log tail:\n%s", c.pid, event, strings.Join(c.tail(), "\n"))
		case <-ctx.Done():
			return childLine{}, fmt.Errorf("worker process %d: no %q: %w", c.pid, event, ctx.Err())
		}
	}
}

// stop sends SIGTERM and returns the "done" report.
func (c *child) stop(ctx context.Context) (childLine, error) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	l, err := c.wait(ctx, "done")
	if err != nil {
		return l, err
	}
	<-c.done
	_ = c.cmd.Wait()
	return l, nil
}

// kill sends SIGKILL and reaps the process. It is idempotent.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
	_ = c.cmd.Wait()
}
