// Package logkey holds the slog attribute keys every drover package uses, so
// logs from the worker, the idempotency kit and the dashboard join up.
package logkey

const (
	Queue    = "queue"
	JobID    = "job_id"
	JobName  = "job_name"
	OpKey    = "op_key"
	Attempt  = "attempt"
	PID      = "pid"
	Worker   = "worker"
	Error    = "error"
	Duration = "duration"
	Count    = "count"
	Reason   = "reason"
	Outcome  = "outcome"
	// ErrorClass sorts an attempt's error: panic, unrecoverable,
	// invalid_data, lock_lost, deadline, ... (drover.errorClass).
	ErrorClass   = "error_class"
	ClientName   = "client_name"
	Concurrency  = "concurrency"
	StalledCount = "stalled_count"
	Offset       = "offset"
	RoundTrip    = "round_trip"
	Threshold    = "threshold"
	Next         = "next"
	Scheduler    = "scheduler"
	User         = "user"
	Role         = "role"
	Action       = "action"
	Detail       = "detail"
	Jobs         = "jobs"
	Remote       = "remote"
	Channel      = "channel"
	Token        = "token"
	// DoNotWaitActive: a worker paused without waiting for its jobs.
	DoNotWaitActive = "do_not_wait_active"
	// The outbox relay's: a row's id, a batch's new and duplicate jobs,
	// the wait before a retry.
	OutboxID   = "outbox_id"
	Created    = "created"
	Duplicates = "duplicates"
	Delay      = "delay"
	// Suppressed counts the repeats of a line held back before it
	// (internal/lognote).
	Suppressed = "suppressed"
	// MaxmemoryPolicy is Redis's maxmemory-policy, when it may evict keys.
	MaxmemoryPolicy = "maxmemory_policy"
)
