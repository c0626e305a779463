package drover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// Processor does the work of a job. The returned value is stored as the
// job's JSON return value; a returned error fails the attempt (and the job
// is retried as its options say). Wrap an error with Unrecoverable to fail
// for good, or return Delay(d) to come back later without spending an attempt.
//
// ctx is cancelled with cause ErrLockLost when the worker loses the job's
// lock (the job may already run elsewhere: stop, nothing will be written),
// and with ErrWorkerClosing when Close's deadline passes (the job goes back to
// wait without spending an attempt).
type Processor interface {
	Process(ctx context.Context, job *Job) (any, error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, job *Job) (any, error)

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, job *Job) (any, error) { return f(ctx, job) }

// WorkerOptions configure a Worker. Nil means defaults.
type WorkerOptions struct {
	// Prefix of every key. Defaults to PrefixDefault ("bull").
	Prefix string
	// Name is stored on each job the worker takes (BullMQ's processedBy)
	// and in logs. Default "".
	Name string
	// Concurrency is how many jobs run at once. Defaults to ConcurrencyDefault (1).
	Concurrency int
	// LockDuration is how long a worker holds a job's lock between renewals.
	// A worker that stops renewing loses the job to the stalled checker.
	// Locks are renewed every LockDuration/4.
	//
	// Defaults to LockDurationDefault (30s).
	LockDuration time.Duration
	// StalledInterval is how often the stalled-job checker runs (once per
	// interval across all workers of the queue). Defaults to
	// StalledIntervalDefault (30s).
	StalledInterval time.Duration
	// MaxStalledCount is how many stall recoveries a job gets before it is
	// failed. Defaults to MaxStalledCountDefault (1); negative means 0.
	MaxStalledCount int
	// SkipStalledCheck turns this worker's stalled checker off.
	SkipStalledCheck bool
	// MaxStartedAttempts fails a job that was started more often than this
	// (stalls count). 0 = no limit.
	MaxStartedAttempts int
	// DrainDelay is the longest an idle worker blocks waiting for a job
	// before it looks again. Defaults to DrainDelayDefault (5s).
	DrainDelay time.Duration
	// Limiter caps how many jobs this worker's queue activates per window
	// (BullMQ's worker limiter, counted in the shared limiter key). A global
	// limit set with Queue.SetGlobalRateLimit wins for Max. nil = none.
	Limiter *RateLimit
	// BackoffStrategies are custom backoff strategies by Backoff.Type.
	BackoffStrategies map[string]BackoffFunc
	// RemoveOnComplete / RemoveOnFail apply to jobs that do not set their own.
	RemoveOnComplete *Retention
	RemoveOnFail     *Retention
	// Logger receives the worker's logs. Defaults to discarding.
	Logger *slog.Logger
	// Hooks observe the worker, e.g. for metrics. Optional.
	Hooks *WorkerHooks
}

// WorkerHooks are called from the worker's goroutines; they must be fast and
// safe for concurrent use. Any of them may be nil.
type WorkerHooks struct {
	// JobStarted is called before the processor runs.
	JobStarted func(job *Job)
	// JobFinished is called once the attempt's outcome is written to Redis.
	// outcome is "completed", "failed", "retry", "delayed" or "requeued".
	JobFinished func(job *Job, outcome string, took time.Duration, err error)
	// LockLost is called when the worker loses a running job's lock.
	LockLost func(job *Job, reason string)
	// Stalled is called for each job this worker's checker moved back.
	Stalled func(jobID string, stalledCount int)
}

