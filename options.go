package drover

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
)

// Defaults. Each option's doc names the one it uses.
const (
	PrefixDefault          = keys.DefaultPrefix
	LockDurationDefault    = 30 * time.Second
	StalledIntervalDefault = 30 * time.Second
	MaxStalledCountDefault = 1
	ConcurrencyDefault     = 1
	DrainDelayDefault      = 5 * time.Second
	// MaxRateLimitWaitDefault bounds one wait of a worker for the rate
	// limiter, as BullMQ's maximumRateLimitDelay default does.
	MaxRateLimitWaitDefault = 30 * time.Second
	// ClockCheckIntervalDefault is how often a worker measures its clock's
	// offset to Redis TIME.
	ClockCheckIntervalDefault = time.Minute
	// ClockSkewWarningDefault is the offset to Redis TIME past which a
	// worker logs a warning.
	ClockSkewWarningDefault = time.Second
	// StackTraceLimitDefault bounds the failure traces a job keeps when its
	// StackTraceLimit is 0. BullMQ keeps them all; drover keeps the newest 10
	// so a job that fails for days does not grow without bound.
	StackTraceLimitDefault = 10
	// MaxPriority is BullMQ's highest priority value (2^21 - 1).
	MaxPriority = 1<<21 - 1
	// AddBulkChunkDefault is how many jobs AddBulk sends per script call.
	AddBulkChunkDefault = 500
	// AddRetryWindowDefault is how long Redis remembers an add call's reply
	// so that a client retry of the call is answered, not run again.
	AddRetryWindowDefault = time.Minute
)

// Backoff kinds BullMQ knows. Any other name refers to a custom strategy
// registered in WorkerOptions.BackoffStrategies.
const (
	BackoffFixed       = "fixed"
	BackoffExponential = "exponential"
)

// Backoff says how long to wait before retrying a failed job.
type Backoff struct {
	// Type is BackoffFixed, BackoffExponential, or the name of a custom
	// strategy. Required.
	Type string
	// Delay is the base delay: the whole delay for fixed, the first retry's
	// delay for exponential (doubling per attempt). Stored in ms.
	Delay time.Duration
	// Jitter in [0, 1] randomises the delay down by up to that fraction:
	// the delay is drawn uniformly from [delay*(1-Jitter), delay). 0 = none.
	Jitter float64
}

// Retention says which finished jobs to keep (BullMQ's removeOnComplete /
// removeOnFail). A nil *Retention keeps every job.
type Retention struct {
	// Remove drops the job as soon as it finishes (BullMQ's `true`, or a
	// count of 0).
	Remove bool
	// Count keeps only the newest Count finished jobs of the state. 0 = no bound.
	Count int
	// Age drops finished jobs older than Age. 0 = no bound. It is stored in
	// seconds, as BullMQ's age; a part of a second is kept as a fraction
	// (1.5), to the millisecond, as Node stores one; an age under 1ms is
	// refused.
	Age time.Duration
	// Limit caps how many jobs one finish removes by age. 0 = BullMQ's 1000.
	Limit int
	// Object stores the option in BullMQ's object form ({"count":3}, and
	// {"count":0} for Remove) rather than the short one (3, true). Both
	// mean the same to BullMQ and drover; set it to store what a Node
	// producer passing an object stores. Age or Limit imply it.
	// ParseJobOptions and Job.Opts set it for an object.
	Object bool

	// form is the stored shape the value was read from (ParseJobOptions,
	// Job.Opts) when the fields above would write it differently, e.g. a
	// count of 0 or -1 given as a number, or an age or limit of 0: it is
	// stored back as read for as long as the fields still say the same.
	form *jobcodec.Keep
}

// Deduplication makes adds with the same ID collapse into one job
// (BullMQ's deduplication option; see docs for the three modes).
type Deduplication struct {
	// ID identifies the operation. Required.
	ID string
	// TTL bounds how long the ID stays taken (throttle mode). 0 = until the
	// job finishes or is removed (simple mode). Stored in ms: a TTL under
	// 1ms is refused.
	TTL time.Duration
	// Extend restarts the TTL on every duplicate add.
	Extend bool
	// Replace makes a later add replace a still-delayed earlier job
	// (debounce mode).
	Replace bool
	// KeepLastIfActive keeps an add made while the owning job runs: the
	// newest such add is stored (BullMQ's dn:<id> hash) and queued as a new
	// job when the owner completes or fails, so at most one job per ID runs
	// and one waits. TTL then does not expire the ID; it is freed when its
	// job finishes. BullMQ 6.7's keepLastIfActive.
	KeepLastIfActive bool
	// Reschedule moves a still-delayed owner's run when an add is
	// swallowed: the owner becomes due at the swallowed add's time plus its
	// Delay (at once when it has none), so a burst of adds runs once, after
	// the last one, as BullMQ 6.7's reschedule. An add swallowed by an owner
	// that is not delayed changes nothing. Replace takes precedence: with
	// Replace the later add replaces the delayed owner instead.
	Reschedule bool
}

