package drover

// What a worker logs about each attempt: one line when it starts and one
// when its outcome is written, each with the fields an incident needs
// (queue, worker and pid come with the worker's logger) and never the
// job's data.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/lognote"
)

// The warnings an outage repeats, many times a second while Redis does not
// answer. A worker's and a queue's loggers write each at most once per
// lognote.Window; the next line written says how many were held back
// (logkey.Suppressed).
const (
	msgFetchFailed        = "fetch jobs failed"
	msgWriteFailed        = "write job results failed"
	msgSettleFailed       = "settle a call whose reply was lost failed"
	msgWaitFailed         = "wait for jobs failed"
	msgRenewFailed        = "renew job locks failed"
	msgStalledCheckFailed = "stalled check failed"
	msgLockLost           = "job lock lost: result not written"
	msgNotOwned           = "job result not written: the worker no longer owns the job"
	msgAdvanceFailed      = "advance job scheduler failed; retrying"
	msgClockFailed        = "measure clock offset to Redis failed; keeping the last one"
	msgAddResent          = "add call failed; sending it again (it is stored once)"
)

// outageLogger is logger with the repeats of the outage warnings held back.
func outageLogger(logger *slog.Logger) *slog.Logger {
	lim := lognote.NewLimiter(lognote.Window, nil, msgFetchFailed, msgWriteFailed, msgSettleFailed, msgWaitFailed,
		msgRenewFailed, msgStalledCheckFailed, msgLockLost, msgNotOwned, msgAdvanceFailed, msgClockFailed, msgAddResent)
	return slog.New(lognote.NewHandler(logger.Handler(), lim))
}

// defaultLogOutput is where a Queue or Worker without a Logger writes its
// warnings (tests replace it).
var defaultLogOutput io.Writer = os.Stderr

// defaultLogger is the logger of a Queue or Worker whose options set none:
// warnings and errors, as text, to stderr, so that a failing job is seen
// by someone who has not set up logging yet.
func defaultLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(defaultLogOutput, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// jobAttrs are the fields that identify an attempt in every line about it.
func (w *Worker) jobAttrs(job *Job) []slog.Attr {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String(logkey.JobName, job.Name), slog.String(logkey.JobID, job.ID),
		slog.Int(logkey.Attempt, job.AttemptsStarted))
	if key := w.opKey(job); key != "" {
		attrs = append(attrs, slog.String(logkey.OpKey, key))
	}
	return attrs
}

// opKey is the operation key logged for a job: WorkerOptions.OpKey's, or
// the job's deduplication id.
func (w *Worker) opKey(job *Job) string {
	if w.opts.OpKey != nil {
		return w.opts.OpKey(job)
	}
	return job.DeduplicationID
}

// logStarted logs an attempt's start (debug level).
func (w *Worker) logStarted(ctx context.Context, job *Job) {
	if !w.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	w.log.LogAttrs(ctx, slog.LevelDebug, "job started", w.jobAttrs(job)...)
}

// logFinished logs an attempt whose outcome was written: debug when it
// completed (or was delayed or requeued), info when it will be retried,
// warning when the job failed for good.
func (w *Worker) logFinished(ctx context.Context, it *finishItem) {
	level := slog.LevelDebug
	switch {
	case it.outcome.Failed():
		level = slog.LevelWarn
	case it.outcome.Retried():
		level = slog.LevelInfo
	}
	if !w.log.Enabled(ctx, level) {
		return
	}
	attrs := append(w.jobAttrs(it.rj.job), slog.String(logkey.Outcome, it.outcome.String()),
		slog.Duration(logkey.Duration, it.took))
	if it.err != nil {
		attrs = append(attrs, slog.String(logkey.ErrorClass, errorClass(it.err)), slog.String(logkey.Error, it.err.Error()))
	}
	w.log.LogAttrs(ctx, level, "job finished", attrs...)
}

// errorClass sorts an attempt's error into a few classes to group
// incidents by (logged as error_class).
func errorClass(err error) string {
	var p *panicError
	var d *delayError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &p):
		return "panic"
	case errors.As(err, &d):
		return "delayed"
	case errors.Is(err, ErrLockLost):
		return "lock_lost"
	case errors.Is(err, ErrWorkerClosing):
		return "worker_closing"
	case errors.Is(err, ErrInvalidData):
		return "invalid_data" // typed data that does not decode, a result that does not encode
	case errors.Is(err, ErrPendingDependencies), errors.Is(err, ErrFailedChildren):
		return "children"
	case errors.Is(err, ErrJobTimedOut):
		return "timed_out" // JobOptions.Timeout or WorkerOptions.JobTimeout
	case errors.Is(err, ErrJobCancelled):
		return "cancelled" // Queue.CancelJob
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case IsUnrecoverable(err):
		return "unrecoverable"
	}
	return "error"
}
