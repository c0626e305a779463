package drover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/scripts"
)

// Job is one job as stored in Redis: BullMQ's job hash, decoded.
//
// A Job returned by GetJob is a snapshot; its methods act on the stored job
// and do not refresh the fields. A Job handed to a processor belongs to that
// attempt: UpdateProgress and Log act on it while it runs.
//
// The zero Job, or one built by hand (in a unit test, say), belongs to no
// queue and is safe to use: UpdateProgress only sets Progress, Log only
// counts the line, GetState answers StateUnknown. To see what a processor
// logs and reports, run it with the drovertest package.
type Job struct {
	ID   string
	Name string
	// Data is the payload as JSON. Use DecodeData to unmarshal it.
	Data json.RawMessage
	// Opts are the options the job was added with (BullMQ's stored opts).
	Opts JobOptions
	// RawOpts is the stored opts JSON, with keys drover does not model.
	RawOpts   string
	Timestamp time.Time
	// Delay is the relative delay of the job's current or last delayed stay.
	Delay    time.Duration
	Priority int
	// AttemptsMade counts finished attempts (BullMQ's atm): failures,
	// retries and the final outcome. Stall recoveries do not count.
	AttemptsMade int
	// AttemptsStarted counts activations (BullMQ's ats), stalls included.
	AttemptsStarted int
	// StalledCount counts stall recoveries (BullMQ's stc).
	StalledCount int
	ProcessedOn  time.Time
	FinishedOn   time.Time
	// ReturnValue is the processor's result as JSON (completed jobs).
	ReturnValue json.RawMessage
	// FailedReason is the last failure's message.
	FailedReason string
	// Stacktrace lists the failure traces, oldest first, bounded by
	// Opts.StackTraceLimit.
	Stacktrace []string
	// Progress is the last progress value as JSON (nil = never reported).
	Progress json.RawMessage
	// ProcessedBy is the name of the worker that last took the job.
	ProcessedBy string
	// DeferredFailure, when set, makes the next worker fail the job without
	// running it (BullMQ's defa, set when the job stalled too often).
	DeferredFailure string
	// DeduplicationID is the deduplication id the job owns, if any.
	DeduplicationID string
	// JobSchedulerID names the job scheduler this job is a run of
	// (BullMQ's repeatJobKey), "" for other jobs.
	JobSchedulerID string
	// Timeline is drover's attempt history (nil for jobs only Node touched).
	Timeline []Attempt
	// Parent is the job this one is a flow child of (BullMQ's parentKey),
	// nil for other jobs.
	Parent *JobRef

	queue *Queue
	token string      // lock token while a worker runs this attempt
	run   *runningJob // the attempt, while a worker runs it
	lines int         // lines logged to a job of no queue
}

// Attempt is one run of a job, recorded by drover workers in the job hash
// (field "drover.attempts", ignored by Node BullMQ, deleted with the job).
// Its stored form is timelineRecord (timeline.go), not this type.
type Attempt struct {
	// N is the attempt number (AttemptsStarted at activation).
	N       int
	Start   time.Time
	End     time.Time
	Outcome Outcome
	Error   string
	Worker  string
	// Backoff is the delay before the next attempt (OutcomeRetryDelayed,
	// OutcomeDelayed).
	Backoff time.Duration
	// NextRun is when the next attempt is due (OutcomeRetryDelayed,
	// OutcomeDelayed).
	NextRun time.Time
	// Fresh, when set, makes this entry no attempt but the boundary a
	// retry with fresh attempts left (RetryOptions.ResetAttemptsMade or
	// ResetAttemptsStarted): the entries before it are the attempts of the
	// runs before the retry, numbered as they ran; those after it are
	// numbered from the counters the retry left (from 1 again when it reset
	// AttemptsStarted). Its N is AttemptsStarted before the retry, its
	// Outcome OutcomeUnknown, its End the retry's time.
	Fresh *FreshAttempts
}

// FreshAttempts is what a retry with fresh attempts reset (Attempt.Fresh).
type FreshAttempts struct {
	// From is the state the job was retried from (failed, completed, or
	// delayed for RetryNow).
	From JobState
	// Made, Started and Stalled are AttemptsMade, AttemptsStarted and
	// StalledCount before the retry; Traces is how many stack traces the
	// job had then (Job.Stacktrace's oldest are those runs' failures).
	Made, Started, Stalled, Traces int
	// ResetMade and ResetStarted say which counters went back to 0.
	ResetMade, ResetStarted bool
}

// DecodeData unmarshals the job's data into v.
func (j *Job) DecodeData(v any) error {
	if j == nil {
		return errNilJob
	}
	if err := json.Unmarshal(j.Data, v); err != nil {
		return fmt.Errorf("decode data of job %s: %w", j.ID, err)
	}
	return nil
}

// Queue is the queue the job belongs to; nil for the zero Job.
func (j *Job) Queue() *Queue {
	if j == nil {
		return nil
	}
	return j.queue
}

// stateErr is err as j.err makes it, and when the job was not in the
// state the operation needs, says which state it is in and which one the
// operation wanted ("job not in the expected state: it is waiting, not
// delayed"), read after the refusal.
func (j *Job) stateErr(ctx context.Context, op string, want string, err error) error {
	if errors.Is(err, ErrNotInState) && j.queue != nil {
		state, serr := j.queue.GetJobState(ctx, j.ID)
		if serr != nil {
			state = "unknown"
		}
		err = fmt.Errorf("%w: it is %s, not %s", err, state, want)
	}
	return j.err(op, err)
}

func (j *Job) err(op string, err error) error {
	if err == nil {
		return nil
	}
	e := &JobError{JobID: j.ID, Op: op, Err: err}
	if j.queue != nil {
		e.Queue = j.queue.name
	}
	return e
}

