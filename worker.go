package drover

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
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
// with ErrWorkerClosing when Close's deadline passes (the job goes back to
// wait without spending an attempt), with a cause wrapping ErrJobTimedOut at
// the attempt's timeout, and with one wrapping ErrJobCancelled when
// Queue.CancelJob cancels it. After a timeout or a cancel the attempt fails
// with that cause as its error, whatever the processor returns.
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
	// Locks are renewed every LockDuration/4. A job whose lock runs out
	// unrenewed (Redis unreachable, or renewals slower than the lock lasts:
	// keep it several times the worst round trip to Redis) has its context
	// cancelled with cause ErrLockLost then, since another worker may take
	// it over from that moment.
	//
	// Defaults to LockDurationDefault (30s).
	LockDuration time.Duration
	// StalledInterval is how often the stalled-job checker runs (once per
	// interval across all workers of the queue). Defaults to
	// StalledIntervalDefault (30s).
	StalledInterval time.Duration
	// MaxStalledCount is how many stall recoveries a job gets before it is
	// failed (never a job scheduler's run or a legacy repeatable job, as in
	// BullMQ). Defaults to MaxStalledCountDefault (1); negative means 0.
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
	// MaxRateLimitWait bounds one wait of this worker for the rate limiter
	// (BullMQ's maximumRateLimitDelay): after the wait the worker fetches
	// again, and waits again if the limiter still refuses. A smaller bound
	// lets a worker notice sooner that a limit was lifted early
	// (Queue.RemoveRateLimitKey). Defaults to MaxRateLimitWaitDefault (30s).
	MaxRateLimitWait time.Duration
	// BackoffStrategies are custom backoff strategies by Backoff.Type.
	BackoffStrategies map[string]BackoffFunc
	// RemoveOnComplete / RemoveOnFail apply to jobs that do not set their own.
	RemoveOnComplete *Retention
	RemoveOnFail     *Retention
	// ClockCheckInterval is how often the worker measures how far its
	// machine's clock is from the Redis server's (TIME, the best of 3 round
	// trips; first at Start). Every time the worker hands a script (when a
	// delayed job is due, a backoff's due time, a retention age, the stalled
	// check) is then corrected by that offset, so workers whose clocks
	// disagree still agree with Redis, and with each other, on when a job is
	// due. A step of the machine's clock (more than 100 ms away from the
	// monotonic clock since the last measurement) is measured again at
	// once, and until then the last measurement is carried on by the
	// monotonic clock. Negative turns the correction off: the machine's
	// clock is used as is (BullMQ's behaviour).
	//
	// Defaults to ClockCheckIntervalDefault (1 minute).
	ClockCheckInterval time.Duration
	// ClockSkewWarning is the offset to Redis TIME past which each
	// measurement logs a warning (the correction applies either way).
	//
	// Defaults to ClockSkewWarningDefault (1s).
	ClockSkewWarning time.Duration
	// Logger receives the worker's logs, with constant keys (queue,
	// job_name, job_id, op_key, attempt, pid, outcome, error_class, ...):
	// a line when an attempt starts (debug) and when its outcome is written
	// (debug; info when it will be retried; warning when the job failed for
	// good). Job data is never logged. Defaults to warnings and errors, as
	// text, on stderr; slog.New(slog.DiscardHandler) silences it.
	Logger *slog.Logger
	// OpKey returns the operation key logged with each attempt (op_key),
	// e.g. the idempotency key the processor claims, so that its lines
	// join up with the processor's own across processes. It must not
	// block. nil = the job's DeduplicationID, when it has one.
	OpKey func(job *Job) string
	// Hooks observe the worker, e.g. for metrics. Optional. JobStarted and
	// JobFinished run as a middleware outside Middleware. A worker made
	// without a Processor (manual processing) calls JobStarted when
	// NextJob, CompleteAndNext or FailAndNext hands a job out and
	// JobFinished when Complete, Fail, MoveToDelayed, MoveToWait (or a
	// job NextJob fails without handing it out) wrote the outcome, took
	// counting from the take, on the caller's goroutine; it calls neither
	// LockLost nor FetchHeld (its caller renews the locks and takes the
	// jobs); Stalled reports its stalled checker's moves once started.
	Hooks *WorkerHooks
	// Middleware runs around every attempt of the Processor, first =
	// outermost (see WorkerMiddleware). None by default. A worker without
	// a Processor has nothing to wrap: NewWorker refuses Middleware for it
	// (ErrInvalidOption) rather than ignore it.
	Middleware []WorkerMiddleware
	// JobTimeout bounds each attempt of a job that sets no
	// JobOptions.Timeout and whose kind has no KindOptions.Timeout
	// (WorkWith): the processor's context is cancelled at the
	// deadline (cause ErrJobTimedOut) and the attempt fails, retried per the
	// job's attempts and backoff. 0 = no limit.
	JobTimeout time.Duration
	// Metrics makes the worker count the jobs it finishes for good in
	// BullMQ's per-minute metrics (<queue>:metrics:completed|failed), which
	// Node's Queue.getMetrics and drover's Queue.GetMetrics read. nil = off
	// (no extra Redis call).
	Metrics *MetricsOptions
}

