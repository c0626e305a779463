package lab

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/logkey"
)

// Attribute keys of the processor log lines that internal/logkey does not
// have yet. idempotency logs its claims under the same "claim" key.
const (
	logKeyClaim   = "claim"
	logKeyEffect  = "effect"
	logKeyOutcome = "outcome"
)

// Claim values in logs and in the lab's executions table, beside the ones
// idempotency logs (inserted, existed, in_progress).
const (
	claimInserted   = "inserted"
	claimExisted    = "existed"
	claimInProgress = "in_progress"
	// claimNone: the effect was written without claiming an operation key.
	claimNone = "none"
)

// Counters count what the processors wrapped by [Observe] did, in this
// process: executions (every call), effects (an effect was written: a claim
// that inserted its key and committed, or an effect reported with
// [ObserveEffect]) and duplicates suppressed (a claim that found its key
// already completed). Executions minus effects minus duplicates suppressed
// are the executions that ended before writing anything. The zero value is
// ready; it is safe for concurrent use.
//
// They are in-memory counters, for metrics: a process that dies loses them.
// The lab itself counts from the database.
type Counters struct {
	executions, effects, duplicates atomic.Int64
}

// CounterValues is a snapshot of [Counters].
type CounterValues struct {
	Executions           int64 `json:"executions"`
	Effects              int64 `json:"effects"`
	DuplicatesSuppressed int64 `json:"duplicates_suppressed"`
}

// Values returns the current counts.
func (c *Counters) Values() CounterValues {
	return CounterValues{
		Executions:           c.executions.Load(),
		Effects:              c.effects.Load(),
		DuplicatesSuppressed: c.duplicates.Load(),
	}
}

// ObserveOptions configure [Observe]. A nil *ObserveOptions means all
// defaults.
type ObserveOptions struct {
	// Logger receives "processor start" and "processor finish" at info level
	// for every execution.
	//
	// Defaults to nil, which discards.
	Logger *slog.Logger

	// Counters, when set, count executions, effects and duplicates
	// suppressed.
	//
	// Defaults to nil, which counts nothing.
	Counters *Counters

	// OpKey returns the operation key of a job, for the start line, which
	// comes before the processor claims anything. The finish line has the
	// key the processor claimed through [ObserveDo] either way.
	//
	// Defaults to nil: the start line has no op_key.
	OpKey func(job *drover.Job) string
}

// observation is what one execution reported, carried in its ctx.
type observation struct {
	mu     sync.Mutex
	key    string
	claim  string
	effect bool
}

type observationKey struct{}

func observationFrom(ctx context.Context) *observation {
	o, _ := ctx.Value(observationKey{}).(*observation)
	return o
}

// Observe wraps a processor so that every execution logs a start and a
// finish line with queue, job_name, job_id, op_key, attempt and pid, and the
// finish line also with what the processor's operation claim found (claim:
// inserted, existed, in_progress, or none when it wrote an effect without a
// key), whether it wrote an effect, its outcome and duration. The processor
// reports its claim by calling [ObserveDo] instead of Ledger.Do, or an
// unguarded effect with [ObserveEffect].
//
// These lines join up with the worker's own logs by job_id, and across
// processes by op_key: a job that ran twice, in two processes, shows one
// claim inserted and one existed.
func Observe(proc drover.Processor, opts *ObserveOptions) drover.Processor {
	var o ObserveOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	pid := os.Getpid()
	return drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		obs := &observation{}
		if o.OpKey != nil {
			obs.key = o.OpKey(job)
		}
		queue := ""
		if q := job.Queue(); q != nil {
			queue = q.Name()
		}
		attrs := []slog.Attr{
			slog.String(logkey.Queue, queue), slog.String(logkey.JobName, job.Name), slog.String(logkey.JobID, job.ID),
			slog.String(logkey.OpKey, obs.key), slog.Int(logkey.Attempt, job.AttemptsStarted), slog.Int(logkey.PID, pid),
		}
		if c := o.Counters; c != nil {
			c.executions.Add(1)
		}
		o.Logger.LogAttrs(ctx, slog.LevelInfo, "processor start", attrs...)
		start := time.Now()

		result, err := proc.Process(context.WithValue(ctx, observationKey{}, obs), job)

		obs.mu.Lock()
		key, claim, effect := obs.key, obs.claim, obs.effect
		obs.mu.Unlock()
		attrs[3] = slog.String(logkey.OpKey, key)
		if c := o.Counters; c != nil {
			if effect {
				c.effects.Add(1)
			}
			if claim == claimExisted {
				c.duplicates.Add(1)
			}
		}
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		attrs = append(attrs, slog.String(logKeyClaim, claim), slog.Bool(logKeyEffect, effect),
			slog.String(logKeyOutcome, outcome), slog.Duration(logkey.Duration, time.Since(start)))
		if err != nil {
			attrs = append(attrs, slog.Any(logkey.Error, err))
		}
		o.Logger.LogAttrs(ctx, slog.LevelInfo, "processor finish", attrs...)
		return result, err
	})
}

// ObserveDo calls ledger.Do and reports what its claim found to the
// [Observe] wrapper around the processor, if any: the operation key, the
// claim (inserted, existed, in_progress) and whether the effect committed.
// Its results are Do's.
func ObserveDo[Tx any](ctx context.Context, ledger *idempotency.Ledger[Tx], key string,
	fn func(ctx context.Context, tx Tx) ([]byte, error),
) (idempotency.Result, error) {
	res, err := ledger.Do(ctx, key, fn)
	if obs := observationFrom(ctx); obs != nil {
		obs.mu.Lock()
		obs.key = key
		switch res.Status {
		case idempotency.Claimed:
			obs.claim = claimInserted
			if err == nil {
				obs.effect = true
			}
		case idempotency.AlreadyCompleted:
			obs.claim = claimExisted
		case idempotency.InProgressElsewhere:
			obs.claim = claimInProgress
		}
		obs.mu.Unlock()
	}
	return res, err
}

// ObserveEffect reports to the [Observe] wrapper around the processor, if
// any, that the processor wrote an effect without claiming an operation key
// (claim: none).
func ObserveEffect(ctx context.Context) {
	if obs := observationFrom(ctx); obs != nil {
		obs.mu.Lock()
		if obs.claim == "" {
			obs.claim = claimNone
		}
		obs.effect = true
		obs.mu.Unlock()
	}
}

// claimOf returns the claim the current execution reported, or "".
func claimOf(ctx context.Context) string {
	if obs := observationFrom(ctx); obs != nil {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.claim
	}
	return ""
}