func (o *WorkerOptions) withDefaults() WorkerOptions {
	var r WorkerOptions
	if o != nil {
		r = *o
	}
	if r.Prefix == "" {
		r.Prefix = PrefixDefault
	}
	if r.Concurrency == 0 {
		r.Concurrency = ConcurrencyDefault
	}
	if r.LockDuration == 0 {
		r.LockDuration = LockDurationDefault
	}
	if r.StalledInterval == 0 {
		r.StalledInterval = StalledIntervalDefault
	}
	if r.MaxStalledCount == 0 {
		r.MaxStalledCount = MaxStalledCountDefault
	} else if r.MaxStalledCount < 0 {
		r.MaxStalledCount = 0
	}
	if r.DrainDelay == 0 {
		r.DrainDelay = DrainDelayDefault
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Hooks == nil {
		r.Hooks = &WorkerHooks{}
	}
	return r
}

// RateLimit is at most Max job activations per Duration.
type RateLimit struct {
	Max      int
	Duration time.Duration
}

func (o *WorkerOptions) validate() error {
	if l := o.Limiter; l != nil && (l.Max < 1 || l.Duration < time.Millisecond) {
		return optionError("WorkerOptions.Limiter needs Max >= 1 and Duration >= 1ms, got %d per %s", l.Max, l.Duration)
	}
	switch {
	case o.Concurrency < 1:
		return optionError("WorkerOptions.Concurrency must be at least 1, got %d", o.Concurrency)
	case o.LockDuration < 4*time.Millisecond:
		return optionError("WorkerOptions.LockDuration must be at least 4ms, got %s", o.LockDuration)
	case o.StalledInterval < time.Millisecond:
		return optionError("WorkerOptions.StalledInterval must be at least 1ms, got %s", o.StalledInterval)
	case o.DrainDelay < time.Millisecond:
		return optionError("WorkerOptions.DrainDelay must be at least 1ms, got %s", o.DrainDelay)
	case o.MaxStartedAttempts < 0:
		return optionError("WorkerOptions.MaxStartedAttempts must not be negative, got %d", o.MaxStartedAttempts)
	}
	for name, fn := range o.BackoffStrategies {
		if name == "" || name == BackoffFixed || name == BackoffExponential || fn == nil {
			return optionError("WorkerOptions.BackoffStrategies: %q must be a non-empty custom name with a function", name)
		}
	}
	return nil
}

const (
	// maxFetch bounds how many jobs one script call activates.
	maxFetch = 200
	// maxFinish bounds how many results one script call writes.
	maxFinish = 200
	// maxWriters bounds the result-writing script calls in flight.
	maxWriters = 2
	// timelineLimit bounds the attempt history kept per job.
	timelineLimit = 25
)

// Worker takes jobs from one queue and runs a Processor on them, Concurrency
// at a time. Start it with Start; stop it with Close.
//
// Its goroutines, all owned and waited for by Close:
//   - the fetcher takes jobs when slots are free and otherwise blocks on the
//     queue's marker (no polling);
//   - one goroutine per running job (bounded by Concurrency);
//   - the finisher writes results in batches, fetching the next jobs for the
//     freed slots in the same script call;
//   - the lock keeper renews the locks of running jobs;
//   - the stalled checker recovers jobs whose worker died.
type Worker struct {
	q    *Queue
	proc Processor
	opts WorkerOptions
	id   string
	log  *slog.Logger

	slots   chan struct{}
	results chan *finishItem

	mu      sync.Mutex
	running map[string]*runningJob

	startOnce sync.Once
	closeOnce sync.Once
	started   atomic.Bool
	closing   atomic.Bool
	closeErr  error

	fetchCtx    context.Context
	stopFetch   context.CancelFunc
	jobsCtx     context.Context
	cancelJobs  context.CancelCauseFunc
	bgCtx       context.Context
	stopBG      context.CancelFunc
	fetchDone   chan struct{}
	finishDone  chan struct{}
	jobsWG      sync.WaitGroup
	bgWG        sync.WaitGroup
	forceFinish chan struct{} // closed when Close gives up writing results

	nextDelayed  atomic.Int64  // ms of the earliest delayed job this worker knows of
	limitedUntil atomic.Int64  // ms until which the rate limiter refuses jobs
	callSeq      atomic.Uint64 // makes each fetch call's lock tokens unique
	wakeTimer    *time.Timer
	wakeMu       sync.Mutex
	rand         func() float64
}

type runningJob struct {
	job       *Job
	rec       *jobcodec.Record
	token     string
	started   time.Time
	lastRenew atomic.Int64 // ms
	cancel    context.CancelCauseFunc
	lostWhy   atomic.Value // string
}

type finishItem struct {
	rj      *runningJob
	rec     scripts.FinishRecord
	outcome string
	err     error
	took    time.Duration
}

// NewWorker returns a worker for queue name. It does no I/O; call Start.
func NewWorker(rdb redis.UniversalClient, name string, proc Processor, opts *WorkerOptions) (*Worker, error) {
	if proc == nil {
		return nil, errors.New("drover: NewWorker needs a Processor, got nil")
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	q, err := NewQueue(rdb, name, &QueueOptions{Prefix: o.Prefix, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	id := newID()
	w := &Worker{
		q:       q,
		proc:    proc,
		opts:    o,
		id:      id,
		slots:   make(chan struct{}, o.Concurrency),
		results: make(chan *finishItem, o.Concurrency),
		running: make(map[string]*runningJob),
		rand:    mathrand.Float64,
	}
	w.log = o.Logger.With(slog.String(logkey.Queue, name), slog.String(logkey.Worker, w.workerLabel()),
		slog.Int(logkey.PID, os.Getpid()))
	return w, nil
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (w *Worker) workerLabel() string {
	if w.opts.Name != "" {
		return w.opts.Name
	}
	return w.id
}

// ID is the worker's unique id; its lock tokens start with it.
func (w *Worker) ID() string { return w.id }

// Queue is a Queue handle for the worker's queue.
func (w *Worker) Queue() *Queue { return w.q }

// Start checks that Redis answers and starts the worker's goroutines. It
// returns once the worker is running; ctx bounds only the start-up.
func (w *Worker) Start(ctx context.Context) error {
	if w.closing.Load() {
		return fmt.Errorf("worker for queue %q: %w", w.q.name, ErrClosed)
	}
	var err error
	w.startOnce.Do(func() {
		if err = w.q.rdb.Ping(ctx).Err(); err != nil {
			err = fmt.Errorf("start worker for queue %q: %w", w.q.name, err)
			return
		}
		w.fetchCtx, w.stopFetch = context.WithCancel(context.Background())
		w.jobsCtx, w.cancelJobs = context.WithCancelCause(context.Background())
		w.bgCtx, w.stopBG = context.WithCancel(context.Background())
		w.fetchDone = make(chan struct{})
		w.finishDone = make(chan struct{})
		w.forceFinish = make(chan struct{})
		w.started.Store(true)
		go w.fetchLoop()
		go w.finishLoop()
		w.bgWG.Add(1)
		go w.lockLoop()
		if !w.opts.SkipStalledCheck {
			w.bgWG.Add(1)
			go w.stalledLoop()
		}
		w.log.InfoContext(ctx, "worker started", slog.Int("concurrency", w.opts.Concurrency))
	})
	return err
}

// Close stops the worker: it stops taking jobs, lets running jobs finish
// until ctx is done, then cancels their contexts (cause ErrWorkerClosing)
// and still waits for them; such jobs go back to wait without spending an
// attempt. Results are written before Close returns. Close is idempotent
// and safe on a worker that never started.
func (w *Worker) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.closing.Store(true)
		if !w.started.Load() {
			w.startOnce.Do(func() {}) // a later Start must not run
			return
		}
		// 1. Stop fetching, and wake the fetcher if it blocks on the marker.
		w.stopFetch()
		w.wake()
		<-w.fetchDone
		w.disarmWake()
		w.q.rdb.Del(context.WithoutCancel(ctx), w.q.k.WorkerWake(w.id))

		// 2. Let running jobs finish until ctx ends, then cancel them. A job
		// counts in jobsWG until its result is written, and a result write
		// that fetches next jobs adds them before it lets its own jobs go,
		// so jobsWG reaches zero only when no job runs or waits for a write.
		jobsDone := make(chan struct{})
		go func() { w.jobsWG.Wait(); close(jobsDone) }()
		select {
		case <-jobsDone:
		case <-ctx.Done():
			w.mu.Lock()
			n := len(w.running)
			w.mu.Unlock()
			w.log.WarnContext(ctx, "close deadline passed: cancelling running jobs", slog.Int(logkey.Count, n))
			w.cancelJobs(ErrWorkerClosing)
			select {
			case <-jobsDone:
			case <-time.After(5 * time.Second):
				// Results cannot be written (Redis unreachable?): give up on
				// them; the stalled checker recovers those jobs.
				close(w.forceFinish)
				<-jobsDone
				w.closeErr = fmt.Errorf("close worker for queue %q: some results were not written; the stalled checker will recover those jobs", w.q.name)
			}
		}

		// 3. Every result is written: stop the finisher.
		close(w.results)
		<-w.finishDone

		// 4. Nothing runs any more: stop the lock keeper and stalled checker.
		w.stopBG()
		w.bgWG.Wait()
		w.cancelJobs(ErrWorkerClosing)
		w.log.Info("worker closed")
	})
	return w.closeErr
}

// acquire takes up to n free slots without blocking and returns how many.
func (w *Worker) acquire(n int) int {
	got := 0
	for got < n {
		select {
		case w.slots <- struct{}{}:
			got++
		default:
			return got
		}
	}
	return got
}

func (w *Worker) release(n int) {
	for range n {
		<-w.slots
	}
}

func (w *Worker) fetchArgs(count int) scripts.FetchArgs {
	a := scripts.FetchArgs{
		Now:          w.q.nowMs(),
		Count:        count,
		Token:        w.id + ":" + strconv.FormatUint(w.callSeq.Add(1), 36),
		LockDuration: w.opts.LockDuration.Milliseconds(),
		WorkerName:   w.opts.Name,
	}
	if l := w.opts.Limiter; l != nil {
		a.LimitMax, a.LimitWindow = l.Max, l.Duration.Milliseconds()
	}
	return a
}

// noteRateLimit remembers until when the rate limiter refuses activations.
func (w *Worker) noteRateLimit(ttlMs int64) {
	if ttlMs > 0 {
		w.limitedUntil.Store(w.q.nowMs() + ttlMs)
	}
}

func (w *Worker) fetchBatch() int { return min(w.opts.Concurrency, maxFetch) }

// fetchLoop takes jobs while slots are free; when the queue has nothing
// ready it blocks on the marker until a producer, a resume, a stalled
// recovery or the earliest delayed job wakes it.
func (w *Worker) fetchLoop() {
	defer close(w.fetchDone)
	ctx := w.fetchCtx
	failures := 0
	for {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1 + w.acquire(w.fetchBatch()-1)
		args := w.fetchArgs(n)
		f, err := scripts.MoveToActive(ctx, w.q.rdb, w.q.k, args)
		if err != nil {
			w.release(n)
			if ctx.Err() != nil {
				return
			}
			failures++
			reloadTopology(w.q.rdb, err)
			w.log.WarnContext(ctx, "fetch jobs failed", slog.Any(logkey.Error, err))
			if !sleepCtx(ctx, retryDelay(failures)) {
				return
			}
			continue
		}
		failures = 0
		w.release(n - len(f.Jobs))
		w.dispatch(f.Jobs, args.Token)
		w.noteRateLimit(f.RateLimitTTL)
		if len(f.Jobs) == n {
			continue
		}
		w.noteDelayed(f.NextDelayed)
		w.waitForWork(ctx)
	}
}

// noteDelayed remembers the earliest delayed job's due time from a score.
func (w *Worker) noteDelayed(score string) {
	if due, ok := parseDelayedScore(score); ok {
		w.setNextDelayed(due.UnixMilli())
	}
}

func (w *Worker) setNextDelayed(ms int64) {
	for {
		cur := w.nextDelayed.Load()
		if cur != 0 && cur <= ms {
			return
		}
		if w.nextDelayed.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// waitForWork blocks on the marker (and the worker's wake key) for at most
// DrainDelay, or until the earliest known delayed job is due. Redis checks
// blocking timeouts only every 100 ms, so a local timer wakes the call at
// the due time precisely.
func (w *Worker) waitForWork(ctx context.Context) {
	wait := w.opts.DrainDelay
	if until := w.limitedUntil.Load(); until != 0 {
		// Rate limited: markers do not help before the window ends.
		w.limitedUntil.Store(0)
		if d := time.Duration(until-w.q.nowMs()) * time.Millisecond; d > 0 {
			sleepCtx(ctx, d)
		}
		return
	}
	if due := w.nextDelayed.Load(); due != 0 {
		d := time.Duration(due-w.q.nowMs()) * time.Millisecond
		if d <= 0 {
			w.nextDelayed.Store(0)
			return
		}
		if d < wait {
			wait = d
			w.armWake(d)
		}
	}
	// BZPOPMIN through go-redis takes whole seconds; sub-second waits are
	// ended by the wake timer armed above.
	block := max(time.Second, (wait+time.Second-1)/time.Second*time.Second)
	res, err := w.q.rdb.BZPopMin(ctx, block, w.q.k.Marker(), w.q.k.WorkerWake(w.id)).Result()
	w.disarmWake()
	if err != nil {
		if errors.Is(err, redis.Nil) || ctx.Err() != nil {
			w.expireDelayedHint()
			return
		}
		if isUnblocked(err) {
			// A failover made the node a replica and Redis ended the block:
			// fetch again now; the client follows the new master.
			w.log.InfoContext(ctx, "wait for jobs ended by a failover", slog.Any(logkey.Error, err))
			return
		}
		reloadTopology(w.q.rdb, err)
		w.log.WarnContext(ctx, "wait for jobs failed", slog.Any(logkey.Error, err))
		sleepCtx(ctx, time.Second)
		return
	}
	if res.Member == "1" && res.Key == w.q.k.Marker() {
		w.setNextDelayed(int64(res.Score))
	}
	w.expireDelayedHint()
}

// expireDelayedHint forgets the delayed due time once it has passed: the
// next fetch promotes that job and reports the next one.
func (w *Worker) expireDelayedHint() {
	if due := w.nextDelayed.Load(); due != 0 && due <= w.q.nowMs() {
		w.nextDelayed.CompareAndSwap(due, 0)
	}
}

func (w *Worker) armWake(d time.Duration) {
	w.wakeMu.Lock()
	defer w.wakeMu.Unlock()
	if w.wakeTimer != nil {
		w.wakeTimer.Stop()
	}
	w.wakeTimer = time.AfterFunc(d, w.wake)
}

func (w *Worker) disarmWake() {
	w.wakeMu.Lock()
	defer w.wakeMu.Unlock()
	if w.wakeTimer != nil {
		w.wakeTimer.Stop()
		w.wakeTimer = nil
	}
}

// wake makes the fetcher's blocking call return now.
func (w *Worker) wake() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = w.q.rdb.ZAdd(ctx, w.q.k.WorkerWake(w.id), redis.Z{Score: 0, Member: "w"}).Err()
}

// dispatch starts a goroutine per fetched job. Each holds one slot.
// token is the fetch call's lock token base.
func (w *Worker) dispatch(jobs []scripts.Fetched, token string) {
	now := w.q.clock.Now()
	for _, f := range jobs {
		rec, _, err := jobcodec.Decode(f.ID, f.Hash)
		rec.ProcessedOn = now.UnixMilli()
		rec.AttemptsStarted++
		job := w.q.fromRecord(&rec)
		if job.ProcessedBy == "" {
			job.ProcessedBy = w.opts.Name
		}
		rj := &runningJob{job: job, rec: &rec, started: now}
		rj.token = token + ":" + job.ID
		job.token = rj.token
		rj.lastRenew.Store(now.UnixMilli())
		ctx, cancel := context.WithCancelCause(w.jobsCtx)
		rj.cancel = cancel
		w.mu.Lock()
		w.running[job.ID] = rj
		w.mu.Unlock()
		w.jobsWG.Add(1)
		go w.run(ctx, rj, err)
	}
}

// run executes one attempt and hands its outcome to the finisher.
// The job stays counted in jobsWG until the finisher has written its result.
func (w *Worker) run(ctx context.Context, rj *runningJob, decodeErr error) {
	defer rj.cancel(nil)
	job := rj.job

	var result any
	var err error
	switch {
	case decodeErr != nil:
		err = Unrecoverable(fmt.Errorf("cannot decode job: %w", decodeErr))
	case job.DeferredFailure != "":
		err = Unrecoverable(errors.New(job.DeferredFailure))
	case w.opts.MaxStartedAttempts > 0 && job.AttemptsStarted > w.opts.MaxStartedAttempts:
		err = Unrecoverable(errors.New("job started more than allowable limit"))
	default:
		if h := w.opts.Hooks.JobStarted; h != nil {
			h(job)
		}
		w.log.DebugContext(ctx, "job started", slog.String(logkey.JobID, job.ID),
			slog.String(logkey.JobName, job.Name), slog.Int(logkey.Attempt, job.AttemptsStarted))
		result, err = w.call(ctx, job)
	}
	took := time.Since(rj.started)

	if cause := context.Cause(ctx); errors.Is(cause, ErrLockLost) {
		why, _ := rj.lostWhy.Load().(string)
		w.log.WarnContext(ctx, "job lock lost: result not written", slog.String(logkey.JobID, job.ID),
			slog.String(logkey.Reason, why), slog.Duration(logkey.Duration, took))
		w.untrack(job.ID)
		w.release(1)
		w.jobsWG.Done()
		return
	}
	item := w.outcome(ctx, rj, result, err, took)
	w.results <- item
}

// call runs the processor, turning a panic into an error with its stack.
func (w *Worker) call(ctx context.Context, job *Job) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, stack: string(debug.Stack())}
		}
	}()
	return w.proc.Process(ctx, job)
}

