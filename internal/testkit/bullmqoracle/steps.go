package bullmqoracle

import "context"

// Step operations drive one BullMQ Worker per (prefix, queue) one job at a
// time, for tests that must decide each job's fate in order: the worker
// never runs on its own (autorun false), so nothing happens between steps.
// It is named "w" (BullMQ's processedBy), with lockDuration and
// stalledInterval 30 s, maxStalledCount 1 and the custom backoff strategies
// of node/lib.mjs. Each take asks Redis: the worker forgets a rate limit
// it met in an earlier step (a BullMQ worker remembers it in process, its
// limitUntil, and takes nothing until it passes; drover's workers ask Redis).

// StepWork takes the next ready job (Worker.getNextJob without blocking)
// and processes it with behavior (Worker.processJob, not fetching a next
// job). It returns the job's id, or "" when no job was ready.
func (o *Oracle) StepWork(ctx context.Context, prefix, queue string, behavior Behavior) (string, error) {
	return o.StepWorkMetrics(ctx, prefix, queue, behavior, 0)
}

// StepWorkMetrics is StepWork with the step worker's metrics option set to
// {maxDataPoints: maxDataPoints} for this job (0: no metrics), so a job it
// finishes for good is counted in the queue's metrics.
func (o *Oracle) StepWorkMetrics(ctx context.Context, prefix, queue string, behavior Behavior, maxDataPoints int) (string, error) {
	return o.StepWorkOpts(ctx, prefix, queue, behavior, StepWorkerOpts{MaxDataPoints: maxDataPoints})
}

// StepWorkerOpts are the step worker's options for one StepWorkOpts call.
type StepWorkerOpts struct {
	// MaxDataPoints is the metrics option's (0: no metrics).
	MaxDataPoints int
	// RemoveOnComplete and RemoveOnFail are the worker's KeepJobs objects
	// ({count, age, limit}; nil: none), for jobs without their own.
	RemoveOnComplete, RemoveOnFail map[string]any
	// Limiter is the worker's limiter option ({max, duration}; nil: none),
	// which the take reads.
	Limiter map[string]any
	// MaxStartedAttempts is the worker's maxStartedAttempts (0: none).
	MaxStartedAttempts int
	// FetchNext makes the job's finish take the next job in the same call
	// (a running Worker's fetch), which runs too, with the same behavior,
	// its own finish fetching none; the result is then "<id> <next id>".
	FetchNext bool
	// Concurrency 2 takes two jobs (with two getNextJob calls) before it
	// runs either, then runs them in the order taken, fetching none; a job
	// that must not run (a deferred failure) fails as soon as it is taken
	// and another is taken for its slot. The result is then the ids of
	// the jobs taken, sorted and space-separated.
	Concurrency int
	// Batch, above 1, is a worker at that concurrency whose jobs finish
	// together while more wait: up to Batch jobs taken, finished one call
	// each in the order taken, the last finish fetching the next job and
	// more taken for the freed slots (up to Batch), which then run in the
	// order taken, fetching none. The result is "<taken> / <fetched>",
	// each list of ids sorted and space-separated.
	Batch int
	// SameMs, with Batch, makes the batch's finishes read one clock
	// value (Date.now frozen), as one script call of drover's does: the
	// jobs share finishedOn and their finished set's score.
	SameMs bool
}

// StepWorkOpts is StepWork with the step worker's options set to opts for
// this job.
func (o *Oracle) StepWorkOpts(ctx context.Context, prefix, queue string, behavior Behavior, opts StepWorkerOpts) (string, error) {
	var id *string
	args := qargs(prefix, queue, "behavior", behavior)
	if opts.MaxDataPoints > 0 {
		args["metrics"] = map[string]any{"maxDataPoints": opts.MaxDataPoints}
	}
	if opts.RemoveOnComplete != nil {
		args["removeOnComplete"] = opts.RemoveOnComplete
	}
	if opts.RemoveOnFail != nil {
		args["removeOnFail"] = opts.RemoveOnFail
	}
	if opts.Limiter != nil {
		args["limiter"] = opts.Limiter
	}
	if opts.MaxStartedAttempts > 0 {
		args["maxStartedAttempts"] = opts.MaxStartedAttempts
	}
	if opts.FetchNext {
		args["fetchNext"] = true
	}
	if opts.Concurrency > 1 {
		args["concurrency"] = opts.Concurrency
	}
	if opts.Batch > 1 {
		args["batch"] = opts.Batch
		if opts.SameMs {
			args["sameMs"] = true
		}
	}
	err := o.Call(ctx, "stepWork", args, &id)
	if id == nil {
		return "", err
	}
	return *id, err
}

// StepTake takes the next ready job and leaves it active with its lock, as
// a worker that died right after taking it. It returns the job's id, or ""
// when no job was ready.
func (o *Oracle) StepTake(ctx context.Context, prefix, queue string) (string, error) {
	var id *string
	err := o.Call(ctx, "stepTake", qargs(prefix, queue), &id)
	if id == nil {
		return "", err
	}
	return *id, err
}

// StepCheckStalled runs one stalled-jobs check (Worker.moveStalledJobsToWait)
// and returns the ids it reported stalled.
func (o *Oracle) StepCheckStalled(ctx context.Context, prefix, queue string) ([]string, error) {
	var ids []string
	err := o.Call(ctx, "stepCheckStalled", qargs(prefix, queue), &ids)
	return ids, err
}

// StepCheckStalledMax is StepCheckStalled with the worker's
// maxStalledCount set to maxStalled for this check.
func (o *Oracle) StepCheckStalledMax(ctx context.Context, prefix, queue string, maxStalled int) ([]string, error) {
	var ids []string
	err := o.Call(ctx, "stepCheckStalled", qargs(prefix, queue, "maxStalledCount", maxStalled), &ids)
	return ids, err
}

// Forget closes and drops the driver's Queue, QueueEvents and step worker
// of one queue, for tests that use many short-lived prefixes.
func (o *Oracle) Forget(ctx context.Context, prefix, queue string) error {
	return o.Call(ctx, "forget", qargs(prefix, queue), nil)
}