// flags are the deduplication flags addJobs and addFlow take (see
// include/dedup.lua): "r" replace, "e" extend, "k" keepLastIfActive, "s"
// reschedule.
func (d *Deduplication) flags() string {
	f := ""
	if d.Replace {
		f += "r"
	}
	if d.Extend {
		f += "e"
	}
	if d.KeepLastIfActive {
		f += "k"
	}
	if d.Reschedule {
		f += "s"
	}
	return f
}

// JobOptions are per-job options. Nil means defaults; zero fields mean
// "not set" and fall back to QueueOptions.DefaultJobOptions.
//
// The defaults are BullMQ's, which Node producers and workers on the same
// queue rely on: a job runs once (Attempts 0 or 1: a failure is final), and
// a job given more attempts is retried at once unless it has a Backoff.
// River (25 attempts) and asynq (25 retries) both retry with an
// exponential backoff by default; to get that here, set Attempts and
// Backoff on the job or once in QueueOptions.DefaultJobOptions.
type JobOptions struct {
	// JobID is a custom id. BullMQ's rules apply: not empty, not an integer,
	// not "0" or "0:…", no ':', not "." or ".." (see ValidateJobID). Adding an id that exists
	// returns the existing job with Outcome AddDuplicate. "" = next counter.
	JobID string
	// Delay postpones the job. Must not be negative. Stored in ms.
	Delay time.Duration
	// RunAt makes the job due at a point in time rather than after a Delay
	// (asynq's ProcessAt, River's ScheduledAt). It is stored as BullMQ
	// stores every delayed job, the job's timestamp plus a delay, the delay
	// being RunAt minus the timestamp, so Node BullMQ, the CLI and Job.Opts
	// read it back as Delay. A RunAt at or before the timestamp queues the
	// job at once. It is read on Redis's clock, as the timestamp is (see
	// QueueOptions.ClockCheckInterval).
	//
	// A job sets Delay or RunAt, not both (an error naming both); one it
	// sets replaces the other's default, so a job's RunAt overrides
	// DefaultJobOptions.Delay (and a JobArgsWithOptions kind's Delay).
	// DefaultJobOptions, scheduler templates and a flow job with children
	// (whose delay counts from when its children finish) must not set it.
	// Zero = none.
	RunAt time.Time
	// Priority orders ready jobs: 1 is the highest, MaxPriority the lowest,
	// 0 means none (such jobs run before any prioritized job).
	Priority int
	// LIFO puts the job at the front of the wait list.
	LIFO bool
	// Attempts is how many times the job may run before it fails for good.
	// 0 or 1 = once, BullMQ's default (River's and asynq's is 25).
	Attempts int
	// Backoff spaces the retries. nil = retry at once, BullMQ's default
	// (River and asynq back off exponentially by default).
	Backoff *Backoff
	// RemoveOnComplete and RemoveOnFail bound the finished jobs kept.
	// nil = keep all (or the worker's default).
	RemoveOnComplete *Retention
	RemoveOnFail     *Retention
	// Timestamp overrides the creation time. Zero = now.
	Timestamp time.Time
	// StackTraceLimit bounds the failure traces kept. 0 =
	// StackTraceLimitDefault; negative keeps none.
	StackTraceLimit int
	// KeepLogs bounds the job's log lines (newest kept). 0 = no bound.
	KeepLogs int
	// SizeLimit refuses data whose JSON is larger, in bytes. 0 = no limit.
	SizeLimit int
	// Deduplication collapses adds with the same ID. nil = none.
	Deduplication *Deduplication
	// ParentPolicy says what this job's final failure does to its flow
	// parent (BullMQ's failParentOnFailure, continueParentOnFailure,
	// ignoreDependencyOnFailure, removeDependencyOnFailure). Only a job
	// added as a flow child has a parent. Default ParentWaits.
	ParentPolicy ParentPolicy
	// Timeout bounds each attempt: a drover worker cancels the processor's
	// context at the deadline (cause ErrJobTimedOut) and the attempt fails,
	// retried per Attempts and Backoff. Stored in ms under the opts key
	// "timeout", which Node BullMQ keeps but does not apply (a Node worker
	// runs the job without a limit). 0 = WorkerOptions.JobTimeout.
	Timeout time.Duration
	// Telemetry carries a trace context from the producer to the worker, in
	// the job, where BullMQ's telemetry keeps it. nil = none. drover stores
	// and returns it but never reads it: the droverotel package fills it
	// at add time and continues the trace when a worker takes the job.
	Telemetry *Telemetry
}