type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// stackOf is the trace stored for a failure: the panic stack, or the error's
// %+v rendering (which includes stacks for errors that carry one).
func stackOf(err error) string {
	var p *panicError
	if errors.As(err, &p) {
		return p.Error() + "\n\n" + p.stack
	}
	return fmt.Sprintf("%+v", err)
}

// outcome decides what happens to the job after its attempt, following
// BullMQ's rules (spec §8.1), and builds the record the finisher writes.
func (w *Worker) outcome(ctx context.Context, rj *runningJob, result any, err error, took time.Duration) *finishItem {
	job, rec := rj.job, rj.rec
	now := w.q.clock.Now()
	item := &finishItem{rj: rj, err: err, took: took}
	fr := &item.rec
	fr.ID, fr.Token = job.ID, rj.token
	fr.Attempts = int(rec.Opts.Attempts)
	fr.DedupID = rec.DedupID
	fr.HasParent = rec.ParentKey != ""
	entry := Attempt{N: job.AttemptsStarted, Start: rj.started, End: now, Worker: w.workerLabel()}

	if err == nil {
		b, merr := encodeData(result)
		if merr != nil {
			err = fmt.Errorf("return value of job %s is not JSON-serialisable: %w", job.ID, merr)
			item.err = err
		} else {
			if result == nil {
				b = []byte("null")
			}
			fr.Kind, fr.Value = scripts.FinishCompleted, string(b)
			fr.AttemptsMade = int(rec.AttemptsMade) + 1
			fr.Keep = w.keepSpec(rec.Opts.RemoveOnComplete, w.opts.RemoveOnComplete)
			item.outcome = "completed"
			entry.Outcome = "completed"
			if len(job.Timeline) > 0 {
				fr.Timeline = w.timeline(job, entry)
			}
			return item
		}
	}

	var de *delayError
	if errors.As(err, &de) {
		fr.Kind, fr.Delay = scripts.FinishMoveDelayed, de.delay
		item.outcome = "delayed"
		entry.Outcome, entry.Backoff = "delayed", time.Duration(de.delay)*time.Millisecond
		entry.NextRun = now.Add(entry.Backoff)
		fr.Timeline = w.timeline(job, entry)
		return item
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrWorkerClosing) {
		fr.Kind = scripts.FinishRequeue
		item.outcome = "requeued"
		entry.Outcome, entry.Error = "requeued", "worker closing"
		fr.Timeline = w.timeline(job, entry)
		return item
	}

	fr.Value = err.Error()
	entry.Error = fr.Value
	fr.Stacktrace = w.stacktrace(job, rec, err)
	fr.AttemptsMade = int(rec.AttemptsMade) + 1
	retry := fr.AttemptsMade < int(rec.Opts.Attempts) && !IsUnrecoverable(err) &&
		!(w.opts.MaxStartedAttempts > 0 && job.AttemptsStarted >= w.opts.MaxStartedAttempts)
	var delay time.Duration
	if retry {
		var berr error
		delay, berr = ComputeBackoff(job.Opts.Backoff, fr.AttemptsMade, err, job, w.opts.BackoffStrategies, w.rand)
		if berr != nil {
			w.log.ErrorContext(ctx, "backoff failed: job fails for good", slog.String(logkey.JobID, job.ID), slog.Any(logkey.Error, berr))
			fr.Value = berr.Error()
			entry.Error = fr.Value
			retry = false
		} else if delay < 0 {
			retry = false
		}
	}
	switch {
	case !retry:
		fr.Kind = scripts.FinishFailed
		fr.Keep = w.keepSpec(rec.Opts.RemoveOnFail, w.opts.RemoveOnFail)
		item.outcome, entry.Outcome = "failed", "failed"
	case delay == 0:
		fr.Kind, fr.LIFO = scripts.FinishRetry, rec.Opts.LIFO
		item.outcome, entry.Outcome = "retry", "retry"
	default:
		fr.Kind, fr.Delay = scripts.FinishRetryDelayed, delay.Milliseconds()
		item.outcome, entry.Outcome = "retry", "delayed"
		entry.Backoff, entry.NextRun = delay, now.Add(delay)
	}
	fr.Timeline = w.timeline(job, entry)
	return item
}

