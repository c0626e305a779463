// Package drovertest runs drover processors in tests without a Redis
// server: on an in-process engine (the one behind `drover demo`), through
// a real Worker, with a clock the test moves.
//
// Run is the one-call form: one attempt of one job, and what came of it
// (its Outcome, error, return value, progress and log lines); see ExampleRun.
// A Kit is the engine behind it, for more: queues the processor adds
// jobs to (RequireAdded), workers whose time the test controls (Advance),
// so that backoffs, delays and lock expiry take microseconds, not minutes.
//
// It is a test package: it starts no goroutine that outlives the test, and
// reports setup failures through t.
package drovertest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/embedredis"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/seam"
)

// RunQueue is the queue Run and Kit.Run add the job under test to.
const RunQueue = "drovertest"

// Start is the time a Kit's clock starts at.
var Start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// waitLimit bounds every wait of the kit on the engine (only reached when
// something is wrong: a processor that never returns, say).
const waitLimit = 30 * time.Second

// Kit is an in-process engine with a manual clock, closed when the test
// ends. Its methods are safe for concurrent use.
type Kit struct {
	t     testing.TB
	srv   *embedredis.Server
	rdb   *redis.Client
	clock *clock.Manual

	mu      sync.Mutex
	queues  map[string]*drover.Queue
	workers []*drover.Worker

	// runMu makes Runs take turns: each drains, pauses and resumes
	// RunQueue, which they share.
	runMu sync.Mutex
}

// New starts an engine for t, stopped by t.Cleanup.
func New(t testing.TB) *Kit {
	t.Helper()
	srv, err := embedredis.StartManual()
	if err != nil {
		t.Fatalf("drovertest: %v", err)
	}
	k := &Kit{t: t, srv: srv, clock: clock.NewManual(Start), queues: map[string]*drover.Queue{},
		rdb: redis.NewClient(&redis.Options{Addr: srv.Addr()})}
	t.Cleanup(func() {
		k.mu.Lock()
		workers := k.workers
		k.workers = nil
		k.mu.Unlock()
		for _, w := range workers {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			_ = w.Close(ctx)
			cancel()
		}
		_ = k.rdb.Close()
		srv.Close()
	})
	return k
}

// Client is a client of the kit's engine, for code under test that takes
// a redis.UniversalClient. Do not close it.
func (k *Kit) Client() redis.UniversalClient { return k.rdb }

// Queue returns the queue called name on the kit's engine, on the kit's
// clock. Hand it to the code under test that adds jobs, then check what it
// added with RequireAdded.
func (k *Kit) Queue(name string) *drover.Queue {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if q, ok := k.queues[name]; ok {
		return q
	}
	q, err := drover.NewQueue(k.rdb, name, &drover.QueueOptions{Logger: k.logger()})
	if err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	seam.SetClock(q, k.clock)
	k.queues[name] = q
	return q
}

// Now is the kit's clock.
func (k *Kit) Now() time.Time { return k.clock.Now() }

// Advance moves the kit's clock, and the engine's key expiry with it, by
// d, and wakes the kit's workers: delayed jobs and backoffs that are due
// now run, locks older than d expire. Time does not go back: a negative d
// fails the test and moves nothing (the clock moved back would make due
// jobs not due and lengthen every key's time to live).
func (k *Kit) Advance(d time.Duration) {
	k.t.Helper()
	if d < 0 {
		k.t.Fatalf("drovertest: Advance needs a duration >= 0, got %s", d)
	}
	// The engine's expiry first: a worker fetching between the two takes
	// nothing newly due yet. The other way round, a job due on the moved
	// clock could be taken and locked before the fast-forward, which then
	// expired its fresh lock: its result was refused ("job lock missing")
	// and it stayed active (TestManualClock/Backoff in CI at c98e178).
	k.srv.FastForward(d)
	k.clock.Advance(d)
	k.mu.Lock()
	workers := slices.Clone(k.workers)
	k.mu.Unlock()
	for _, w := range workers {
		seam.Wake(w)
	}
}