// MetricsOptions are BullMQ's worker metrics option.
type MetricsOptions struct {
	// MaxDataPoints is how many per-minute points are kept, e.g.
	// MetricsOneWeek. Must be at least 1.
	MaxDataPoints int
}

// BullMQ's MetricsTime values for MetricsOptions.MaxDataPoints.
const (
	MetricsOneHour = 60
	MetricsOneDay  = 60 * 24
	MetricsOneWeek = 60 * 24 * 7
)

// WorkerHooks are called from the worker's goroutines (a manual worker's
// JobStarted and JobFinished from its caller's); they must be fast and
// safe for concurrent use. Any of them may be nil. JobStarted and
// JobFinished are a WorkerMiddleware (the outermost one); the others report
// on the worker rather than on an attempt.
type WorkerHooks struct {
	// JobStarted is called before the processor runs.
	JobStarted func(job *Job)
	// JobFinished is called once the attempt's outcome is written to Redis.
	// job.AttemptsMade is the count before this attempt; err is the
	// processor's error (nil when it completed).
	JobFinished func(job *Job, outcome Outcome, took time.Duration, err error)
	// LockLost is called when the worker loses a running job's lock.
	LockLost func(job *Job, reason string)
	// Stalled is called for each job this worker's checker moved back.
	Stalled func(jobID string, stalledCount int)
	// FetchHeld is called when the worker stops taking new jobs because it
	// cannot renew the locks of the ones it runs (err says why: Redis out
	// of memory, unreachable), and with held false and err nil when Redis
	// takes writes again and it resumes.
	FetchHeld func(held bool, err error)
}

func (o *WorkerOptions) withDefaults() WorkerOptions {
	var r WorkerOptions
	if o != nil {
		r = *o
	}
	r.Prefix = cmp.Or(r.Prefix, PrefixDefault)
	r.Concurrency = cmp.Or(r.Concurrency, ConcurrencyDefault)
	r.LockDuration = cmp.Or(r.LockDuration, LockDurationDefault)
	r.StalledInterval = cmp.Or(r.StalledInterval, StalledIntervalDefault)
	r.MaxStalledCount = max(cmp.Or(r.MaxStalledCount, MaxStalledCountDefault), 0) // negative means 0
	r.DrainDelay = cmp.Or(r.DrainDelay, DrainDelayDefault)
	r.MaxRateLimitWait = cmp.Or(r.MaxRateLimitWait, MaxRateLimitWaitDefault)
	r.ClockCheckInterval = cmp.Or(r.ClockCheckInterval, ClockCheckIntervalDefault)
	r.ClockSkewWarning = cmp.Or(r.ClockSkewWarning, ClockSkewWarningDefault)
	if r.Logger == nil {
		r.Logger = defaultLogger()
	}
	r.Hooks = cmp.Or(r.Hooks, &WorkerHooks{})
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
	case o.MaxRateLimitWait < time.Millisecond:
		return optionError("WorkerOptions.MaxRateLimitWait must be at least 1ms, got %s", o.MaxRateLimitWait)
	case o.Metrics != nil && o.Metrics.MaxDataPoints < 1:
		return optionError("WorkerOptions.Metrics.MaxDataPoints must be at least 1, got %d", o.Metrics.MaxDataPoints)
	case o.MaxStartedAttempts < 0:
		return optionError("WorkerOptions.MaxStartedAttempts must not be negative, got %d", o.MaxStartedAttempts)
	case o.JobTimeout < 0:
		return optionError("WorkerOptions.JobTimeout must not be negative, got %s", o.JobTimeout)
	case o.ClockSkewWarning < 0:
		return optionError("WorkerOptions.ClockSkewWarning must not be negative, got %s", o.ClockSkewWarning)
	}
	for name, r := range map[string]*Retention{"WorkerOptions.RemoveOnComplete": o.RemoveOnComplete, "WorkerOptions.RemoveOnFail": o.RemoveOnFail} {
		if err := r.check(name); err != nil {
			return err
		}
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
)