func (w *Worker) keepSpec(job *jobcodec.Keep, worker *Retention) string {
	if job != nil && job.Set {
		return job.Spec()
	}
	return retentionKeep(worker).Spec()
}

// stacktrace appends this failure's trace to the job's, bounded by its
// stackTraceLimit (StackTraceLimitDefault when unset).
func (w *Worker) stacktrace(job *Job, rec *jobcodec.Record, err error) string {
	limit := StackTraceLimitDefault
	if rec.Opts.StackTraceLimit != nil {
		limit = int(*rec.Opts.StackTraceLimit)
	}
	st := append(append([]string(nil), job.Stacktrace...), stackOf(err))
	if limit <= 0 {
		st = nil
	} else if len(st) > limit {
		st = st[len(st)-limit:]
	}
	return jobcodec.EncodeStack(st)
}

func (w *Worker) timeline(job *Job, entry Attempt) string {
	tl := append(append([]Attempt(nil), job.Timeline...), entry)
	if len(tl) > timelineLimit {
		tl = tl[len(tl)-timelineLimit:]
	}
	b, _ := json.Marshal(tl)
	return string(b)
}

func (w *Worker) untrack(id string) {
	w.mu.Lock()
	delete(w.running, id)
	w.mu.Unlock()
}

// finishLoop writes results in batches. Each finished job's slot is handed
// to the same script call, which fetches the next jobs for those slots.
func (w *Worker) finishLoop() {
	defer close(w.finishDone)
	// Up to maxWriters result writes are in flight at once, so the worker
	// decodes and dispatches one batch while Redis runs the script of the
	// next: with one writer, Redis and the worker take turns and each idles
	// half the time.
	writers := make(chan struct{}, maxWriters)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		first, ok := <-w.results
		if !ok {
			return
		}
		// Jobs fetched together tend to finish together: yield once so the
		// ones about to send their result join this batch, instead of each
		// paying a script call of its own.
		runtime.Gosched()
		batch := []*finishItem{first}
	more:
		for len(batch) < maxFinish {
			select {
			case it, ok := <-w.results:
				if !ok {
					break more
				}
				batch = append(batch, it)
			default:
				break more
			}
		}
		writers <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-writers }()
			w.writeBatch(batch)
		}()
	}
}