// StartWorker starts a worker for queue on the kit's engine and clock,
// closed when the test ends. opts are used as given except that the clock
// is the kit's (ClockCheckInterval off), stalled checks run only when
// CheckStalled says, and a nil Logger logs warnings to t.
func (k *Kit) StartWorker(queue string, proc drover.Processor, opts *drover.WorkerOptions) *drover.Worker {
	k.t.Helper()
	var o drover.WorkerOptions
	if opts != nil {
		o = *opts
	}
	o.Prefix = ""
	o.ClockCheckInterval = -1
	o.StalledInterval = 24 * time.Hour // the ticker never fires; CheckStalled runs the check
	if o.Logger == nil {
		o.Logger = k.logger()
	}
	w, err := drover.NewWorker(k.rdb, queue, proc, &o)
	if err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	seam.SetClock(w, k.clock)
	if err := w.Start(context.Background()); err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	k.mu.Lock()
	k.workers = append(k.workers, w)
	k.mu.Unlock()
	return w
}

// CheckStalled runs w's stalled-job check now. BullMQ's check has two
// steps: the first marks the active jobs, the next moves back to wait (or
// fails) those among them whose lock has expired. So: CheckStalled,
// Advance past the lock duration, CheckStalled. A nil w fails the test.
func (k *Kit) CheckStalled(w *drover.Worker) {
	k.t.Helper()
	if w == nil {
		k.t.Fatalf("drovertest: CheckStalled needs a worker, got nil")
		return
	}
	seam.CheckStalled(context.Background(), w)
}