// Telemetry is BullMQ's telemetry job option: the producer's trace context,
// serialized, so the worker's span continues the producer's trace, whichever
// of Node BullMQ and drover added or runs the job.
type Telemetry struct {
	// Metadata is the serialized context (stored opts "tm"). BullMQ's
	// OpenTelemetry adapter, bullmq-otel, and droverotel write a JSON object
	// of text-map propagation headers, e.g.
	// {"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}.
	Metadata string
	// OmitContext tells a telemetry-enabled producer not to attach its
	// context to this job (stored opts "omc").
	OmitContext bool
}

// merged returns o with unset fields taken from d. Neither is modified.
func (o *JobOptions) merged(d *JobOptions) JobOptions {
	var r JobOptions
	if o != nil {
		r = *o
	}
	if d == nil {
		return r
	}
	// Delay and RunAt are one choice, the schedule: a job that sets
	// either keeps it whole, one that sets neither takes d's.
	if r.Delay == 0 && r.RunAt.IsZero() {
		r.Delay, r.RunAt = d.Delay, d.RunAt
	}
	r.Priority = cmp.Or(r.Priority, d.Priority)
	r.LIFO = r.LIFO || d.LIFO
	r.Attempts = cmp.Or(r.Attempts, d.Attempts)
	r.Backoff = cmp.Or(r.Backoff, d.Backoff)
	r.RemoveOnComplete = cmp.Or(r.RemoveOnComplete, d.RemoveOnComplete)
	r.RemoveOnFail = cmp.Or(r.RemoveOnFail, d.RemoveOnFail)
	r.StackTraceLimit = cmp.Or(r.StackTraceLimit, d.StackTraceLimit)
	r.KeepLogs = cmp.Or(r.KeepLogs, d.KeepLogs)
	r.SizeLimit = cmp.Or(r.SizeLimit, d.SizeLimit)
	r.Telemetry = cmp.Or(r.Telemetry, d.Telemetry)
	r.ParentPolicy = cmp.Or(r.ParentPolicy, d.ParentPolicy)
	r.Timeout = cmp.Or(r.Timeout, d.Timeout)
	return r
}

// scheduledFrom returns o with RunAt turned into the Delay BullMQ stores
// for a job whose timestamp is ts: the time from ts to RunAt, 0 when RunAt
// is not after ts. Without RunAt it returns o as is.
func (o JobOptions) scheduledFrom(ts time.Time) JobOptions {
	if o.RunAt.IsZero() {
		return o
	}
	o.Delay = max(time.Duration(o.RunAt.UnixMilli()-ts.UnixMilli())*time.Millisecond, 0)
	o.RunAt = time.Time{}
	return o
}