// Worker takes jobs from one queue and runs a Processor on them, Concurrency
// at a time. Start it with Start; stop it with Close. Pause and Resume stop
// and restart its taking jobs (worker_pause.go).
//
// Its goroutines, all owned and waited for by Close:
//   - the fetcher takes jobs when slots are free and otherwise blocks on the
//     queue's marker (no polling);
//   - one goroutine per running job (bounded by Concurrency, kept a while
//     for the next job once its own is done, worker_runners.go); up to
//     maxWriters of them at a time also write results in batches, fetching
//     the next jobs for the freed slots in the same script call, and then
//     run one of those jobs (worker_finish.go);
//   - the lock keeper renews the locks of running jobs;
//   - the stalled checker recovers jobs whose worker died.
type Worker struct {
	// Set by NewWorker; read-only afterwards.
	q       *Queue
	proc    Processor
	chain   ProcessorFunc      // proc inside the middleware (middleware.go)
	kinds   kindOptioner       // proc's per-kind options (a *Kinds), or nil
	mws     []WorkerMiddleware // hooks first, then WorkerOptions.Middleware
	opts    WorkerOptions
	id      string
	log     *slog.Logger
	rand    func() float64 // backoff jitter; tests replace it before Start
	keeper  *lockKeeper
	checker *stalledChecker

	// In-flight jobs: changed by the fetcher and the job goroutines (also
	// when they write results), read by the lock keeper and Close; synchronised
	// inside inflight.
	jobs *inflight
	// carry holds the results waiting to be written and counts the job
	// goroutines writing them (worker_finish.go).
	carry carriers
	// runners keeps job goroutines that ran out of jobs for the next ones
	// (worker_runners.go).
	runners runners

	// Lifecycle, written by Start and Close only (under startOnce and
	// closeOnce); the goroutines read the contexts and channels.
	startOnce sync.Once
	closeOnce sync.Once
	started   atomic.Bool
	closing   atomic.Bool // read by the writers: stop fetching next jobs
	// closed is cancelled when Close begins: it ends NextJob calls that
	// wait for a job (manual.go).
	closed      context.Context
	markClosed  context.CancelFunc
	closeErr    error
	fetchCtx    context.Context
	stopFetch   context.CancelFunc
	jobsCtx     context.Context
	cancelJobs  context.CancelCauseFunc
	bgCtx       context.Context
	stopBG      context.CancelFunc
	fetchDone   chan struct{} // closed by the fetcher when it returns
	bgWG        sync.WaitGroup
	forceFinish chan struct{} // closed by Close when it gives up writing results
	// forceCtx ends with forceFinish: it abandons a result write in flight
	// that Redis does not answer (paused; the client may ignore ctx, see
	// internal/bounded), so giving up does not wait out its timeouts.
	forceCtx context.Context
	forced   context.CancelFunc
	// advances are the job scheduler advances Redis did not take in time
	// (advanceSchedulerLater).
	advances advances

	// Fetch hints: written by the fetcher and the writers (atomics).
	nextDelayed  atomic.Int64 // ms of the earliest delayed job this worker knows of
	limitedUntil atomic.Int64 // ms until which the rate limiter refuses jobs
	// limitGate: a result write that moves a job back for ErrRateLimited
	// holds it alone until it noted the limiter key's PTTL; every fetch
	// (the fetcher's, a write's fetch-next) holds it shared.
	limitGate sync.RWMutex
	callSeq   atomic.Uint64 // makes each fetch call's lock tokens unique

	// pauser is Pause's state and counts the fetch calls on their way
	// (worker_pause.go); waiting is set by the fetcher while it waits for
	// jobs on the marker, for Pause to end that wait.
	pauser  pauser
	waiting atomic.Bool

	// The fetcher's wake timer: armed by the fetcher, stopped by it and by
	// Close, under wakeMu.
	wakeMu    sync.Mutex
	wakeTimer *time.Timer

	// wakeGate orders every wake-up write before Close deletes the wake
	// key: a wake-up holds it shared while it writes, and Close takes it
	// exclusively to set wakeShut, after which no wake-up writes. Without
	// it a wake-up decided just before Close (a finished job's new delayed
	// retry, a timer already firing) could land after the delete and leave
	// the key behind.
	wakeGate sync.RWMutex
	wakeShut bool

	// clocker is q's (it corrects q.clock by the offset to Redis TIME),
	// measured by the worker's own goroutine; nil when ClockCheckInterval is
	// negative.
	clocker *clockKeeper

	// gate is closed by the lock keeper while lock renewals fail; the
	// fetcher and the writers take no new job then.
	gate *fetchGate

	// canceller hears Queue.CancelJob's requests (worker_cancel.go).
	canceller *canceller

	// presence keeps the connection named as BullMQ names a worker's, so
	// Node's getWorkers() and Queue.GetWorkers list this worker (workers.go).
	presence *presence

	// noFetchOnFinish makes result writes fetch no next job, as a BullMQ
	// worker's moveToFinished with fetchNext false. Set only through
	// seam.NoFetchOnFinish, before Start (the differential tester's
	// one-job steps).
	noFetchOnFinish bool

	// closeBegun, when set (tests only), runs in Close after the worker is
	// marked closing and before the fetcher is stopped: the window in which
	// a fetcher that found a free slot must still take no job.
	closeBegun func()

	// beforeFinishWake, when set (tests only), runs in a result write after
	// it decided to wake the fetcher and before the wake-up: the window in
	// which Close may begin.
	beforeFinishWake func()
}

