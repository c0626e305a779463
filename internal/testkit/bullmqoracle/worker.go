package bullmqoracle

import (
	"encoding/json"
	"time"
)

// Behavior scripts what a Node worker's processor does with each job. Build
// one with the constructors below; they mirror runBehavior in node/lib.mjs.
type Behavior struct {
	// Kind is one of return, echo, fail, failTimes, unrecoverable, sleep,
	// progress, log, moveToDelayed, rateLimit, sequence, fromData, waitKey, activeSpan.
	Kind string `json:"kind"`
	// Value is the job's result (return, failTimes once it succeeds, sleep)
	// or the progress value (progress).
	Value any `json:"value,omitempty"`
	// Times is how many attempts fail (failTimes, compared with
	// attemptsMade) or how many starts move the job to delayed
	// (moveToDelayed, compared with attemptsStarted). Zero means none.
	Times int `json:"times"`
	// Message is the thrown error's message (fail, failTimes, unrecoverable).
	Message string `json:"message,omitempty"`
	// MS is the sleep (sleep), the delay (moveToDelayed) or the longest
	// wait (waitKey, 0: 20 s), in milliseconds.
	MS int64 `json:"ms,omitempty"`
	// Key is the full Redis key whose existence ends the wait (waitKey).
	Key string `json:"key,omitempty"`
	// Line is the log line (log).
	Line string `json:"line,omitempty"`
	// Field names the job data field holding the behavior (fromData).
	Field string `json:"field,omitempty"`
	// Then runs after the effect of sleep, progress, log and moveToDelayed
	// (after the delayed starts are used up); without it the job completes
	// with undefined (sleep: with Value).
	Then *Behavior `json:"then,omitempty"`
	// Steps are run one per start of the job (sequence): the i-th start runs
	// Steps[i], the last step repeats.
	Steps []Behavior `json:"steps,omitempty"`
}

// Return completes every job with v (nil completes with undefined, stored
// by BullMQ as "null").
func Return(v any) Behavior { return Behavior{Kind: "return", Value: v} }

// Echo completes every job with its own data.
func Echo() Behavior { return Behavior{Kind: "echo"} }

// Fail throws Error(message) on every attempt.
func Fail(message string) Behavior { return Behavior{Kind: "fail", Message: message} }

// FailTimes throws Error(message) while the job's attemptsMade is below
// times, then completes with v.
func FailTimes(times int, message string, v any) Behavior {
	return Behavior{Kind: "failTimes", Times: times, Message: message, Value: v}
}

// Unrecoverable throws UnrecoverableError(message).
func Unrecoverable(message string) Behavior {
	return Behavior{Kind: "unrecoverable", Message: message}
}

// Sleep waits d, then completes with v.
func Sleep(d time.Duration, v any) Behavior {
	return Behavior{Kind: "sleep", MS: d.Milliseconds(), Value: v}
}

// SleepThen waits d, then runs then.
func SleepThen(d time.Duration, then Behavior) Behavior {
	return Behavior{Kind: "sleep", MS: d.Milliseconds(), Then: &then}
}

// Progress calls job.updateProgress(v), then runs then (nil: completes).
func Progress(v any, then *Behavior) Behavior {
	return Behavior{Kind: "progress", Value: v, Then: then}
}

// Log calls job.log(line), then runs then (nil: completes).
func Log(line string, then *Behavior) Behavior {
	return Behavior{Kind: "log", Line: line, Then: then}
}

// MoveToDelayed calls job.moveToDelayed(now+d) and throws DelayedError on
// the job's first times starts, then runs then (nil: completes).
func MoveToDelayed(d time.Duration, times int, then *Behavior) Behavior {
	return Behavior{Kind: "moveToDelayed", MS: d.Milliseconds(), Times: times, Then: then}
}

// RateLimited calls worker.rateLimit(d) and throws Worker.RateLimitError on
// the job's first times starts, then runs then (nil: completes).
func RateLimited(d time.Duration, times int, then *Behavior) Behavior {
	return Behavior{Kind: "rateLimit", MS: d.Milliseconds(), Times: times, Then: then}
}

// WaitKey holds each job until the Redis key key exists (a gate the test
// opens with SET), then runs then. The job stays active meanwhile.
func WaitKey(key string, then Behavior) Behavior {
	return Behavior{Kind: "waitKey", Key: key, Then: &then}
}

// Sequence runs steps[i] on the job's (i+1)-th start; the last step repeats.
func Sequence(steps ...Behavior) Behavior { return Behavior{Kind: "sequence", Steps: steps} }

// FromData runs the behavior stored in the job's data under field (default
// "behavior"), so one worker can do something different per job.
func FromData(field string) Behavior { return Behavior{Kind: "fromData", Field: field} }