func (w *Worker) writeBatch(batch []*finishItem) {
	slots := len(batch) // the finished jobs' slots
	fetch := 0
	if !w.closing.Load() {
		extra := w.acquire(max(w.fetchBatch()-slots, 0))
		slots += extra
		fetch = min(slots, w.fetchBatch())
	}
	recs := make([]scripts.FinishRecord, len(batch))
	for i, it := range batch {
		recs[i] = it.rec
	}
	var codes []error
	var f scripts.Fetch
	ctx := context.Background() // results must land even while closing
	args := w.fetchArgs(fetch)
	for attempt := 1; ; attempt++ {
		var err error
		codes, f, err = scripts.FinishJobs(ctx, w.q.rdb, w.q.k, args, recs)
		if err == nil {
			break
		}
		reloadTopology(w.q.rdb, err)
		w.log.Warn("write job results failed", slog.Int(logkey.Count, len(batch)), slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		select {
		case <-w.forceFinish:
			w.log.Error("giving up writing job results; the stalled checker will recover these jobs", slog.Int(logkey.Count, len(batch)))
			for _, it := range batch {
				w.untrack(it.rj.job.ID)
				w.jobsWG.Done()
			}
			w.release(slots)
			return
		case <-time.After(retryDelay(attempt)):
		}
	}
	newDelayed := false
	for i, it := range batch {
		job := it.rj.job
		w.untrack(job.ID)
		if codes[i] != nil {
			w.log.Warn("job result not written: the worker no longer owns the job", slog.String(logkey.JobID, job.ID),
				slog.String("outcome", it.outcome), slog.Any(logkey.Error, codes[i]))
			continue
		}
		w.logFinished(it)
		if h := w.opts.Hooks.JobFinished; h != nil {
			h(job, it.outcome, it.took, it.err)
		}
		if it.rec.Kind == scripts.FinishRetryDelayed || it.rec.Kind == scripts.FinishMoveDelayed {
			w.setNextDelayed(w.q.nowMs() + it.rec.Delay)
			newDelayed = true
		}
	}
	w.release(slots - len(f.Jobs))
	w.dispatch(f.Jobs, args.Token)
	w.noteRateLimit(f.RateLimitTTL)
	// Only now may Close see these jobs as done: the jobs fetched above are
	// already counted.
	for range batch {
		w.jobsWG.Done()
	}
	if newDelayed && !w.closing.Load() {
		w.wake() // the fetcher may sleep past the new delayed job's due time
	}
}

func (w *Worker) logFinished(it *finishItem) {
	job := it.rj.job
	attrs := []any{slog.String(logkey.JobID, job.ID), slog.String(logkey.JobName, job.Name),
		slog.Int(logkey.Attempt, job.AttemptsStarted), slog.String("outcome", it.outcome),
		slog.Duration(logkey.Duration, it.took)}
	if it.err != nil {
		attrs = append(attrs, slog.String(logkey.Error, it.err.Error()))
	}
	level := slog.LevelDebug
	if it.outcome == "failed" {
		level = slog.LevelWarn
	}
	w.log.Log(context.Background(), level, "job finished", attrs...)
}

// lockLoop renews the locks of running jobs every LockDuration/4, in one
// script call, and cancels the jobs whose lock is gone.
func (w *Worker) lockLoop() {
	defer w.bgWG.Done()
	ticker := time.NewTicker(w.opts.LockDuration / 4)
	defer ticker.Stop()
	for {
		select {
		case <-w.bgCtx.Done():
			return
		case <-ticker.C:
		}
		w.renewLocks(w.bgCtx)
	}
}

func (w *Worker) renewLocks(ctx context.Context) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.running))
	tokens := make([]string, 0, len(w.running))
	for id, rj := range w.running {
		ids = append(ids, id)
		tokens = append(tokens, rj.token)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	lost, err := scripts.ExtendLocks(ctx, w.q.rdb, w.q.k, w.opts.LockDuration.Milliseconds(), ids, tokens)
	if err != nil {
		if ctx.Err() == nil {
			reloadTopology(w.q.rdb, err)
			w.log.WarnContext(ctx, "renew job locks failed", slog.Int(logkey.Count, len(ids)), slog.Any(logkey.Error, err))
		}
		return
	}
	now := w.q.nowMs()
	lostSet := make(map[string]string, len(lost))
	for _, l := range lost {
		lostSet[l.ID] = l.Reason
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		rj := w.running[id]
		if rj == nil {
			continue
		}
		reason, isLost := lostSet[id]
		if !isLost {
			rj.lastRenew.Store(now)
			continue
		}
		var why string
		if reason == "taken" {
			why = "another worker holds the job's lock: it was recovered as stalled and taken again, or moved by someone else"
		} else {
			last := rj.lastRenew.Load()
			expired := now - (last + w.opts.LockDuration.Milliseconds())
			why = fmt.Sprintf("lock expired before renewal: last renewed %dms ago, expired %dms ago (is the process starved or was Redis unreachable?)",
				now-last, max(expired, 0))
		}
		rj.lostWhy.Store(why)
		if h := w.opts.Hooks.LockLost; h != nil {
			h(rj.job, why)
		}
		if rj.cancel != nil {
			rj.cancel(ErrLockLost)
		}
	}
}

