package bullmqoracle

import (
	"context"
	"encoding/json"
)

// NodeJobScheduler is Node's JobSchedulerJson (Queue.getJobScheduler).
type NodeJobScheduler struct {
	Key            string        `json:"key"`
	Name           string        `json:"name"`
	Next           int64         `json:"next"`
	IterationCount int64         `json:"iterationCount"`
	Limit          int64         `json:"limit"`
	StartDate      int64         `json:"startDate"`
	EndDate        int64         `json:"endDate"`
	TZ             string        `json:"tz"`
	Pattern        string        `json:"pattern"`
	Every          int64         `json:"every"`
	Offset         int64         `json:"offset"`
	Template       *NodeTemplate `json:"template"`
}

// NodeTemplate is a scheduler's job template as Node reads it.
type NodeTemplate struct {
	Data json.RawMessage `json:"data,omitempty"`
	Opts map[string]any  `json:"opts,omitempty"`
}

// UpsertJobScheduler calls Queue.upsertJobScheduler(id, repeat, template)
// and returns the id of the run it added ("" when none). repeat and
// template are BullMQ's RepeatOptions and {name, data, opts}.
func (o *Oracle) UpsertJobScheduler(ctx context.Context, prefix, queue, id string, repeat, template map[string]any) (string, error) {
	var runID *string
	err := o.Call(ctx, "upsertJobScheduler", qargs(prefix, queue, "schedulerId", id, "repeat", repeat, "template", template), &runID)
	if err != nil || runID == nil {
		return "", err
	}
	return *runID, nil
}

// RemoveJobScheduler calls Queue.removeJobScheduler(id).
func (o *Oracle) RemoveJobScheduler(ctx context.Context, prefix, queue, id string) (bool, error) {
	var ok bool
	err := o.Call(ctx, "removeJobScheduler", qargs(prefix, queue, "schedulerId", id), &ok)
	return ok, err
}

// GetJobScheduler calls Queue.getJobScheduler(id); nil when Node finds none.
func (o *Oracle) GetJobScheduler(ctx context.Context, prefix, queue, id string) (*NodeJobScheduler, error) {
	var s *NodeJobScheduler
	err := o.Call(ctx, "getJobScheduler", qargs(prefix, queue, "schedulerId", id), &s)
	return s, err
}

// GetJobSchedulers calls Queue.getJobSchedulers(start, end, asc).
func (o *Oracle) GetJobSchedulers(ctx context.Context, prefix, queue string, start, end int, asc bool) ([]NodeJobScheduler, error) {
	var s []NodeJobScheduler
	err := o.Call(ctx, "getJobSchedulers", qargs(prefix, queue, "start", start, "end", end, "asc", asc), &s)
	return s, err
}

// GetJobSchedulersCount calls Queue.getJobSchedulersCount().
func (o *Oracle) GetJobSchedulersCount(ctx context.Context, prefix, queue string) (int64, error) {
	var n int64
	err := o.Call(ctx, "getJobSchedulersCount", qargs(prefix, queue), &n)
	return n, err
}

// CronNext returns the next n runs (ms) of pattern in tz after from (ms),
// computed by the cron-parser BullMQ uses.
func (o *Oracle) CronNext(ctx context.Context, pattern, tz string, from int64, n int) ([]int64, error) {
	var out []int64
	err := o.Call(ctx, "cronNext", map[string]any{"pattern": pattern, "tz": tz, "from": from, "n": n}, &out)
	return out, err
}

// NodeMetrics is Queue.getMetrics's result.
type NodeMetrics struct {
	Meta struct {
		Count     int64 `json:"count"`
		PrevTS    int64 `json:"prevTS"`
		PrevCount int64 `json:"prevCount"`
	} `json:"meta"`
	Data  []int64 `json:"data"`
	Count int64   `json:"count"`
}

// GetMetrics calls Queue.getMetrics(typ, start, end) (typ "completed" or
// "failed").
func (o *Oracle) GetMetrics(ctx context.Context, prefix, queue, typ string, start, end int) (*NodeMetrics, error) {
	var m NodeMetrics
	err := o.Call(ctx, "getMetrics", qargs(prefix, queue, "type", typ, "start", start, "end", end), &m)
	return &m, err
}