// checkDefaultJobOptions refuses what a default for many jobs cannot set:
// a job's identity and its absolute run time. where names the option.
func checkDefaultJobOptions(where string, d *JobOptions) error {
	if d.JobID != "" || d.Deduplication != nil || !d.RunAt.IsZero() {
		return optionError("%s must not set JobID, Deduplication or RunAt", where)
	}
	if err := d.validate(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// Validate checks every field and returns an error naming the first bad one
// and its value (errors.Is ErrInvalidOption or ErrInvalidJobID). Add runs it;
// it is exported for code that stores options to add later, such as an
// outbox. A Backoff.Type other than fixed/exponential is checked by Add
// against QueueOptions.BackoffTypes, not here.
func (o *JobOptions) Validate() error { return o.validate() }

// validate checks every field and names the first bad one.
func (o *JobOptions) validate() error {
	if o.JobID != "" {
		if err := keys.ValidateJobID(o.JobID); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidJobID, err)
		}
	}
	switch {
	case o.Delay < 0:
		return optionError("JobOptions.Delay must not be negative, got %s", o.Delay)
	case o.Delay != 0 && !o.RunAt.IsZero():
		return optionError("JobOptions.Delay and JobOptions.RunAt must not both be set, got Delay %s and RunAt %s", o.Delay, o.RunAt.Format(time.RFC3339Nano))
	case o.Priority < 0 || o.Priority > MaxPriority:
		return optionError("JobOptions.Priority must be between 0 and %d, got %d", MaxPriority, o.Priority)
	case o.Attempts < 0:
		return optionError("JobOptions.Attempts must not be negative, got %d", o.Attempts)
	case o.KeepLogs < 0:
		return optionError("JobOptions.KeepLogs must not be negative, got %d", o.KeepLogs)
	case o.SizeLimit < 0:
		return optionError("JobOptions.SizeLimit must not be negative, got %d", o.SizeLimit)
	case o.ParentPolicy > RemoveDependency:
		return optionError("JobOptions.ParentPolicy must be one of the ParentPolicy constants, got %d", uint8(o.ParentPolicy))
	case o.Timeout < 0:
		return optionError("JobOptions.Timeout must not be negative, got %s", o.Timeout)
	case o.Timeout > 0 && o.Timeout < time.Millisecond:
		return optionError("JobOptions.Timeout must be at least 1ms (it is stored in ms), got %s", o.Timeout)
	}
	// Upper bounds: what BullMQ stores exactly (see jobcodec.MaxCount and
	// MaxMillis), so no value is rounded or wraps on its way to Redis.
	for name, n := range map[string]int{"Attempts": o.Attempts, "KeepLogs": o.KeepLogs, "SizeLimit": o.SizeLimit, "StackTraceLimit": o.StackTraceLimit} {
		if int64(n) > jobcodec.MaxCount {
			return optionError("JobOptions.%s must be at most %d, got %d", name, jobcodec.MaxCount, n)
		}
	}
	for name, ts := range map[string]time.Time{"Timestamp": o.Timestamp, "RunAt": o.RunAt} {
		if !ts.IsZero() && (ts.UnixMilli() < 0 || ts.UnixMilli() > jobcodec.MaxMillis) {
			return optionError("JobOptions.%s must be between the Unix epoch and %d ms after it, got %s", name, jobcodec.MaxMillis, ts)
		}
	}
	if b := o.Backoff; b != nil {
		switch {
		case b.Type == "":
			return optionError("JobOptions.Backoff.Type must be %q, %q or a custom strategy name, got \"\"", BackoffFixed, BackoffExponential)
		case b.Delay < 0:
			return optionError("JobOptions.Backoff.Delay must not be negative, got %s", b.Delay)
		case b.Jitter < 0 || b.Jitter > 1 || math.IsNaN(b.Jitter):
			return optionError("JobOptions.Backoff.Jitter must be between 0 and 1, got %v", b.Jitter)
		}
	}
	for name, r := range map[string]*Retention{"JobOptions.RemoveOnComplete": o.RemoveOnComplete, "JobOptions.RemoveOnFail": o.RemoveOnFail} {
		if err := r.check(name); err != nil {
			return err
		}
	}
	if d := o.Deduplication; d != nil {
		if d.ID == "" {
			return optionError("JobOptions.Deduplication.ID must not be empty")
		}
		if d.TTL < 0 {
			return optionError("JobOptions.Deduplication.TTL must not be negative, got %s", d.TTL)
		}
		// Stored in ms: a shorter TTL would be stored as none, which holds
		// the id until the job finishes, the opposite of what was asked.
		if d.TTL > 0 && d.TTL < time.Millisecond {
			return optionError("JobOptions.Deduplication.TTL must be at least 1ms (it is stored in ms), got %s", d.TTL)
		}
	}
	return nil
}

// check refuses a Retention that cannot be stored as given; name is the
// option's, for the error. A nil one is fine.
func (r *Retention) check(name string) error {
	if r == nil {
		return nil
	}
	if r.Count < 0 || r.Age < 0 || r.Limit < 0 {
		return optionError("%s fields must not be negative, got %+v", name, *r)
	}
	if int64(r.Count) > jobcodec.MaxCount || int64(r.Limit) > jobcodec.MaxCount {
		return optionError("%s.Count and Limit must be at most %d, got %+v", name, jobcodec.MaxCount, *r)
	}
	// Stored in seconds, read back up to MaxMillis/1000 of them: a longer
	// age would make the job unreadable.
	if maxAge := time.Duration(jobcodec.MaxMillis/1000) * time.Second; r.Age > maxAge {
		return optionError("%s.Age must be at most %s, got %s", name, maxAge, r.Age)
	}
	// Stored to the ms: a shorter age would be stored as none, which keeps
	// every job, the opposite of what was asked.
	if r.Age > 0 && r.Age < time.Millisecond {
		return optionError("%s.Age must be at least 1ms (it is stored in ms), got %s", name, r.Age)
	}
	return nil
}

