package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/logkey"
)

// WorkerSpec tells the worker process of the killed-after-effect scenario
// what to run. The lab hands it to Options.WorkerCommand, which passes it on
// (as [WorkerSpec.Encode] text, say) to the process, which hands it to
// [RunWorker].
type WorkerSpec struct {
	Prefix  string `json:"prefix"`
	Queue   string `json:"queue"`
	Subject string `json:"subject"`
	// LockDuration is the worker's job lock: the job is recovered about this
	// long after the process is killed.
	LockDuration time.Duration `json:"lock_duration"`
}

// Encode returns the spec as one line of JSON.
func (s WorkerSpec) Encode() string { return marshal(s) }

// DecodeWorkerSpec parses what [WorkerSpec.Encode] returned.
func DecodeWorkerSpec(text string) (WorkerSpec, error) {
	var s WorkerSpec
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return s, fmt.Errorf("lab: decode worker spec: %w", err)
	}
	if s.Queue == "" || s.Subject == "" || s.LockDuration <= 0 {
		return s, fmt.Errorf("lab: worker spec %s: queue, subject and lock_duration are required", text)
	}
	return s, nil
}

// Lines of the worker process's stdout, the lab's side of the protocol.
const (
	lineReady  = "ready"
	lineEffect = "effect " // + job id
)

// WorkerOptions configure [RunWorker]. A nil *WorkerOptions means all
// defaults.
type WorkerOptions struct {
	// Subjects are looked up by the spec's subject name before the built-in
	// subjects of the DB: pass the ones given to Options.Subjects.
	//
	// Defaults to none: only the built-in subjects.
	Subjects []Subject

	// Stdin, when set, is watched for EOF: the lab holds the write end of
	// the process's stdin, so EOF means the lab is gone, and RunWorker
	// returns instead of hanging on.
	//
	// Defaults to nil: RunWorker returns only when ctx ends.
	Stdin io.Reader

	// Logger receives the processor lines of Observe and the worker's logs.
	//
	// Defaults to nil, which discards.
	Logger *slog.Logger
}

// RunWorker is the worker process of the killed-after-effect scenario. It
// runs a worker on the spec's queue with the spec's subject (and no stalled
// checker of its own) and prints, on stdout, "ready" once it runs and
// "effect <job id>" once the subject wrote a job's effect; the job then
// hangs, unacknowledged, until the lab SIGKILLs the process. RunWorker
// returns when ctx ends or opts.Stdin reaches EOF; call it from a
// program's main, in a process of its own.
func RunWorker(ctx context.Context, rdb redis.UniversalClient, db *DB, spec WorkerSpec, stdout io.Writer, opts *WorkerOptions) error {
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var subj Subject
	found := false
	for _, s := range o.Subjects {
		if s.Name == spec.Subject {
			subj, found = s, true
			break
		}
	}
	if !found {
		var err error
		if subj, err = db.Subject(spec.Subject); err != nil {
			return err
		}
	}
	if err := subj.validate(); err != nil {
		return err
	}

	out := &lockedWriter{w: stdout}
	hang := func(ctx context.Context, op Operation) error {
		o.Logger.InfoContext(ctx, "lab worker: effect written, waiting to be killed before acknowledging",
			slog.String(logkey.JobID, op.Job.ID), slog.String(logkey.OpKey, op.Key), slog.String(logKeyClaim, claimOf(ctx)),
			slog.Int(logkey.PID, os.Getpid()))
		if err := out.println(lineEffect + op.Job.ID); err != nil {
			return err
		}
		<-ctx.Done() // the lab kills this process now
		return context.Cause(ctx)
	}
	w, err := drover.NewWorker(rdb, spec.Queue, labProcessor(db, subj, o.Logger, nil, hang), &drover.WorkerOptions{
		Prefix: spec.Prefix, Name: fmt.Sprintf("drover-lab-worker-%d", os.Getpid()),
		LockDuration: spec.LockDuration, SkipStalledCheck: true, Logger: o.Logger,
	})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	if err := out.println(lineReady); err != nil {
		return err
	}
	stdinClosed := make(chan struct{})
	if o.Stdin != nil {
		// Owned by the process: it ends at EOF, or with the process.
		go func() {
			_, _ = io.Copy(io.Discard, o.Stdin)
			close(stdinClosed)
		}()
	}
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return w.Close(cctx)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) println(line string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := io.WriteString(l.w, line+"\n")
	return err
}

// killedAfterEffect adds the job, starts the worker process, SIGKILLs it as
// soon as it reports the effect, and then lets a worker of this process
// recover the job as stalled and run it again.
func (r *runner) killedAfterEffect(ctx context.Context, q *drover.Queue, subj Subject, data jobData, counters *Counters, res *Result) error {
	added, err := add(ctx, q, data, &drover.JobOptions{Attempts: 1})
	if err != nil {
		return err
	}
	if err := r.killWorkerAfterEffect(ctx, WorkerSpec{
		Prefix: r.opts.Prefix, Queue: q.Name(), Subject: subj.Name, LockDuration: r.opts.LockDuration,
	}, added.Job.ID, res); err != nil {
		return err
	}
	return r.work(ctx, q, r.processor(subj, counters, nil), 1)
}

// killWorkerAfterEffect runs the worker process until it reports the effect
// of job id, and kills it.
func (r *runner) killWorkerAfterEffect(ctx context.Context, spec WorkerSpec, id string, res *Result) error {
	cmd := r.opts.WorkerCommand(spec)
	if cmd == nil {
		return errors.New("Options.WorkerCommand returned nil")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("worker process stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("worker process stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker process %s: %w", cmd.Path, err)
	}
	res.WorkerPID = cmd.Process.Pid
	lines := make(chan string, 16)
	go func() { // owned here: it ends at EOF, which the deferred kill brings
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() {
		_ = cmd.Process.Kill() // SIGKILL on Unix
		for range lines {      // until EOF: the process is gone
		}
		werr := cmd.Wait()
		_ = stdin.Close()
		if werr != nil {
			res.WorkerExit = werr.Error()
		} else {
			res.WorkerExit = "exit status 0"
		}
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return fmt.Errorf("worker process %d ended before it wrote the effect of job %s", res.WorkerPID, id)
			}
			if line == lineEffect+id {
				r.opts.Logger.InfoContext(ctx, "lab: killing worker process after the effect",
					slog.Int(logkey.PID, res.WorkerPID), slog.String(logkey.JobID, id))
				return nil // the deferred SIGKILL
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for worker process %d to write the effect of job %s: %w", res.WorkerPID, id, context.Cause(ctx))
		}
	}
}