// JobRead calls a flow read of Job (getChildrenValues, getDependencies,
// getDependenciesCount, getFailedChildrenValues, getIgnoredChildrenFailures)
// on job id with args and decodes its result into out.
func (o *Oracle) JobRead(ctx context.Context, prefix, queue, id, method string, out any, args ...any) error {
	return o.Call(ctx, "jobRead", qargs(prefix, queue, "jobId", id, "method", method, "args", nonNilArgs(args)), out)
}

// QueueCall calls one of Queue's getDeduplicationJobId,
// removeDeduplicationKey, getGlobalConcurrency, setGlobalConcurrency,
// removeGlobalConcurrency, getGlobalRateLimit, getCountsPerPriority,
// getMeta, getVersion, isMaxed, removeOrphanedJobs,
// exportPrometheusMetrics, setGlobalRateLimit, removeGlobalRateLimit,
// rateLimit, removeRateLimitKey or trimEvents with args and decodes its result into out.
func (o *Oracle) QueueCall(ctx context.Context, prefix, queue, method string, out any, args ...any) error {
	return o.Call(ctx, "queueCall", qargs(prefix, queue, "method", method, "args", nonNilArgs(args)), out)
}

// JobCall reads job id with Queue.getJob and calls one of its
// removeDeduplicationKey, clearLogs, removeChildDependency or
// removeUnprocessedChildren with args, decoding the result into out (nil:
// ignored).
func (o *Oracle) JobCall(ctx context.Context, prefix, queue, id, method string, out any, args ...any) error {
	return o.Call(ctx, "jobCall", qargs(prefix, queue, "jobId", id, "method", method, "args", nonNilArgs(args)), out)
}

func nonNilArgs(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// ManualError is what BullMQ threw from a manual call: its message and
// its numeric code (ErrorCode: -1 missing job, -2 missing lock, -3 not in
// state, -6 lock mismatch, ...), 0 when it had none.
type ManualError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// ManualOutcome is a manual call's answer: Result when BullMQ returned,
// Error when it threw.
type ManualOutcome struct {
	Result json.RawMessage `json:"result"`
	Error  *ManualError    `json:"error"`
}

// ManualNext calls getNextJob(token, {block: false}) on the queue's manual
// worker (a BullMQ Worker without a processor, made on first use with
// workerOpts over the oracle's defaults: name "w", the custom backoff
// strategies) and returns the job's id, "" when none was ready.
func (o *Oracle) ManualNext(ctx context.Context, prefix, queue, token string, workerOpts map[string]any) (string, error) {
	return o.manualNext(ctx, prefix, queue, token, workerOpts, false)
}

// ManualNextForgetLimit is ManualNext on a manual worker that first
// forgets a rate limit an earlier call met (BullMQ's worker keeps its
// limitUntil in process and skips taking until it passes, even when the
// limiter key is gone): the take asks Redis, as drover's Worker.NextJob
// always does.
func (o *Oracle) ManualNextForgetLimit(ctx context.Context, prefix, queue, token string, workerOpts map[string]any) (string, error) {
	return o.manualNext(ctx, prefix, queue, token, workerOpts, true)
}

func (o *Oracle) manualNext(ctx context.Context, prefix, queue, token string, workerOpts map[string]any, forget bool) (string, error) {
	var id *string
	err := o.Call(ctx, "manualNext", qargs(prefix, queue, "token", token, "workerOpts", workerOpts, "forgetLimit", forget), &id)
	if err != nil || id == nil {
		return "", err
	}
	return *id, nil
}

// ManualWorker makes the queue's manual worker with workerOpts (BullMQ
// Worker options: metrics, removeOnComplete, ...) before the first manual
// call, which would make it with none.
func (o *Oracle) ManualWorker(ctx context.Context, prefix, queue string, workerOpts map[string]any) error {
	return o.Call(ctx, "manualWorker", qargs(prefix, queue, "workerOpts", workerOpts), nil)
}

// ManualCall reads job id with Job.fromId on the queue's manual worker and
// calls method (extendLock, moveToCompleted, moveToFailed, moveToDelayed,
// moveToWait, moveToWaitingChildren) with args; moveToFailed's first argument is
// map{"message": ..., "unrecoverable": bool}. A BullMQ refusal is in the
// outcome's Error, not in the returned error.
func (o *Oracle) ManualCall(ctx context.Context, prefix, queue, id, method string, args ...any) (ManualOutcome, error) {
	var out ManualOutcome
	err := o.Call(ctx, "manualCall", qargs(prefix, queue, "jobId", id, "method", method, "args", nonNilArgs(args)), &out)
	return out, err
}