// QueueOptions configure a Queue. Nil means defaults.
type QueueOptions struct {
	// Prefix of every key. Defaults to PrefixDefault ("bull"). On a Redis
	// Cluster the prefix or the queue name must carry a {hash tag}.
	Prefix string
	// DefaultJobOptions fill the fields a job's own options leave unset.
	DefaultJobOptions *JobOptions
	// Logger receives warnings. Defaults to warnings and errors, as text,
	// on stderr; slog.New(slog.DiscardHandler) silences it.
	Logger *slog.Logger
	// AddBulkChunk is how many jobs AddBulk sends per script call.
	// Defaults to AddBulkChunkDefault.
	AddBulkChunk int
	// AddRetryWindow is how long Redis keeps each add call's reply (a key
	// "<prefix>:<queue>:add:<token>" of a few dozen bytes per call). An add
	// call whose reply is lost (connection reset, read timeout, Redis
	// paused) is sent again by drover itself, with the same token (go-redis's
	// own retries are off for adds): up to 3 times over about 0.7 s, within
	// half the window, or until the caller's ctx ends. A copy that runs
	// within the window gets the first run's answer and stores nothing, so
	// every Add and AddBulk chunk is stored exactly once per call, and an Add
	// during a brief fault returns its real outcome rather than an error
	// for a job that may have been stored. No send of a call starts after
	// three quarters of the window. A CancelJob that fails a job not
	// running is recorded the same way, so go-redis's resend of it is
	// answered with its success rather than "the job is failed"; so are
	// the admin writes, Job.Log, Job.UpdateProgress, the
	// RemoveDeduplicationKey calls, Pause, Resume, RemoveRateLimitKey and
	// RemoveOrphanedJobs' removals (a key per call, for the window: a resend
	// neither appends the log line nor writes the progress event again).
	//
	// Defaults to AddRetryWindowDefault (1 minute). Must be at least 1ms.
	AddRetryWindow time.Duration
	// BackoffTypes names the custom backoff strategies this queue's workers
	// register (WorkerOptions.BackoffStrategies). Add, AddBulk and
	// UpsertJobScheduler (a template's) refuse a Backoff.Type that is
	// neither fixed, exponential nor listed here, so a typo fails at add
	// time instead of when the job first fails.
	BackoffTypes []string
	// AddMiddleware runs around every Add and AddBulk, first = outermost
	// (see AddMiddleware). None by default.
	AddMiddleware []AddMiddleware
	// ClockCheckInterval is how often the queue measures how far this
	// machine's clock is from the Redis server's (TIME, the best of 3 round
	// trips), as WorkerOptions.ClockCheckInterval does for a worker. The
	// queue has no goroutine: the first call that needs the time once the
	// last measurement is older than this measures it. Add and AddBulk then
	// stamp a job's timestamp (and so a delayed job's due time) by Redis's
	// clock, as the workers that run it read it. Negative turns the
	// correction off (BullMQ's behaviour: the producer's clock as is).
	//
	// Defaults to ClockCheckIntervalDefault (1 minute).
	ClockCheckInterval time.Duration
	// ClockSkewWarning is the offset to Redis TIME past which each
	// measurement logs a warning. Defaults to ClockSkewWarningDefault (1s).
	ClockSkewWarning time.Duration
}

func (o *QueueOptions) withDefaults() QueueOptions {
	var r QueueOptions
	if o != nil {
		r = *o
	}
	r.Prefix = cmp.Or(r.Prefix, PrefixDefault)
	if r.Logger == nil {
		r.Logger = defaultLogger()
	}
	r.AddBulkChunk = cmp.Or(r.AddBulkChunk, AddBulkChunkDefault)
	r.AddRetryWindow = cmp.Or(r.AddRetryWindow, AddRetryWindowDefault)
	r.ClockCheckInterval = cmp.Or(r.ClockCheckInterval, ClockCheckIntervalDefault)
	r.ClockSkewWarning = cmp.Or(r.ClockSkewWarning, ClockSkewWarningDefault)
	return r
}