// stalledLoop runs the stalled checker at start and every StalledInterval.
func (w *Worker) stalledLoop() {
	defer w.bgWG.Done()
	ticker := time.NewTicker(w.opts.StalledInterval)
	defer ticker.Stop()
	for {
		w.checkStalled(w.bgCtx)
		select {
		case <-w.bgCtx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (w *Worker) checkStalled(ctx context.Context) {
	ran, moved, err := scripts.MoveStalledJobsToWait(ctx, w.q.rdb, w.q.k, w.q.nowMs(),
		w.opts.StalledInterval.Milliseconds(), w.opts.MaxStalledCount)
	if err != nil {
		if ctx.Err() == nil {
			reloadTopology(w.q.rdb, err)
			w.log.WarnContext(ctx, "stalled check failed", slog.Any(logkey.Error, err))
		}
		return
	}
	if !ran {
		return
	}
	for _, s := range moved {
		w.log.WarnContext(ctx, "job stalled: moved back to wait", slog.String(logkey.JobID, s.ID), slog.Int("stalled_count", s.StalledCounter))
		if h := w.opts.Hooks.Stalled; h != nil {
			h(s.ID, s.StalledCounter)
		}
	}
}

// isUnblocked reports whether a blocking command was ended by the server:
// Redis answers "UNBLOCKED ..." to clients blocked on a master that turns
// into a replica (CLUSTER FAILOVER, a sentinel failover) and to CLIENT
// UNBLOCK ... ERROR. Blocking again is the right answer; go-redis does not
// retry it by itself.
func isUnblocked(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "UNBLOCKED ")
}

// reloadTopology makes a Redis Cluster client reload its slot map after a
// connection-level error (not a Redis reply). go-redis reloads the map on
// MOVED, but a crashed master sends no MOVED: after its replica is elected,
// the client keeps sending that shard's commands to the dead address until
// its periodic reload (ClusterOptions.ClusterStateReloadInterval, 60s by
// default). ReloadState is asynchronous and debounced by go-redis.
func reloadTopology(rdb redis.UniversalClient, err error) {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok || err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return
	}
	c.ReloadState(context.Background())
}

func retryDelay(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt, 6)
	return min(d, 3*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