// runningJob is one job in flight, from its fetch until its result is
// written (or dropped).
type runningJob struct {
	job       *Job
	stored    storedForFinish
	token     string
	started   time.Time       // on the queue's clock (Redis's), for the timeline
	w         *Worker         // the worker running it (its label names the attempt in the timeline)
	began     time.Time       // on the wall clock, to measure how long it ran
	ctx       context.Context // the processor's; cancelled with a cause
	cancel    context.CancelCauseFunc
	decodeErr error        // the job hash did not decode: the attempt fails for good
	lastRenew atomic.Int64 // ms; written by the lock keeper
	lostWhy   atomic.Value // string; written by the lock keeper before it cancels
	written   atomic.Bool  // the result is in Redis: the lock keeper leaves it alone
	// settled: the attempt's outcome is decided (its processor returned,
	// or it was refused); only the write of its result may be pending.
	// Close waits for unsettled jobs however long they run.
	settled atomic.Bool
	// ran: the processor chain was called. mwCtx[i] is the context
	// middleware i received (mwCtx[len] the processor's); nil without
	// middleware. Written by the job goroutine before it hands the result
	// on, read by whoever calls Finished after that.
	ran   bool
	mwCtx []context.Context
	// stopped is set once: by a cancel request or the timeout (which then
	// cancel ctx), or to attemptReturned by run when the processor returns
	// first. Whichever comes first decides the attempt (worker_cancel.go).
	stopped atomic.Pointer[stopError]
}