// WaitState waits until job id of queue is in state, failing the test
// after 30 s.
func (k *Kit) WaitState(queue, id string, state drover.JobState) *drover.Job {
	k.t.Helper()
	q := k.Queue(queue)
	deadline := time.Now().Add(waitLimit)
	for {
		s, err := q.GetJobState(context.Background(), id)
		if err != nil {
			k.t.Fatalf("drovertest: %v", err)
		}
		if s == state {
			job, err := q.GetJob(context.Background(), id)
			if err != nil {
				k.t.Fatalf("drovertest: %v", err)
			}
			return job
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("drovertest: job %s of queue %q is %s, not %s, after %s", id, queue, s, state, waitLimit)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// logger sends warnings to the test's log.
func (k *Kit) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{k.t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Result is what one attempt came to.
type Result struct {
	// Outcome is what the worker wrote: OutcomeCompleted, OutcomeRetried,
	// OutcomeFailedUnrecoverable, ...
	Outcome drover.Outcome
	// Err is the error the attempt failed with (nil when it completed).
	Err error
	// Value is the return value as stored (JSON), for a completed job.
	Value json.RawMessage
	// Progress is the last progress the processor reported (JSON), or nil.
	Progress json.RawMessage
	// Logs are the lines the processor logged with job.Log, in order.
	Logs []string
	// Job is the job as stored after the attempt.
	Job *drover.Job
}

// Decode unmarshals the return value into v.
func (r *Result) Decode(v any) error {
	if err := json.Unmarshal(r.Value, v); err != nil {
		return fmt.Errorf("drovertest: decode return value %s: %w", r.Value, err)
	}
	return nil
}

// Run runs one attempt of a job (name, data, opts as Queue.Add takes them)
// through proc on a new Kit, and returns what came of it. Any Delay in opts
// is dropped: the job runs now. So are RemoveOnComplete and RemoveOnFail
// (the job's, or with Kit.RunWith the worker's): the job is kept, so that
// the Result can show it.
func Run(t testing.TB, proc drover.Processor, name string, data any, opts *drover.JobOptions) *Result {
	t.Helper()
	return New(t).Run(proc, name, data, opts)
}

// RunArgs is Run for a typed job, with the kind's own options when it is a
// drover.JobArgsWithOptions (opts first, as Queue.AddArgs). Nil args (or a
// nil pointer) fail the test: they name no kind and carry no data; so does
// an empty Kind, as AddArgs refuses it.
func RunArgs(t testing.TB, proc drover.Processor, args drover.JobArgs, opts *drover.JobOptions) *Result {
	t.Helper()
	if args == nil {
		t.Fatalf("drovertest: RunArgs needs args, got nil")
		return nil
	}
	if v := reflect.ValueOf(args); v.Kind() == reflect.Pointer && v.IsNil() {
		t.Fatalf("drovertest: RunArgs needs args, got a nil %T", args)
		return nil
	}
	// The kind's own options (drover.JobArgsWithOptions), as AddArgs adds
	// it: its attempts and backoff decide the Result's outcome.
	opts, err := drover.ArgsOptions(args, opts)
	if err != nil {
		t.Fatalf("drovertest: %v", err)
		return nil
	}
	return New(t).Run(proc, args.Kind(), args, opts)
}

// Run adds a job to RunQueue and runs one attempt of it through proc, with
// a worker of its own (WorkerOptions.Middleware and the like can be given
// with RunWith). Runs of one Kit called at once take turns. Jobs the
// processor adds stay on the kit's engine; jobs an
// earlier Run left waiting or delayed in RunQueue are removed first, but
// finished ones stay: a Run whose JobOptions.JobID (or deduplication id)
// matches a job still in RunQueue adds nothing, and fails the test at once.
func (k *Kit) Run(proc drover.Processor, name string, data any, opts *drover.JobOptions) *Result {
	k.t.Helper()
	return k.RunWith(proc, name, data, opts, nil)
}

// RunWith is Run with worker options (Middleware, Hooks, Logger, OpKey, ...);
// their RemoveOnComplete and RemoveOnFail are dropped, as the job's are.
func (k *Kit) RunWith(proc drover.Processor, name string, data any, opts *drover.JobOptions, wopts *drover.WorkerOptions) *Result {
	k.t.Helper()
	k.runMu.Lock()
	defer k.runMu.Unlock()
	ctx := context.Background()
	q := k.Queue(RunQueue)
	// Jobs an earlier Run left to wait (a retried job) would run first.
	if _, err := q.Drain(ctx, true); err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	if opts != nil && (opts.Delay != 0 || opts.RemoveOnComplete != nil || opts.RemoveOnFail != nil) {
		o := *opts
		o.Delay = 0
		// The Result reads the job after its attempt: it must still exist.
		o.RemoveOnComplete, o.RemoveOnFail = nil, nil
		opts = &o
	}
	added, err := q.Add(ctx, name, data, opts)
	if err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	id := added.Job.ID
	if added.Outcome != drover.AddCreated {
		// No new job: the worker would have nothing to run and Run would
		// wait out waitLimit for a finish that never comes.
		state, err := q.GetJobState(ctx, id)
		if err != nil {
			k.t.Fatalf("drovertest: %v", err)
		}
		k.t.Fatalf("drovertest: Run added no job (%s): job %s (%q) is already in queue %q, %s; give each Run its own JobID or deduplication id, or use a new Kit",
			added.Outcome, id, added.Job.Name, RunQueue, state)
	}

	var o drover.WorkerOptions
	if wopts != nil {
		o = *wopts
	}
	o.RemoveOnComplete, o.RemoveOnFail = nil, nil // as the job's, above
	finished := make(chan drover.Finish, 1)
	// Outermost: pause the queue before the outcome is written, so the
	// write does not fetch the job again when it is retried (deferred: a
	// processor that panics is retried too); report the outcome once
	// written.
	once := drover.WorkerMiddleware{
		Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (any, error) {
			defer func() {
				if perr := q.Pause(context.WithoutCancel(ctx)); perr != nil {
					k.t.Errorf("drovertest: %v", perr)
				}
			}()
			return next(ctx, job)
		},
		Finished: func(_ context.Context, job *drover.Job, f drover.Finish) {
			if job.ID == id {
				select {
				case finished <- f:
				default:
				}
			}
		},
	}
	o.Middleware = append([]drover.WorkerMiddleware{once}, o.Middleware...)
	w := k.StartWorker(RunQueue, proc, &o)
	var f drover.Finish
	select {
	case f = <-finished:
	case <-time.After(waitLimit):
		k.t.Fatalf("drovertest: job %s (%q) did not finish within %s", id, name, waitLimit)
	}
	closeCtx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if err := w.Close(closeCtx); err != nil {
		k.t.Errorf("drovertest: %v", err)
	}
	k.forget(w)
	if err := q.Resume(ctx); err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	job, err := q.GetJob(ctx, id)
	if err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	logs, _, err := q.GetJobLogs(ctx, id, 0, -1)
	if err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	res := &Result{Outcome: f.Outcome, Err: f.Err, Progress: job.Progress, Logs: logs, Job: job}
	if f.Outcome == drover.OutcomeCompleted {
		res.Value = job.ReturnValue
	}
	return res
}

func (k *Kit) forget(w *drover.Worker) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.workers = slices.DeleteFunc(k.workers, func(x *drover.Worker) bool { return x == w })
}

// allStates are the states RequireAdded looks in.
var allStates = []drover.JobState{drover.StateWaiting, drover.StatePrioritized, drover.StateDelayed,
	drover.StateActive, drover.StateWaitingChildren, drover.StatePaused, drover.StateCompleted, drover.StateFailed}

// Added lists the jobs named name in queue, oldest first, in any state.
func (k *Kit) Added(queue, name string) []*drover.Job {
	k.t.Helper()
	return slices.DeleteFunc(k.all(queue), func(j *drover.Job) bool { return j.Name != name })
}

// all lists every job of queue, oldest first, in any state.
func (k *Kit) all(queue string) []*drover.Job {
	k.t.Helper()
	jobs, err := k.Queue(queue).GetJobs(context.Background(), allStates, 0, -1, true)
	if err != nil {
		k.t.Fatalf("drovertest: %v", err)
	}
	slices.SortStableFunc(jobs, func(a, b *drover.Job) int { return a.Timestamp.Compare(b.Timestamp) })
	return jobs
}

// RequireAdded fails the test unless exactly one job named name was added
// to queue on k's engine, and returns it. (The job Run runs is itself in
// RunQueue.) Its failure lists the ids of the jobs found, or, when there
// are none, the names of the jobs the queue holds.
func RequireAdded(t testing.TB, k *Kit, queue, name string) *drover.Job {
	t.Helper()
	all := k.all(queue)
	jobs := slices.DeleteFunc(slices.Clone(all), func(j *drover.Job) bool { return j.Name != name })
	switch len(jobs) {
	case 1:
		return jobs[0]
	case 0:
		t.Fatalf("drovertest: want 1 job named %q in queue %q, found 0; %s", name, queue, holds(all))
	default:
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		t.Fatalf("drovertest: want 1 job named %q in queue %q, found %d (ids %s)", name, queue, len(jobs), strings.Join(ids, ", "))
	}
	return nil
}

// holds says which names the jobs have, for a failure message.
func holds(jobs []*drover.Job) string {
	if len(jobs) == 0 {
		return "the queue holds no jobs"
	}
	count := map[string]int{}
	for _, j := range jobs {
		count[j.Name]++
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%q (%d)", n, count[n])
	}
	return fmt.Sprintf("the queue holds %d jobs: %s", len(jobs), strings.Join(names, ", "))
}

// RequireAddedArgs is RequireAdded for a typed job: it finds the one job of
// T's kind in queue and returns its data decoded into a T (T may be a
// pointer type). Data that is JSON null fails the test, as Work fails such
// a job.
func RequireAddedArgs[T drover.JobArgs](t testing.TB, k *Kit, queue string) T {
	t.Helper()
	var args T
	kind, err := drover.KindOf[T]()
	if err != nil {
		t.Fatalf("drovertest: RequireAddedArgs: %v", err)
		return args
	}
	job := RequireAdded(t, k, queue, kind)
	if jobcodec.IsNull(job.Data) {
		t.Fatalf("drovertest: job %s (%q) in queue %q: data does not decode as %T: the data is null", job.ID, job.Name, queue, args)
	}
	if err := json.Unmarshal(job.Data, &args); err != nil {
		t.Fatalf("drovertest: job %s (%q) in queue %q: data does not decode as %T: %v", job.ID, job.Name, queue, args, err)
	}
	return args
}

// RequireNotAdded fails the test if a job named name was added to queue.
func RequireNotAdded(t testing.TB, k *Kit, queue, name string) {
	t.Helper()
	if jobs := k.Added(queue, name); len(jobs) > 0 {
		t.Fatalf("drovertest: want no job named %q in queue %q, found %d (first: %s)", name, queue, len(jobs), jobs[0].ID)
	}
}
