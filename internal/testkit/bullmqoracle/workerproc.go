package bullmqoracle

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// WorkerProcess is a BullMQ Worker running alone in a `node worker.mjs`
// process, so a test can SIGKILL it mid-job (lock left behind, job stalled)
// or stop it gracefully. Its events arrive as JSON lines on stdout.
type WorkerProcess struct {
	cmd    *exec.Cmd
	stderr *tailBuffer

	mu      sync.Mutex
	events  []WorkerEvent
	changed chan struct{} // closed and replaced whenever events grows or the process exits
	exitErr error
	done    bool // the process exited; set with exitErr

	exited chan struct{}
}

// StartWorkerProcess starts a worker process on prefix/queue with opts
// (opts.ID is optional here; opts.Cluster connects to a Redis Cluster) and
// waits for its "ready" line. The process is
// killed when the test ends if it is still running.
func StartWorkerProcess(tb testing.TB, redisAddr, prefix, queue string, opts WorkerOptions) *WorkerProcess {
	tb.Helper()
	w, err := startWorkerProcess(redisAddr, prefix, queue, opts)
	if err != nil {
		tb.Fatalf("bullmqoracle: %v", err)
	}
	tb.Cleanup(func() {
		_ = w.Kill()
		if tb.Failed() {
			tb.Logf("bullmqoracle: worker process %d stderr (tail):\n%s", w.PID(), w.stderr.String())
		}
	})
	return w
}

func startWorkerProcess(redisAddr, prefix, queue string, opts WorkerOptions) (*WorkerProcess, error) {
	dir, err := nodeDir()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(map[string]any{"prefix": prefix, "queue": queue, "worker": opts.spec()})
	if err != nil {
		return nil, fmt.Errorf("encode worker spec: %w", err)
	}
	args := []string{"worker.mjs", "--redis", redisAddr, "--spec", string(spec)}
	if opts.Cluster {
		args = append(args, "--cluster")
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	w := &WorkerProcess{
		cmd:     cmd,
		stderr:  newTailBuffer(64 << 10),
		changed: make(chan struct{}),
		exited:  make(chan struct{}),
	}
	cmd.Stderr = w.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node worker.mjs in %s: %w", dir, err)
	}
	go w.readLoop(stdout)

	ctx, cancel := context.WithTimeout(context.Background(), StartTimeoutDefault)
	defer cancel()
	if _, err := w.WaitFor(ctx, func(e WorkerEvent) bool { return e.Event == "ready" }); err != nil {
		_ = w.Kill()
		return nil, fmt.Errorf("worker process not ready: %w", err)
	}
	return w, nil
}

func (w *WorkerProcess) readLoop(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var e WorkerEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			e = WorkerEvent{Event: "bad-line", Message: sc.Text()}
		}
		w.mu.Lock()
		w.events = append(w.events, e)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
	err := w.cmd.Wait()
	w.mu.Lock()
	w.exitErr = err
	w.done = true
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	close(w.exited)
}

// PID returns the process id.
func (w *WorkerProcess) PID() int { return w.cmd.Process.Pid }

// Events returns every line the process printed so far, in order.
func (w *WorkerProcess) Events() []WorkerEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WorkerEvent(nil), w.events...)
}

// WaitFor returns the first event printed so far or later that satisfies
// match. It fails when ctx ends or the process exits without one.
func (w *WorkerProcess) WaitFor(ctx context.Context, match func(WorkerEvent) bool) (WorkerEvent, error) {
	evs, err := w.WaitForCount(ctx, 1, match)
	if err != nil {
		return WorkerEvent{}, err
	}
	return evs[0], nil
}

// WaitForCount waits until at least n printed events satisfy match and
// returns all matching events so far.
func (w *WorkerProcess) WaitForCount(ctx context.Context, n int, match func(WorkerEvent) bool) ([]WorkerEvent, error) {
	for {
		w.mu.Lock()
		var got []WorkerEvent
		for _, e := range w.events {
			if match(e) {
				got = append(got, e)
			}
		}
		changed := w.changed
		exited := w.done
		w.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		if exited {
			return got, fmt.Errorf("worker process exited (%w) after %d of %d matching events; stderr:\n%s",
				w.ExitErr(), len(got), n, w.stderr.String())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, fmt.Errorf("waiting for %d worker process events, got %d: %w", n, len(got), context.Cause(ctx))
		}
	}
}

// Kill sends SIGKILL and waits for the process to be reaped. It is a no-op
// after the process exited.
func (w *WorkerProcess) Kill() error {
	select {
	case <-w.exited:
		return nil
	default:
	}
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		select {
		case <-w.exited:
			return nil
		default:
			return fmt.Errorf("kill worker process %d: %w", w.PID(), err)
		}
	}
	<-w.exited
	return nil
}

// Stop sends SIGTERM, which makes the worker close gracefully (finishing its
// active jobs) and print "closed", and waits for the exit. When ctx ends
// first the process is killed.
func (w *WorkerProcess) Stop(ctx context.Context) error {
	select {
	case <-w.exited:
		return nil
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
		return nil
	case <-ctx.Done():
		_ = w.Kill()
		return fmt.Errorf("worker process %d did not stop: %w", w.PID(), context.Cause(ctx))
	}
}

// Exited is closed once the process has exited and been reaped.
func (w *WorkerProcess) Exited() <-chan struct{} { return w.exited }

// ExitErr returns the process's exit error (nil for a clean exit or while
// it runs). A SIGKILLed process reports "signal: killed".
func (w *WorkerProcess) ExitErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exitErr
}