// storedForFinish is what the end of an attempt reads from the job as
// stored, beyond the public Job: kept instead of the whole decoded record,
// which would double the memory of every job in flight (10,000 in flight:
// about 5 MB of live heap held only for these fields).
type storedForFinish struct {
	attempts     int64 // opts.attempts as stored
	attemptsMade int64
	dedupID      string
	// parentKey is the job's flow parent's key ("" = none): a finish
	// updates that parent, and a batch of results is cut before the
	// parent's (Worker.flowCut).
	parentKey                      string
	lifo                           bool
	timeoutMs                      int64
	stackTraceLimit                *int64
	removeOnComplete, removeOnFail *jobcodec.Keep
	// schedulerRun is the decoded record of a job scheduler's run, which
	// creating the scheduler's next run needs whole; nil for other jobs.
	schedulerRun *jobcodec.Record
}

func storedOf(rec *jobcodec.Record) storedForFinish {
	s := storedForFinish{
		attempts: rec.Opts.Attempts, attemptsMade: rec.AttemptsMade, dedupID: rec.DedupID,
		parentKey: rec.ParentKey, lifo: rec.Opts.LIFO, timeoutMs: rec.Opts.Timeout,
		stackTraceLimit:  rec.Opts.StackTraceLimit,
		removeOnComplete: rec.Opts.RemoveOnComplete, removeOnFail: rec.Opts.RemoveOnFail,
	}
	if rec.RepeatJobKey != "" {
		run := *rec // a copy: the caller's record need not outlive the fetch
		s.schedulerRun = &run
	}
	return s
}

// storedOfFetched is storedOf for a job a fetch took, whose hash Decode
// read with decodeErr. A scheduler's run that does not decode still names
// its scheduler: the worker creates the next run before it refuses this
// one, as Node's workers create it before they run a job, so the scheduler
// goes on (jobcodec.SchedulerRun).
func storedOfFetched(rec *jobcodec.Record, f scripts.Fetched, decodeErr error) storedForFinish {
	s := storedOf(rec)
	if decodeErr != nil {
		s.schedulerRun = nil
		if run, ok := jobcodec.SchedulerRun(f.ID, f.Hash); ok {
			s.schedulerRun = &run
		}
	}
	return s
}

type finishItem struct {
	rj      *runningJob
	rec     scripts.FinishRecord
	outcome Outcome
	err     error
	took    time.Duration
}

// NewWorker returns a worker for queue name. It does no I/O; call Start.
//
// With a nil proc the worker processes nothing itself: its caller takes
// jobs with NextJob and ends their attempts with the Job's Complete, Fail,
// MoveToDelayed or MoveToWait (BullMQ's manual processing; see NextJob).
// Start then runs only the stalled checker (unless SkipStalledCheck) and
// the clock measurement; Concurrency is unused, Middleware refused, and
// Hooks see the manual attempts (see WorkerOptions.Hooks).
func NewWorker(rdb redis.UniversalClient, name string, proc Processor, opts *WorkerOptions) (*Worker, error) {
	if f, ok := proc.(ProcessorFunc); ok && f == nil {
		proc = nil
	}
	if v, ok := proc.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, err // a Kinds registration mistake
		}
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if proc == nil && len(o.Middleware) > 0 {
		return nil, optionError("WorkerOptions.Middleware wraps a Processor; this worker has none (manual processing), so its %d middleware would never run", len(o.Middleware))
	}
	q, err := NewQueue(rdb, name, &QueueOptions{Prefix: o.Prefix, Logger: o.Logger,
		ClockCheckInterval: o.ClockCheckInterval, ClockSkewWarning: o.ClockSkewWarning})
	if err != nil {
		return nil, err
	}
	id := newID()
	mws := o.middleware()
	w := &Worker{
		q:    q,
		proc: proc,
		mws:  mws,
		opts: o,
		id:   id,
		jobs: newInflight(o.Concurrency, o.LockDuration),
		rand: mathrand.Float64,
	}
	q.worker = w
	w.kinds, _ = proc.(kindOptioner)
	if proc != nil {
		w.chain = chain(proc, mws)
	}
	w.log = outageLogger(o.Logger).With(slog.String(logkey.Queue, name), slog.String(logkey.Worker, w.workerLabel()),
		slog.Int(logkey.PID, os.Getpid()))
	if q.clocker != nil {
		w.clocker = q.clocker // the queue's; the worker measures it periodically
		w.clocker.log = w.log
	}
	w.closed, w.markClosed = context.WithCancel(context.Background())
	w.gate = &fetchGate{log: w.log, hook: o.Hooks.FetchHeld}
	w.presence = &presence{rdb: rdb, name: workerClientName(q.k.Prefix(), name, o.Name), slotKey: q.k.Meta(),
		interval: presenceInterval, log: w.log}
	w.keeper = newLockKeeper(q, w.jobs, o.LockDuration)
	w.keeper.log, w.keeper.lost, w.keeper.gate = w.log, o.Hooks.LockLost, w.gate
	w.keeper.wakeKey, w.keeper.workerID, w.keeper.wakeLife = q.k.WorkerWake(id), id, wakeLifetime(o.LockDuration)
	w.canceller = &canceller{rdb: rdb, channel: q.k.CancelChannel(id), kept: q.k.CancelRequests(id), jobs: w.jobs, log: w.log}
	w.checker = &stalledChecker{q: q, interval: o.StalledInterval, maxStalled: o.MaxStalledCount,
		log: w.log, stalled: o.Hooks.Stalled, paused: &w.pauser.paused, resumed: make(chan struct{}, 1)}
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
func (w *Worker) ID() string {
	if w == nil {
		return ""
	}
	return w.id
}