// WorkerOptions configures a Node Worker started by Oracle.StartWorker or
// StartWorkerProcess. Zero values leave BullMQ's defaults.
type WorkerOptions struct {
	// ID names the worker in the driver (StopWorker, WorkerEvents). Required
	// by StartWorker; not sent to BullMQ.
	ID string
	// Name is the BullMQ worker name: stored in each job's pb field and in
	// the connection name.
	Name               string
	Concurrency        int
	LockDuration       time.Duration
	LockRenewTime      time.Duration
	StalledInterval    time.Duration
	MaxStalledCount    *int // nil: BullMQ default (1); 0 is meaningful
	MaxStartedAttempts *int
	// DrainDelay is how long the worker blocks on the marker when idle
	// (BullMQ takes seconds; sub-second values are passed as fractions).
	DrainDelay time.Duration
	// RemoveOnComplete and RemoveOnFail are passed to BullMQ as given; nil
	// keeps every job. At worker level BullMQ 6.7 only works with a KeepJobs
	// object such as map[string]any{"count": 0} (remove all) or
	// {"age": seconds, "count": n}: a bool or a number reaches the finish
	// script unconverted and makes it fail with a Lua error after it already
	// deleted the lock, leaving the job in active (observed). Per-job
	// removeOnComplete/removeOnFail opts do accept bool and number.
	RemoveOnComplete any
	RemoveOnFail     any
	SkipStalledCheck bool
	SkipLockRenewal  bool
	// Behavior is what the processor does with each job; the zero value
	// completes with undefined.
	Behavior Behavior
	// BackoffStrategy names a custom backoff strategy of node/lib.mjs used
	// for jobs whose backoff type is neither fixed nor exponential:
	// "linear100" (attemptsMade*100 ms), "stop" (-1, no retry), "zero" (0,
	// immediate retry), "minus5" (-5: a negative delay other than -1, which
	// BullMQ retries through the delayed set at once) or "byType" (picks one
	// of those by the job's backoff type).
	BackoffStrategy string
	// Telemetry turns on BullMQ's telemetry through bullmq-otel, recording
	// spans in the driver's in-memory exporter (Oracle.TelemetrySpans).
	Telemetry bool
	// Extra is merged last into the Worker options, for options not above.
	Extra map[string]any
	// Cluster makes a worker process (StartWorkerProcess) treat redisAddr
	// as a seed node of a Redis Cluster and connect with an ioredis Cluster
	// client. Not sent to BullMQ; Oracle.StartWorker ignores it (the driver's
	// connection follows Options.Cluster).
	Cluster bool
}

func (w WorkerOptions) spec() map[string]any {
	m := map[string]any{"workerId": w.ID, "behavior": w.Behavior}
	set := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	set("name", w.Name, w.Name != "")
	set("concurrency", w.Concurrency, w.Concurrency > 0)
	set("lockDuration", w.LockDuration.Milliseconds(), w.LockDuration > 0)
	set("lockRenewTime", w.LockRenewTime.Milliseconds(), w.LockRenewTime > 0)
	set("stalledInterval", w.StalledInterval.Milliseconds(), w.StalledInterval > 0)
	set("maxStalledCount", w.MaxStalledCount, w.MaxStalledCount != nil)
	set("maxStartedAttempts", w.MaxStartedAttempts, w.MaxStartedAttempts != nil)
	set("drainDelay", w.DrainDelay.Seconds(), w.DrainDelay > 0)
	set("removeOnComplete", w.RemoveOnComplete, w.RemoveOnComplete != nil)
	set("removeOnFail", w.RemoveOnFail, w.RemoveOnFail != nil)
	set("skipStalledCheck", true, w.SkipStalledCheck)
	set("skipLockRenewal", true, w.SkipLockRenewal)
	set("backoffStrategy", w.BackoffStrategy, w.BackoffStrategy != "")
	set("telemetry", true, w.Telemetry)
	set("extra", w.Extra, w.Extra != nil)
	return m
}

// WorkerEvent is one local event of a Node Worker (Oracle.WorkerEvents) or
// one line printed by a worker process (WorkerProcess).
type WorkerEvent struct {
	// Event is active, completed, failed, progress, stalled or error; a
	// worker process also prints ready (first) and closed (after SIGTERM).
	Event string `json:"event"`
	// Time is the worker's clock when the event fired, in ms.
	Time            int64           `json:"time"`
	JobID           string          `json:"jobId,omitempty"`
	Name            string          `json:"name,omitempty"`
	AttemptsMade    int64           `json:"attemptsMade"`
	AttemptsStarted int64           `json:"attemptsStarted"`
	ReturnValue     json.RawMessage `json:"returnvalue,omitempty"`
	FailedReason    string          `json:"failedReason,omitempty"`
	ErrorName       string          `json:"errorName,omitempty"`
	Progress        json.RawMessage `json:"progress,omitempty"`
	Prev            string          `json:"prev,omitempty"`
	Message         string          `json:"message,omitempty"`
	PID             int             `json:"pid,omitempty"`
}

// Ptr returns a pointer to v, for the optional WorkerOptions fields.
func Ptr[T any](v T) *T { return &v }