// storedIDErr refuses, before any I/O, a handle whose id names one of its
// queue's own keys rather than a job (keys.CheckStoredJobID): without it
// Queue.Job("meta").Remove deleted the queue's meta hash (its pause, global
// limits and events cap) and UpdateData wrote a data field into it, both
// reporting success, as Node's calls do. It is nil for the zero Job.
func (j *Job) storedIDErr(op string) error {
	if j.queue == nil {
		return nil
	}
	return j.err(op, storedIDError(j.ID))
}

// storedIDError is keys.CheckStoredJobID's refusal as ErrInvalidJobID.
func storedIDError(id string) error {
	if err := keys.CheckStoredJobID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJobID, err)
	}
	return nil
}

// UpdateProgress stores v (JSON-encoded) as the job's progress and emits a
// progress event.
func (j *Job) UpdateProgress(ctx context.Context, v any) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("update progress of"); err != nil {
		return err
	}
	b, err := jobcodec.EncodeData(v)
	if v == nil {
		b = []byte("null")
	}
	if err != nil {
		return j.err("update progress of", fmt.Errorf("%w: %w", ErrInvalidData, err))
	}
	if j.queue == nil {
		j.Progress = b
		return nil
	}
	if err := scripts.UpdateProgress(ctx, j.queue.jobWrites(), j.queue.k, j.queue.call(), j.ID, string(b)); err != nil {
		return j.err("update progress of", err)
	}
	j.Progress = b
	return nil
}

// UpdateData replaces the job's data with v (JSON-encoded by the encoder
// Queue.Add uses), as BullMQ's job.updateData does: in any state, with no
// event and no SizeLimit check. A job that no longer exists is an error
// (errors.Is ErrJobNotFound).
func (j *Job) UpdateData(ctx context.Context, v any) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("update data of"); err != nil {
		return err
	}
	b, err := jobcodec.EncodeData(v)
	if v == nil {
		b, err = []byte("null"), nil
	}
	if err != nil {
		return j.err("update data of", fmt.Errorf("%w: %w", ErrInvalidData, err))
	}
	if j.queue != nil {
		if err := scripts.UpdateData(ctx, j.queue.jobWrites(), j.queue.k, j.ID, string(b)); err != nil {
			return j.err("update data of", err)
		}
	}
	j.Data = b
	return nil
}

// Log appends a line to the job's log, bounded by Opts.KeepLogs. It returns
// the number of lines the log now holds.
func (j *Job) Log(ctx context.Context, line string) (int, error) {
	if j == nil {
		return 0, errNilJob
	}
	if err := j.storedIDErr("log to"); err != nil {
		return 0, err
	}
	if j.queue == nil {
		j.lines++
		return j.lines, nil
	}
	n, err := scripts.AddLog(ctx, j.queue.jobWrites(), j.queue.k, j.queue.call(), j.ID, line, j.Opts.KeepLogs)
	return int(n), j.err("log to", err)
}

// ClearLogs deletes the job's log lines but the newest keep (BullMQ's
// clearLogs(keepLogs)); keep 0 deletes them all. Like BullMQ's it is one
// Redis command and does not check that the job exists.
func (j *Job) ClearLogs(ctx context.Context, keep int) error {
	if j == nil {
		return errNilJob
	}
	if err := j.storedIDErr("clear logs of"); err != nil {
		return err
	}
	if keep < 0 {
		return j.err("clear logs of", optionError("lines to keep must not be negative, got %d", keep))
	}
	if j.queue == nil {
		j.lines = min(j.lines, keep)
		return nil
	}
	if err := j.queue.check(ctx); err != nil {
		return err
	}
	key := j.queue.k.Logs(j.ID)
	var err error
	if keep == 0 {
		err = j.queue.jobWrites().Do(ctx, "del", key).Err()
	} else {
		err = j.queue.jobWrites().Do(ctx, "ltrim", key, -keep, -1).Err()
	}
	return j.err("clear logs of", err)
}

// GetState reads the job's current state.
func (j *Job) GetState(ctx context.Context) (JobState, error) {
	if j == nil {
		return "", errNilJob
	}
	if j.queue == nil {
		return StateUnknown, nil
	}
	return j.queue.GetJobState(ctx, j.ID)
}

// fromRecord builds a Job from a decoded hash.
func (q *Queue) fromRecord(r *jobcodec.Record) *Job {
	j := &Job{
		ID:              r.ID,
		Name:            r.Name,
		Data:            r.Data,
		RawOpts:         r.RawOpts,
		Opts:            optsFromStored(&r.Opts),
		Timestamp:       msTime(r.Timestamp),
		Delay:           msDuration(r.Delay),
		Priority:        int(r.Priority),
		AttemptsMade:    int(r.AttemptsMade),
		AttemptsStarted: int(r.AttemptsStarted),
		StalledCount:    int(r.StalledCounter),
		ProcessedOn:     msTime(r.ProcessedOn),
		FinishedOn:      msTime(r.FinishedOn),
		ReturnValue:     r.ReturnValue,
		FailedReason:    r.FailedReason,
		Stacktrace:      r.Stacktrace,
		Progress:        r.Progress,
		ProcessedBy:     r.ProcessedBy,
		DeferredFailure: r.DeferredFailure,
		DeduplicationID: r.DedupID,
		JobSchedulerID:  r.RepeatJobKey,
		queue:           q,
	}
	if r.Timeline != "" {
		j.Timeline = decodeTimeline(r.Timeline)
	}
	if r.ParentKey != "" {
		if ref, err := ParseJobKey(r.ParentKey); err == nil {
			j.Parent = &ref
		}
	}
	return j
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