// Queue is a Queue handle for the worker's queue.
func (w *Worker) Queue() *Queue {
	if w == nil {
		return nil
	}
	return w.q
}

// startProbeTimeout bounds Start's first contact with Redis (a ping, the
// clock measurement and the worker's named connection).
const startProbeTimeout = 3 * time.Second

// Start starts the worker's goroutines and returns once the worker runs.
//
// Redis need not be up: Start first pings it (bounded by ctx and
// startProbeTimeout) so that, when it answers, the clock is measured and the
// worker is listed by getWorkers before Start returns. When it does not
// answer, Start logs a warning and starts anyway; the fetcher retries with
// backoff (logging each failure) and takes jobs as soon as Redis answers,
// and Close stops it either way, as River's and asynq's workers ride out a
// database that is briefly away. Start returns an error only if ctx has
// already ended or the worker was closed; a second Start is a no-op.
func (w *Worker) Start(ctx context.Context) error {
	if w == nil || w.q == nil {
		return errZeroValue("Worker", "NewWorker")
	}
	if ctx == nil {
		return errNilContext
	}
	if w.closing.Load() {
		return fmt.Errorf("worker for queue %q: %w", w.q.name, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start worker for queue %q: %w", w.q.name, err)
	}
	w.startOnce.Do(func() {
		probe, cancel := context.WithTimeout(ctx, startProbeTimeout)
		defer cancel()
		if w.proc == nil {
			w.startManual(probe)
			return
		}
		// bounded: go-redis heeds probe's deadline only through its own
		// timeouts, which a client may have switched off.
		if _, err := bounded.Call(probe, func(ctx context.Context) (string, error) {
			return w.q.rdb.Ping(ctx).Result()
		}); err != nil {
			w.log.WarnContext(ctx, "Redis does not answer; the worker starts anyway and fetches once it does",
				slog.Any(logkey.Error, err))
		} else {
			if w.clocker != nil {
				w.clocker.measure(probe) // before the first fetch uses the clock
			}
			// Listed by getWorkers once Start returns; before the fetcher
			// starts, so the lock keeper starts right after it.
			w.presence.register(probe)
			w.warnEviction(probe) // before register would, with the worker's attributes
			w.q.register(probe)
		}
		// Heard once Start returns (when Redis answers; else from when it does).
		w.canceller.subscribe(probe)
		w.fetchCtx, w.stopFetch = context.WithCancel(context.Background())
		w.jobsCtx, w.cancelJobs = context.WithCancelCause(context.Background())
		w.bgCtx, w.stopBG = context.WithCancel(context.Background())
		w.advances.start()
		w.fetchDone = make(chan struct{})
		w.forceFinish = make(chan struct{})
		w.forceCtx, w.forced = context.WithCancel(context.Background())
		w.started.Store(true)
		// Logged before the first fetch, so that no line about a job comes
		// before it.
		w.log.InfoContext(ctx, "worker started", slog.Int(logkey.Concurrency, w.opts.Concurrency))
		go w.fetchLoop()
		w.runBG(w.keeper.run)
		w.runBG(w.presence.run)
		w.runBG(w.canceller.run)
		w.runClockAndChecker()
	})
	return nil
}

// runBG runs f in a goroutine the worker owns: bgCtx ends it and Close
// waits for it (bgWG).
func (w *Worker) runBG(f func(context.Context)) {
	w.bgWG.Add(1)
	go func() { defer w.bgWG.Done(); f(w.bgCtx) }()
}

// runClockAndChecker starts the clock measurement and, unless
// SkipStalledCheck, the stalled checker: what every started worker runs,
// a manual one included.
func (w *Worker) runClockAndChecker() {
	if w.clocker != nil {
		w.runBG(w.clocker.run)
	}
	if !w.opts.SkipStalledCheck {
		w.runBG(w.checker.run)
	}
}

// closeWriteGrace is how long Close, once its context has ended and the
// running jobs are cancelled, keeps trying to write their results before it
// gives up on them.
const closeWriteGrace = 5 * time.Second

// Close stops the worker, in this order:
//
//  1. It stops fetching (waking the fetcher if it blocks on the marker).
//  2. It lets running jobs finish until ctx is done, then cancels their
//     contexts with cause ErrWorkerClosing; such jobs go back to wait without
//     spending an attempt. It still waits for every job goroutine to return,
//     and keeps their locks: a processor that ignores ctx and returns a value
//     later completes its job.
//  3. It writes every result. Give-up path: if results are still unwritten
//     closeWriteGrace (5s) after ctx ended and every processor returned
//     (Redis unreachable), it stops retrying them; those jobs stay active
//     until their locks expire, the stalled checker of any worker then moves
//     them back to wait, and Close returns an error saying so.
//  4. It waits for the goroutines that wrote the last results. A job
//     scheduler's next run that Redis did not take when its run started
//     (the worker goes on trying in the background) is tried once more now,
//     and on until ctx ends or closeWriteGrace has passed: the run may have
//     just completed, and a scheduler whose run completed without a next
//     run stops for good. Then it stops the lock keeper and the stalled
//     checker.
//
// Close waits for Redis only where a result must be written: when Redis does
// not answer (a network partition, a paused server), an idle worker's Close
// returns within about one read timeout of the client (a call in flight when
// it began runs out; closeWriteGrace more when a scheduler's next run is
// pending), and one with running jobs within ctx (or once the
// last processor ignoring its cancelled ctx returned), closeWriteGrace and
// about one read timeout more.
//
// Close waits for every processor to return, so a processor (or a hook)
// that calls Close must do so on a goroutine of its own (go w.Close(ctx)):
// called inline it waits for itself, for good.
//
// When Close returns, none of the worker's goroutines runs. Unless Close
// returned the give-up error, every result was written, or refused by Redis
// because the worker no longer owned the job (its lock was lost). Close is
// idempotent and safe on a worker that never started.
func (w *Worker) Close(ctx context.Context) error {
	if w == nil || w.q == nil {
		return errZeroValue("Worker", "NewWorker")
	}
	if ctx == nil {
		return errNilContext
	}
	w.closeOnce.Do(func() {
		w.pauser.mu.Lock() // see Pause
		w.closing.Store(true)
		w.pauser.mu.Unlock()
		w.markClosed()
		if !w.started.Load() {
			w.startOnce.Do(func() {}) // a later Start must not run
			return
		}
		if w.closeBegun != nil {
			w.closeBegun()
		}
		// 1. Stop fetching, and end the fetcher's wait if it blocks on the
		// marker: on its named connection by closing it, else by a wake-up
		// through Redis. From here on only the writers start jobs, and only
		// in the slots of jobs they finish (see inflight).
		// The wake-up and the wake key's delete share one wakeTimeout, and
		// go on while the rest shuts down: when Redis is gone they would
		// wait it out one after the other, and before the rest, while a
		// fetcher that was retrying a failed wait stops without them.
		wakeCtx, endWake := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
		defer endWake()
		w.stopFetch()
		woken := make(chan struct{})
		if w.presence.interrupt() {
			close(woken)
		} else {
			go func() {
				defer close(woken)
				w.wakeWithin(wakeCtx)
			}()
		}
		<-w.fetchDone
		w.disarmWake()
		wakeKeyGone := make(chan struct{})
		go func() {
			defer close(wakeKeyGone)
			<-woken
			w.shutWakes() // every wake-up is written before the delete
			_, _ = bounded.Call(wakeCtx, func(ctx context.Context) (int64, error) {
				return w.q.rdb.Del(ctx, w.q.k.WorkerWake(w.id)).Result()
			})
		}()
		defer func() { <-wakeKeyGone }()

		// 2. Let running jobs finish until ctx ends, then cancel them.
		if !w.jobs.drain(ctx) {
			w.log.WarnContext(ctx, "close deadline passed: cancelling running jobs", slog.Int(logkey.Count, w.jobs.count()))
			w.cancelJobs(ErrWorkerClosing)
			if !w.drainWrites() {
				// Give-up path: stop retrying the results that cannot be
				// written; the stalled checker recovers those jobs.
				close(w.forceFinish)
				w.forced()
				w.jobs.drain(context.Background())
				w.closeErr = fmt.Errorf("close worker for queue %q: some results were not written; the stalled checker will recover those jobs", w.q.name)
			}
		}

		// 3. Every result is written (or given up): wait for the goroutines
		// that wrote the last ones to step back, and stop the job goroutines.
		w.waitCarriers()
		w.runners.stop()

		// 4. A job scheduler's next run Redis did not take in time is tried
		// once more now, and until ctx ends: its run may have just
		// completed with the results above, and a run completed without a
		// next run stops its scheduler for good.
		w.advances.finish(ctx)

		// 5. Nothing runs any more: stop the lock keeper and stalled checker.
		w.stopBG()
		w.bgWG.Wait()
		w.forced()
		w.cancelJobs(ErrWorkerClosing)
		w.log.Info("worker closed")
	})
	return w.closeErr
}

// drainWrites waits, once the running jobs are cancelled, until no job is
// in flight, and reports whether none is. A processor that ignores its ctx
// is waited for, however long it runs (as BullMQ's close() waits for it):
// its result can still be written, and giving it up would leave the job
// active, locked, until the stalled checker ran it again, though Redis
// answered all along. Only the writes are bounded: false once results
// stayed unwritten for closeWriteGrace after the last processor returned
// (Redis unreachable).
func (w *Worker) drainWrites() bool {
	// The grace starts over until a round begins with every processor
	// returned.
	sawRunning := w.jobs.anyRunning()
	for {
		grace, cancel := context.WithTimeout(context.Background(), closeWriteGrace)
		drained := w.jobs.drain(grace)
		cancel()
		if drained {
			return true
		}
		running := w.jobs.anyRunning()
		if !running && !sawRunning {
			return false
		}
		if running {
			w.log.Warn("close: a cancelled job's processor has not returned; waiting for it", slog.Int(logkey.Count, w.jobs.count()))
		}
		sawRunning = running
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

// loopCall runs fn, a call of the worker's own loops that Close ends by
// cancelling ctx (the fetcher's take, a result write, a job scheduler's
// advance). go-redis ends a call in flight at its own timeouts, and at a
// deadline only with ContextTimeoutEnabled, never at a cancel, so the call
// is sent inline when the client's timeouts end it first (a goroutine per
// call costs the hot path: see writeResults), and through bounded.Call
// otherwise (bounded.Needed): a deadline that comes first, or a client
// with its timeouts switched off (ReadTimeout -1), where nothing else would
// end a call to a Redis that does not answer, and Close would wait for it
// as long as that lasts.
func loopCall[T any](w *Worker, ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	if !bounded.Needed(ctx, w.q.callBudget) {
		return fn(ctx)
	}
	return bounded.Call(ctx, fn)
}

// retryDelay is the pause before the attempt-th retry of a failed Redis
// call: 100 ms doubling to 3 s.
func retryDelay(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt, 6)
	return min(d, 3*time.Second)
}

// sleepCtx waits d, or less if ctx ends first; it reports whether it slept
// the whole time.
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
