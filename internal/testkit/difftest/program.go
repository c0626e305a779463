package difftest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/seed40057009/drover"
)

// Impl names who performs a step in the mixed run.
type Impl string

// The two implementations.
const (
	Node   Impl = "node"
	Drover Impl = "drover"
)

// Op is what a step does.
type Op string

// The operations a program is made of. Each one exists on both sides
// unless its doc says it is Node-only (then Step.By is always Node).
const (
	// OpAdd adds Step.Add (Queue.add / Queue.Add).
	OpAdd Op = "add"
	// OpWork takes the next ready job, one job, and ends it with
	// Step.Outcome (a Node Worker's processJob without fetching a next job;
	// a drover Worker whose result write fetches none, closed before it
	// takes another). With Step.OtherQueue it works OtherQueueName.
	OpWork Op = "work"
	// OpStall takes the next ready job and abandons it: the worker process
	// dies, and the harness deletes the lock as its expiry would.
	OpStall Op = "stall"
	// OpCheckStalled runs one stalled-jobs check (moveStalledJobsToWait)
	// with maxStalledCount Step.Limit, as drover's WorkerOptions.
	// MaxStalledCount reads it: 0 is the default 1, negative is 0.
	OpCheckStalled Op = "checkStalled"
	// OpRetry retries Step.Job in Step.State (job.retry / Job.Retry).
	OpRetry Op = "retry"
	// OpRetryJobs moves every job in Step.State back to wait (retryJobs),
	// with Step.Delay not 0 only those finished before Step.Delay ms after
	// the step (retryJobs' timestamp / RetryJobsOptions.OlderThan).
	OpRetryJobs Op = "retryJobs"
	// OpPromote promotes Step.Job (job.promote / Job.Promote).
	OpPromote Op = "promote"
	// OpPromoteJobs promotes every delayed job, Step.Limit per script call
	// (0: the default 1000).
	OpPromoteJobs Op = "promoteJobs"
	// OpChangeDelay sets Step.Job's delay to Step.Delay ms.
	OpChangeDelay Op = "changeDelay"
	// OpChangePriority sets Step.Job's priority to Step.Priority (Step.LIFO).
	OpChangePriority Op = "changePriority"
	// OpRemove removes Step.Job. With Step.KeepChildren its flow
	// children stay (Queue.remove(id, {removeChildren: false}); drover's
	// Job.Remove with RemoveOptions.KeepChildren).
	OpRemove Op = "remove"
	// OpDrain drains the queue (Step.Delayed: delayed jobs too).
	OpDrain Op = "drain"
	// OpClean cleans Step.State with grace Step.Delay ms and limit Step.Limit.
	OpClean Op = "clean"
	// OpObliterate obliterates the queue (force, unless Step.NoForce: then
	// both refuse while a job is active), Step.Limit jobs per script call
	// (0: the default 1000).
	OpObliterate Op = "obliterate"
	// OpPause and OpResume pause and resume the queue.
	OpPause  Op = "pause"
	OpResume Op = "resume"
	// OpProgress sets Step.Job's progress to Step.Value.
	OpProgress Op = "progress"
	// OpLog appends Step.Line to Step.Job's logs.
	OpLog Op = "log"
	// OpUpdateData replaces Step.Job's data with Step.Value.
	OpUpdateData Op = "updateData"
	// OpAddFlow adds Step.Add as a parent waiting for Step.Children, all in
	// the program's queue (FlowProducer.add / FlowProducer.Add). A job
	// without a custom id gets "f<name>" on both sides (both FlowProducers
	// would give it a random UUID).
	OpAddFlow Op = "addFlow"
	// OpUpsertScheduler creates or replaces the job scheduler Step.Scheduler
	// with Step.Add as its job template (upsertJobScheduler /
	// UpsertJobScheduler). Its runs are due from a start date hours after
	// the program's anchor, the same instant in both runs, so their ids
	// ("repeat:<id>:<ms>") agree; Step.Add's name labels the first run.
	OpUpsertScheduler Op = "upsertScheduler"
	// OpRemoveScheduler removes the job scheduler Step.Scheduler.ID.
	OpRemoveScheduler Op = "removeScheduler"
	// OpAddBulk adds Step.Children in one call (Queue.addBulk /
	// Queue.AddBulk).
	OpAddBulk Op = "addBulk"
	// OpClearLogs trims Step.Job's logs to the newest Step.Limit lines
	// (job.clearLogs / Job.ClearLogs).
	OpClearLogs Op = "clearLogs"
	// OpRemoveChildDependency detaches Step.Job from its flow parent
	// (job.removeChildDependency / Job.RemoveChildDependency).
	OpRemoveChildDependency Op = "removeChildDependency"
	// OpRemoveUnprocessedChildren deletes Step.Job's children that have
	// not started (job.removeUnprocessedChildren).
	OpRemoveUnprocessedChildren Op = "removeUnprocessedChildren"
	// OpRemoveDedupKey frees deduplication id Step.DedupID, whoever holds
	// it (queue.removeDeduplicationKey).
	OpRemoveDedupKey Op = "removeDedupKey"
	// OpJobRemoveDedupKey frees the deduplication id Step.Job holds, if it
	// still holds it (job.removeDeduplicationKey).
	OpJobRemoveDedupKey Op = "jobRemoveDedupKey"
	// OpSetGlobalConcurrency caps the queue's active jobs at Step.Limit
	// (queue.setGlobalConcurrency); OpRemoveGlobalConcurrency lifts the cap.
	OpSetGlobalConcurrency    Op = "setGlobalConcurrency"
	OpRemoveGlobalConcurrency Op = "removeGlobalConcurrency"
	// OpManualTake takes the next ready job under lock token Step.Token
	// (BullMQ's worker.getNextJob / drover's Worker.NextJob, a worker
	// without a processor), of OtherQueueName with Step.OtherQueue.
	OpManualTake Op = "manualTake"
	// OpManualFinish ends the oldest job the run took with OpManualTake
	// (and did not end yet) under lock token Step.Token, which may not be
	// the one it was taken with, as Step.Outcome says: complete, fail,
	// unrecoverable, delay (until Outcome.Delay ms after the step), wait
	// (back to wait, no attempt spent) or extend (renew its lock; the job
	// stays taken). Job methods moveToCompleted, moveToFailed,
	// moveToDelayed, moveToWait, extendLock / drover's Job.Complete, Fail,
	// MoveToDelayed, MoveToWait, ExtendLock.
	OpManualFinish Op = "manualFinish"
	// OpSetGlobalRateLimit lets the queue's workers together take at most
	// Step.Limit jobs per Step.Delay ms (queue.setGlobalRateLimit /
	// Queue.SetGlobalRateLimit); OpRemoveGlobalRateLimit lifts it.
	OpSetGlobalRateLimit    Op = "setGlobalRateLimit"
	OpRemoveGlobalRateLimit Op = "removeGlobalRateLimit"
	// OpRateLimit makes the limiter refuse takes for Step.Delay ms
	// (queue.rateLimit / Queue.RateLimit): it blocks once a limit applies
	// (a global rate limit). OpRemoveRateLimitKey deletes the limiter key
	// (queue.removeRateLimitKey / Queue.RemoveRateLimitKey).
	OpRateLimit          Op = "rateLimit"
	OpRemoveRateLimitKey Op = "removeRateLimitKey"
	// OpTrimEvents trims the events stream to about Step.Limit entries
	// (queue.trimEvents / Queue.TrimEvents).
	OpTrimEvents Op = "trimEvents"
	// OpGetCounts reads the job counts of every state (getJobCounts /
	// GetJobCounts); its result is the counts.
	OpGetCounts Op = "getCounts"
	// OpGetJobs reads the ids of the jobs in Step.State (or in the states
	// Step.Types, when set) from index Step.Priority, Step.Limit of them
	// (0: all the rest), ascending unless Step.LIFO (getJobs(types, start,
	// end, asc) / GetJobs); its result is the ids.
	OpGetJobs Op = "getJobs"
	// OpGetJobIDs is OpGetJobs without reading the jobs (getRanges /
	// GetJobIDs): an id whose hash is gone is listed too.
	OpGetJobIDs Op = "getJobIDs"
	// OpWaitFinished waits a moment for Step.Job to finish for good
	// (Job.waitUntilFinished with a QueueEvents / Job.WaitUntilFinished):
	// its result is the return value or the failedReason of a finished
	// job, "pending" for one that did not finish in the moment, and
	// "missing" (neither side asked: BullMQ rejects a job without a hash,
	// drover reads its finish event, see docs) for one without a hash.
	OpWaitFinished Op = "waitFinished"
	// OpManualWaitChildren moves the oldest job the run took with
	// OpManualTake (and did not end yet) to waiting-children, under the
	// token it was taken with (job.moveToWaitingChildren(token) /
	// drover's Job.MoveToWaitingChildren on the job NextJob returned). A
	// job with no pending child stays taken. With Step.Job it waits only
	// if that job of the program's queue is one of its pending children
	// (the child option: {child: {id, queue}} /
	// MoveToWaitingChildrenOptions.Child), a job of OtherQueueName with
	// Step.OtherQueue.
	OpManualWaitChildren Op = "manualWaitChildren"
	// OpGetScheduler reads job scheduler Step.Scheduler.ID
	// (getJobScheduler / GetJobScheduler); its result is every field the
	// two readers share, the template's data and options included.
	OpGetScheduler Op = "getScheduler"
	// OpGetSchedulers lists the job schedulers from index Step.Priority,
	// Step.Limit of them (0: all the rest), ascending by next run unless
	// Step.LIFO (getJobSchedulers / GetJobSchedulers); its result is each
	// one as OpGetScheduler renders it.
	OpGetSchedulers Op = "getSchedulers"
	// OpGetDedupJobID reads the job that holds deduplication id
	// Step.DedupID (queue.getDeduplicationJobId / GetDeduplicationJobID).
	OpGetDedupJobID Op = "getDedupJobId"
	// OpGetRateLimitTTL reads how long the limiter still refuses takes,
	// for Step.Limit jobs (0: the queue's own max) (queue.getRateLimitTtl
	// / GetRateLimitTTL); its result is rounded up to the minute.
	OpGetRateLimitTTL Op = "getRateLimitTtl"
	// OpGetCountsPerPriority counts the ready jobs of priorities 0 to 5
	// (queue.getCountsPerPriority / GetCountsPerPriority).
	OpGetCountsPerPriority Op = "getCountsPerPriority"
	// OpGetLimits reads the queue's global limits: isMaxed,
	// getGlobalConcurrency and getGlobalRateLimit (IsMaxed,
	// GetGlobalConcurrency, GetGlobalRateLimit).
	OpGetLimits Op = "getLimits"
	// OpGetJob reads Step.Job (Queue.getJob / GetJob); its result is the
	// fields both readers decode, times as present or not, the delay to
	// the minute.
	OpGetJob Op = "getJob"
	// OpFlowRead reads Step.Job's children with Step.Read (the job read
	// with getJob first, as a user would).
	OpFlowRead Op = "flowRead"
	// OpAddFlows adds the trees Step.Children in one call, each a root
	// with its Children (none: a lone job) (FlowProducer.addBulk /
	// FlowProducer.AddBulk), ids as OpAddFlow's.
	OpAddFlows Op = "addFlows"
	// OpGetLogs reads Step.Job's log lines from index Step.Priority,
	// Step.Limit of them (0: all the rest), oldest first unless Step.LIFO
	// (Queue.getJobLogs(id, start, end, asc) / GetJobLogs,
	// GetJobLogsNewestFirst); its result is the lines and their count.
	OpGetLogs Op = "getLogs"
	// OpGetCountByTypes counts the jobs in the states Step.Types, BullMQ's
	// names ("waiting" among them) (Queue.getJobCountByTypes / the sum of
	// GetJobCounts).
	OpGetCountByTypes Op = "getCountByTypes"
	// OpIsPaused reads whether the queue is paused (isPaused / IsPaused).
	OpIsPaused Op = "isPaused"
	// OpGetFlow reads the flow under Step.Job to depth Step.Priority (0:
	// the default 10) with at most Step.Limit children per kind (0: the
	// default 20) (FlowProducer.getFlow / Queue.GetFlow); its result is the
	// tree's ids, each job's children sorted.
	OpGetFlow Op = "getFlow"
	// OpGetMetrics reads the queue's metrics of Step.State ("completed" or
	// "failed"), data points from index Step.Priority, Step.Limit of them
	// (0: all the rest) (Queue.getMetrics / GetMetrics). Work steps with
	// Step.Metrics write them.
	OpGetMetrics Op = "getMetrics"
	// OpOrphan is the harness's, the same in both runs (Step.NodeOnly):
	// it deletes Step.Job's id from the completed and failed sets and
	// leaves its hash, logs and flow keys, as the age-based retention of
	// BullMQ 5.66.6 to 5.x did (the regression removeOrphanedJobs exists
	// to clean up after). Later steps meet a job no state holds.
	OpOrphan Op = "orphan"
	// OpAgeFinished is the harness's, the same in both runs
	// (Step.NodeOnly): it moves every finished job of both queues
	// AgeShift ms into the past (its completed or failed score and its
	// timestamp, processedOn and finishedOn), as if that time had passed
	// since. Age-based retention (removeOnComplete/removeOnFail with an
	// age of an hour), clean with an hour's grace and retryJobs of jobs
	// finished before an hour ago then reach those jobs, which no run
	// lasts long enough to age.
	OpAgeFinished Op = "ageFinished"
	// OpRemoveOrphanedJobs deletes the job keys no state holds, SCAN
	// count Step.Priority and at most Step.Limit jobs (0: all)
	// (queue.removeOrphanedJobs / Queue.RemoveOrphanedJobs); its result
	// is the number removed.
	OpRemoveOrphanedJobs Op = "removeOrphanedJobs"
	// OpUpdateJobProgress sets Step.Job's progress to Step.Value by id,
	// without reading the job (queue.updateJobProgress; drover's
	// Queue.Job(id).UpdateProgress, a handle that reads nothing).
	OpUpdateJobProgress Op = "updateJobProgress"
	// OpGetMeta reads the queue's settings (queue.getMeta / GetMeta); its
	// result is the fields both readers decode.
	OpGetMeta Op = "getMeta"
	// OpGetSchedulersCount counts the job schedulers
	// (getJobSchedulersCount / GetJobSchedulersCount).
	OpGetSchedulersCount Op = "getSchedulersCount"
	// OpExportMetrics renders the queue's counts in the Prometheus text
	// format, with a label when Step.LIFO (exportPrometheusMetrics /
	// ExportPrometheusMetrics); its result is the text.
	OpExportMetrics Op = "exportMetrics"
	// OpAddBurst adds Step.Limit copies of Step.Add (same name, data and
	// options, a generated id each) at once: Node's Queue.add one after
	// another, drover's Queue.Add from that many goroutines started
	// together, which its group commit sends in batches (pure batches of
	// plain adds to addPlainJobs, the rest to addJobs) in an order of its
	// own. The copies are alike, so the state does not depend on which
	// call got which id; the result is the ids, sorted.
	OpAddBurst Op = "addBurst"
	// OpAddMixedBurst adds Step.Children, each its own job (name, data,
	// options; plain, with a custom id that may be taken, a priority, a
	// delay or lifo), at once: drover's Queue.Add from as many goroutines
	// released together (its group commit sends pure batches of plain adds
	// to addPlainJobs, the rest to addJobs, in an order of its own), Node's
	// Queue.add one after another in the order drover's commit took them
	// (the runner runs a drover step's mixed run first and reads that
	// order from its events stream), so generated ids, lists, events and
	// counters must agree job for job. Its result is the ids, in the order
	// of Children.
	OpAddMixedBurst Op = "addMixedBurst"
	// OpSetIDCounter is the harness's, the same in both runs
	// (Step.NodeOnly): it sets the queue's id counter to Step.Delay, so
	// later generated ids are big (past 10^14, where Lua's number
	// formatting of both sides' scripts gives them 14 digits, or near
	// 2^53) or collide with the jobs and hashes already there.
	OpSetIDCounter Op = "setIdCounter"
	// OpStaleHash is the harness's, the same in both runs
	// (Step.NodeOnly): it writes a hash with stale fields (a return
	// value, finish stamps, attempts, a field neither writes; with
	// Step.Limit 1 a parent key of a job that does not exist) at the key
	// of the next generated id, as a job whose id left every state would
	// leave: the next add without a custom id writes over it.
	OpStaleHash Op = "staleHash"
)

// FlowRead is one of a job's reads of its children (OpFlowRead).
type FlowRead string

// The flow reads: Job.getChildrenValues, getDependencies (no paging),
// getDependenciesCount, getIgnoredChildrenFailures and its deprecated
// name getFailedChildrenValues; drover's Job.GetChildrenValues,
// GetDependencies (nil options), GetDependenciesCount,
// GetIgnoredChildrenFailures and GetFailedChildrenValues.
//
// ReadDependenciesPage is getDependencies with options: one page of each
// kind in Step.Types ("processed", "unprocessed", "ignored", "failed"),
// count Step.Limit (0: none given, BullMQ's 20), the failed page from
// cursor Step.Priority (drover's DependenciesOptions); its result is each
// kind's page and next cursor. ReadDependenciesCountOf is
// getDependenciesCount of the kinds Step.Types (drover's
// GetDependenciesCount counts them all; the kinds asked for are
// compared).
const (
	ReadChildrenValues          FlowRead = "getChildrenValues"
	ReadDependencies            FlowRead = "getDependencies"
	ReadDependenciesCount       FlowRead = "getDependenciesCount"
	ReadIgnoredChildrenFailures FlowRead = "getIgnoredChildrenFailures"
	ReadFailedChildrenValues    FlowRead = "getFailedChildrenValues"
	ReadDependenciesPage        FlowRead = "getDependencies(page)"
	ReadDependenciesCountOf     FlowRead = "getDependenciesCount(types)"
)

// Step is one operation of a program.
type Step struct {
	Op Op
	// By performs the step in the mixed run; the reference run is all Node.
	By Impl
	// Job names the target job by the Name of the add that created it; a
	// step whose add is gone (shrunk away) is skipped.
	Job string
	// Add is the job OpAdd adds, or OpAddFlow's parent.
	Add *Add
	// Children are OpAddFlow's children and OpAddBulk's jobs.
	Children []*Add
	// Outcome is how OpWork ends its job.
	Outcome *Outcome
	// OtherQueue makes the step act on OtherQueueName, where flow
	// children with Add.OtherQueue wait (their parents wait across
	// queues), if its operation is one [Step.OnOtherQueue] allows: OpAdd
	// adds its job there, OpWork works that queue, a job step (retry, remove, progress, a read of
	// its children, ...) targets Step.Job there, a queue step (drain,
	// clean, obliterate, pause, counts, ...) acts on that queue.
	OtherQueue bool
	// AltPrefix makes the step act under AltPrefixOf's key prefix, where
	// flow children with Add.AltPrefix wait, if its operation is one
	// [Step.OnAltPrefix] allows: a job step targets Step.Job there (a
	// child under that prefix, its parent under the run's), a queue step
	// or a work step acts on the queue of that name there (OtherQueueName
	// with OtherQueue, whose jobs are then reached as Step.OnOtherQueue's
	// are).
	AltPrefix bool
	// State is the state of OpRetry, OpRetryJobs, OpClean and OpGetJobs.
	State string
	// ResetMade and ResetStarted are OpRetry's reset options.
	ResetMade, ResetStarted bool
	// Delay (ms) of OpChangeDelay; the grace of OpClean; the window of
	// OpSetGlobalRateLimit and the duration of OpRateLimit.
	Delay int64
	// Priority and LIFO of OpChangePriority; OpGetJobs' start index and
	// descending order; OpRemoveOrphanedJobs' SCAN count; LIFO gives
	// OpExportMetrics a label.
	Priority int
	LIFO     bool
	// Limit of OpClean (0: none), OpGetJobs and OpGetSchedulers (0: all);
	// the lines OpClearLogs keeps; the cap of OpSetGlobalConcurrency; the
	// max of OpSetGlobalRateLimit; the length OpTrimEvents trims to; the
	// jobs one call of OpRetryJobs moves (0: the default 1000); the
	// maxJobs of OpGetRateLimitTTL (0: none given).
	Limit int
	// DedupID of OpRemoveDedupKey and OpGetDedupJobID.
	DedupID string
	// Token is the lock token of OpManualTake and OpManualFinish.
	Token string
	// Delayed makes OpDrain drain delayed jobs too.
	Delayed bool
	// Value of OpProgress and OpUpdateData.
	Value any
	// Line of OpLog.
	Line string
	// Scheduler of OpUpsertScheduler and OpRemoveScheduler; its ID is
	// OpGetScheduler's.
	Scheduler *Scheduler
	// Read is OpFlowRead's read.
	Read FlowRead
	// Metrics, on OpWork, is the worker's metrics option (maxDataPoints;
	// 0: none): a job it finishes for good is counted in the queue's
	// metrics (WorkerOptions.Metrics / Node's metrics option).
	Metrics int
	// Types are OpGetCountByTypes' states, and OpGetJobs' when set.
	Types []string
	// KeepChildren makes OpRemove leave the job's flow children.
	KeepChildren bool
	// NoForce makes OpObliterate refuse while a job is active.
	NoForce bool
	// WorkerRemoveOnComplete and WorkerRemoveOnFail, on OpWork, are the
	// worker's retention options (object forms: a BullMQ worker's are
	// KeepJobs objects), for jobs without their own
	// (WorkerOptions.RemoveOnComplete / Node's worker option).
	WorkerRemoveOnComplete, WorkerRemoveOnFail *Retention
	// LimiterMax, on OpWork, is the worker's rate limiter: at most
	// LimiterMax takes per LimiterDuration (0: none) (WorkerOptions.Limiter
	// / Node's limiter option), counted in the queue's limiter key. A
	// global rate limit in meta wins for the max, the worker's for the
	// window, in both.
	LimiterMax int
	// MaxStarted, on OpWork, is the worker's maxStartedAttempts (0: none):
	// a job started more often fails without running, one started that
	// often is not retried (WorkerOptions.MaxStartedAttempts).
	MaxStarted int
	// Concurrency 2, on OpWork (without Outcome.FetchNext or MaxStarted),
	// is a worker that takes two jobs (the second when one is ready
	// then), both in flight at once, and finishes them with Outcome in
	// the order it took them, fetching none; a job that must not run (a
	// deferred failure) fails as soon as it is taken and its slot takes
	// another. The result is the ids of the jobs taken, sorted.
	// Node's step takes with two getNextJob calls; drover's Worker at
	// Concurrency 2 in one fetch.
	//
	// Concurrency 2 to 4 with Outcome.FetchNext is a batch finish: a
	// worker at that concurrency takes up to that many jobs, which all
	// finish at once while more wait, and the finishes' fetch takes the
	// next jobs for every slot; those run too, finished in the order
	// taken, fetching none. drover's Worker writes the batch in one
	// finishJobs call (seam.FinishBatch), in the order taken, whose fetch
	// takes several jobs (an RPOP count above 1); Node's step finishes
	// the jobs one call each in that order (in one clock reading, as
	// drover's one call stamps them), the last fetching the next
	// job, and takes more with getNextJob, up to Concurrency. The result
	// is "<taken> / <fetched>", each list sorted. Never in a program that
	// may leave a job that must not run (deferredFailures).
	Concurrency int
}

// LimiterDuration is the window of every generated worker limiter: an
// hour, so no window ends while a program runs.
const LimiterDuration = Hour

// Scheduler is a job scheduler repeating every Every ms from Start ms after
// the program's anchor (a time hours ahead of the run, shared by both runs),
// at most Limit runs (0: no limit), none after End ms after the anchor (0:
// no end).
type Scheduler struct {
	ID    string
	Every int64
	// Pattern, when set, is a cron pattern used instead of Every. Its
	// runs are due at the pattern's times from Start on, so both runs of
	// a program (which share Start's anchor) compute the same due times.
	Pattern string
	Start   int64
	Limit   int
	End     int64
	// Immediately asks for a first run now as well as the start date:
	// both refuse the pair (BullMQ 6.7 throws, drover's RepeatOptions
	// check refuses it).
	Immediately bool
	// TZ is a Pattern's time zone (the tz option / RepeatOptions.TZ);
	// "" is UTC.
	TZ string
	// Offset (ms) is an Every scheduler's offset option
	// (RepeatOptions.Offset), stored with the scheduler and its runs.
	Offset int64
}

// Add is one job to add, with the options both implementations share.
type Add struct {
	// Name is the job's name and the label later steps use to find it.
	Name string
	// JobName, when not "", is the job's name instead of Name (which
	// stays the label steps find the job by): odd characters, and
	// NoName for the empty name (JobNameOf).
	JobName string
	Data    map[string]any
	// DataRaw, when not "", is the job's data as JSON text instead of
	// Data: a string, number, bool, null, array or an object whose key
	// order JSON.stringify changes (both sides are handed the same text,
	// json.RawMessage from Go: Payload).
	DataRaw  string
	JobID    string
	Delay    int64 // ms
	Priority int
	LIFO     bool
	// LIFORaw, when not nil, is the lifo value a Node producer stores as
	// given ("false", "0", "", 0, 1: from an environment variable, say),
	// which BullMQ reads by JS or Lua truthiness; drover's JobOptions.LIFO
	// is a bool, so such an add is Node's (Step.NodeOnly).
	LIFORaw  any
	Attempts int
	Backoff  *Backoff
	// RemoveOnComplete and RemoveOnFail are retention options.
	RemoveOnComplete, RemoveOnFail *Retention
	Dedup                          *Dedup
	KeepLogs                       int
	StackTraceLimit                int
	// SizeLimit bounds the data's JSON in bytes (0: none); both refuse a
	// larger one.
	SizeLimit int
	// TelemetryMeta and OmitContext are the telemetry option (metadata
	// and omitContext; opts tm and omc) as a producer without a tracer
	// passes it (drover's JobOptions.Telemetry).
	TelemetryMeta string
	OmitContext   bool
	// TimestampAgo, when not 0, is the job's timestamp option: that many
	// ms before the step's instant (negative: after it), which a delayed
	// job's due time counts from and clean's grace reads (opts.timestamp /
	// JobOptions.Timestamp). The runner resolves it (a flow's parents
	// take the runner's own stamps instead).
	TimestampAgo int64
	// Parent names an added job this one is a child of (TakenJob: the
	// oldest job the run took by hand and did not end yet) (the parent
	// option; drover adds such a job as a lone flow root with
	// FlowJob.Parent, so the generator gives it a custom id when drover
	// adds it: drover's FlowProducer would give it a UUID).
	Parent string
	// ParentInOther: Parent is a job of OtherQueueName (a flow child
	// there), so the child in the program's queue waits across queues.
	ParentInOther bool
	// OnParentFailure is the child's failure policy for its parent:
	// "failParentOnFailure", "ignoreDependencyOnFailure",
	// "removeDependencyOnFailure", "continueParentOnFailure" or "".
	OnParentFailure string
	// OtherQueue puts a flow's job (a child, or the root of an OpAddFlow
	// or OpAddFlows tree) in OtherQueueName, under the same prefix: a
	// parent and its children wait across queues. Steps with Step.OtherQueue
	// reach it there (Step.OnOtherQueue: work, job and queue steps); the
	// others reach it through its parent (removal, cleaning,
	// obliteration).
	OtherQueue bool
	// AltPrefix puts a flow child under the key prefix AltPrefixOf of
	// the run's (FlowJob.prefix / drover's FlowJob.Prefix): its keys, its
	// queue's events and meta, its parent's dependency on it all carry
	// that prefix. No step targets it there; its parent's removal,
	// cleaning, obliteration and flow reads reach it across prefixes.
	AltPrefix bool
	// Children, on an OpAddFlow child, are its own children: it waits for
	// them in waiting-children, the tree three levels deep.
	Children []*Add
}

// AgeShift is how far OpAgeFinished moves finished jobs into the past:
// past an age or grace of an hour, short of two.
const AgeShift int64 = 90 * 60_000

// OtherQueueName is the queue of flow children with Add.OtherQueue.
const OtherQueueName = "q2"

// TakenJob, as an Add's Parent, names the oldest job the run took with
// OpManualTake and did not end yet (none: a job that does not exist).
const TakenJob = "@taken"

// Backoff is a job's backoff option. Number makes Node's shorthand (the
// delay as a plain number, meaning fixed).
type Backoff struct {
	Type   string
	Delay  int64 // ms
	Jitter float64
	Number bool
}

// Retention is one of BullMQ's KeepJobs shapes: Bool (true/false), a plain
// Count, or an object with Age (seconds), Count and Limit.
type Retention struct {
	Bool   *bool
	Count  *int
	Object bool
	Age    int64
	Limit  int
}

// Dedup is a deduplication option.
type Dedup struct {
	ID               string
	TTL              int64 // ms
	Extend           bool
	Replace          bool
	KeepLastIfActive bool
	// Reschedule moves a still-delayed owner to the swallowed add's delay.
	Reschedule bool
}

// Outcome is what a work step's processor does.
type Outcome struct {
	// Kind is "complete", "fail", "unrecoverable", "delay" or (work steps
	// only) "rateLimited": the processor rate-limits the queue for Delay ms
	// (worker.rateLimit / Worker.RateLimit) and gives the job back
	// (Worker.RateLimitError / ErrRateLimited).
	Kind    string
	Value   any
	Message string
	Delay   int64 // ms, for "delay" and "rateLimited"
	// FetchNext (OpManualFinish, "complete", "fail" and "unrecoverable"):
	// the finish takes the next job under the same token in the same call
	// (moveToCompleted / moveToFailed with fetchNext; drover's
	// Job.CompleteAndNext, FailAndNext). On OpWork (any kind): the
	// worker's finish takes the next job in the same call, as a running
	// worker's does (Node's processJob with fetchNext; a drover Worker
	// whose result write fetches), and that job runs too, with the same
	// outcome, its own finish fetching none (the worker is closing).
	FetchNext bool
}

// Program is a seeded sequence of steps.
type Program struct {
	Seed  int64
	Steps []Step
	// Manual, when set, are the options of the workers that take and end
	// jobs by hand (OpManualTake, OpManualFinish) on both sides.
	Manual *ManualWorker
	// Defaults, when set, are the queue's default job options (only the
	// option fields count): Node's Queue defaultJobOptions, which its add,
	// addBulk and upsertJobScheduler merge under a job's own options, and
	// FlowProducer.add's queuesOptions for the program's queue; drover's
	// QueueOptions.DefaultJobOptions and FlowProducerOptions.
	// DefaultJobOptions for the producer of OpAddFlow and of parent-linked
	// adds. FlowProducer.addBulk takes no queuesOptions: OpAddFlows adds
	// without defaults on both sides.
	Defaults *Add
	// OtherDefaults, when set, are OtherQueueName's default job options,
	// as Defaults are the program's queue's: Node's Queue of that name
	// and FlowProducer.add's queuesOptions for it, drover's Queue of it
	// and its entry in FlowProducerOptions.DefaultJobOptions. They apply
	// to the jobs added there (lone adds, flow jobs of OpAddFlow), not to
	// the program's queue.
	OtherDefaults *Add
	// EventsMaxLen, when not 0, caps both queues' events streams: Node's
	// streams.events.maxLen QueueOption (written into meta as the Queue
	// starts), drover's Queue.SetEventsMaxLen. Every event a script
	// writes then trims the stream (XADD MAXLEN ~, whole stream nodes:
	// the runner's Redis keeps 4 entries per node, so a program's stream
	// is trimmed, and trimmed alike in both runs).
	EventsMaxLen int
	// AddChunk, when not 0, is drover's QueueOptions.AddBulkChunk for both
	// queues: AddBulk sends its jobs in calls of that many (a call of
	// plain adds only goes to addPlainJobs, one with any other to
	// addJobs), and Queue.Add's group commit batches at most that many.
	// Node has no such option; its addBulk is one call a job.
	AddChunk int
}

// ManualWorker are the options of a program's manual workers: metrics
// (maxDataPoints; 0: none), retention (KeepJobs objects) for jobs
// without their own and a rate limiter of LimiterMax takes per
// LimiterDuration (0: none), which their takes and fetchNext finishes
// count.
type ManualWorker struct {
	Metrics                        int
	RemoveOnComplete, RemoveOnFail *Retention
	LimiterMax                     int
}

// NodeOpts are the options as a BullMQ Worker takes them.
func (m *ManualWorker) NodeOpts() map[string]any {
	o := map[string]any{}
	if m.Metrics > 0 {
		o["metrics"] = map[string]any{"maxDataPoints": m.Metrics}
	}
	if m.RemoveOnComplete != nil {
		o["removeOnComplete"] = m.RemoveOnComplete.node()
	}
	if m.RemoveOnFail != nil {
		o["removeOnFail"] = m.RemoveOnFail.node()
	}
	if m.LimiterMax > 0 {
		o["limiter"] = NodeLimiter(m.LimiterMax)
	}
	return o
}

// NodeLimiter is a limiter of max takes per LimiterDuration as a BullMQ
// Worker takes it.
func NodeLimiter(max int) map[string]any {
	return map[string]any{"max": max, "duration": LimiterDuration}
}

// DroverLimiter is the same limiter as drover's WorkerOptions.Limiter.
func DroverLimiter(max int) *drover.RateLimit {
	return &drover.RateLimit{Max: max, Duration: time.Duration(LimiterDuration) * time.Millisecond}
}

// Apply sets the options on drover's WorkerOptions.
func (m *ManualWorker) Apply(o *drover.WorkerOptions) {
	if m.Metrics > 0 {
		o.Metrics = &drover.MetricsOptions{MaxDataPoints: m.Metrics}
	}
	if m.RemoveOnComplete != nil {
		o.RemoveOnComplete = m.RemoveOnComplete.drover()
	}
	if m.RemoveOnFail != nil {
		o.RemoveOnFail = m.RemoveOnFail.drover()
	}
	if m.LimiterMax > 0 {
		o.Limiter = DroverLimiter(m.LimiterMax)
	}
}

// otherQueueOps are the operations Step.OtherQueue moves to
// OtherQueueName: a lone add (a job there, with or without a parent
// link), work, stalls and stalled checks, every job step whose target may
// be a flow child there (OpManualWaitChildren: the job its child option
// names), the queue steps whose scripts walk a flow across queues or read
// the queue's states, and manual takes (the finishes that follow end each
// taken job in its own queue). Not the other adds (a flow child's queue is
// its Add.OtherQueue), schedulers, deduplication and the global limits:
// the program's queue has them.
var otherQueueOps = map[Op]bool{
	OpAdd: true, OpWork: true, OpStall: true, OpCheckStalled: true, OpRetry: true, OpRetryJobs: true, OpPromote: true, OpPromoteJobs: true, OpChangeDelay: true,
	OpChangePriority: true, OpRemove: true, OpDrain: true, OpClean: true, OpObliterate: true, OpPause: true,
	OpResume: true, OpProgress: true, OpLog: true, OpUpdateData: true, OpClearLogs: true,
	OpRemoveChildDependency: true, OpRemoveUnprocessedChildren: true, OpJobRemoveDedupKey: true,
	OpUpdateJobProgress: true, OpManualTake: true, OpManualWaitChildren: true, OpGetCounts: true, OpGetJobs: true, OpGetJobIDs: true, OpGetJob: true, OpFlowRead: true, OpGetLogs: true,
	OpGetCountByTypes: true, OpIsPaused: true, OpGetFlow: true, OpGetMetrics: true,
}

// altPrefixOps are the operations Step.AltPrefix moves under
// AltPrefixOf's prefix: the job steps, reads and writes of one job, and
// the work and queue steps whose effects stay in the queue or reach the
// parent under the run's prefix (no removal cascades there: their
// events are compared sorted in the run's streams only).
var altPrefixOps = map[Op]bool{
	OpWork: true, OpRetry: true, OpRetryJobs: true, OpPromote: true, OpPromoteJobs: true, OpChangeDelay: true, OpChangePriority: true,
	OpRemove: true, OpProgress: true, OpLog: true, OpUpdateData: true, OpClearLogs: true, OpRemoveChildDependency: true,
	OpUpdateJobProgress: true, OpGetCounts: true, OpGetJobs: true, OpGetJobIDs: true, OpGetJob: true, OpFlowRead: true, OpGetLogs: true,
	OpGetCountByTypes: true,
}

// OnAltPrefix reports whether s acts under AltPrefixOf's prefix
// (Step.AltPrefix on an operation that may).
func (s *Step) OnAltPrefix() bool { return s.AltPrefix && altPrefixOps[s.Op] }

// OnOtherQueue reports whether s acts on OtherQueueName (Step.OtherQueue
// on an operation that may).
func (s *Step) OnOtherQueue() bool { return s.OtherQueue && otherQueueOps[s.Op] }

// NodeOnly reports whether only Node can perform the step: drover has no
// API for it. An add with a lifo that is not a bool is (Add.LIFORaw); a bulk add with a parent link is (drover's AddBulk takes no
// parent; its FlowProducer.AddBulk would give each job a UUID), and so is
// a scheduler whose template gives the backoff as a plain number: Node
// stores a template's opts as given, and JobOptions.Backoff has no
// shorthand form (it stores {type, delay}, which both workers read alike),
// and so is a template with a job id, delay, timestamp or deduplication:
// the scheduler decides them, Node stores them in the template and
// drover's UpsertJobScheduler refuses them (deliberate, README), so
// Node's upsert makes the scheduler and either side's workers make its
// runs from that template.
// OpOrphan, OpAgeFinished, OpSetIDCounter and OpStaleHash are the
// harness's own, done alike in both runs. A global
// concurrency of 0 is Node's: drover's SetGlobalConcurrency refuses it
// (deliberate, README), so Node stores it and drover's workers and reads
// meet it.
func (s *Step) NodeOnly() bool {
	if s.Op == OpOrphan || s.Op == OpAgeFinished || s.Op == OpSetIDCounter || s.Op == OpStaleHash || s.Op == OpSetGlobalConcurrency && s.Limit == 0 {
		return true
	}
	for _, a := range s.adds() {
		if a.LIFORaw != nil {
			return true // a lifo that is not a bool: Node's
		}
	}
	if s.Op == OpAdd && s.Add.Parent != "" && s.Add.JobID == "" {
		// drover adds it with its FlowProducer, which would give it a UUID
		// (the generator gives drover's such adds a custom id).
		return true
	}
	if s.Op == OpUpsertScheduler {
		a := s.Add
		return a.Backoff != nil && a.Backoff.Number || a.JobID != "" || a.Delay != 0 || a.Dedup != nil || a.TimestampAgo != 0
	}
	if s.Op != OpAddBulk {
		return false
	}
	for _, a := range s.adds() {
		if a.Parent != "" {
			return true
		}
	}
	return false
}

// adds are the jobs the step adds, every level of a flow's tree included.
func (s *Step) adds() []*Add {
	var out []*Add
	var walk func(a *Add)
	walk = func(a *Add) {
		out = append(out, a)
		for _, c := range a.Children {
			walk(c)
		}
	}
	if s.Add != nil {
		walk(s.Add)
	}
	for _, c := range s.Children {
		walk(c)
	}
	return out
}

// AltPrefixOf is the key prefix of a run's flow children with
// Add.AltPrefix: the run's prefix and ":alt" (its keys are the run's
// keys of a queue named alt:<queue>, and its state is dumped and
// compared with the run's).
func AltPrefixOf(prefix string) string { return prefix + ":" + altRel }

// altRel is AltPrefixOf's prefix relative to the run's.
const altRel = "alt"

// NoName, as an Add's JobName, gives the job the empty name.
const NoName = "\x00none"

// JobNameOf is the name the job is added with: JobName when set ("" for
// NoName), else Name.
func (a *Add) JobNameOf() string {
	switch a.JobName {
	case "":
		return a.Name
	case NoName:
		return ""
	}
	return a.JobName
}

// Payload is the job's data as both sides are handed it: DataRaw as
// json.RawMessage when set, else Data.
func (a *Add) Payload() any {
	if a.DataRaw != "" {
		return json.RawMessage(a.DataRaw)
	}
	return a.Data
}

// NodeOpts are the add's options as Queue.add takes them.
func (a *Add) NodeOpts() map[string]any {
	m := map[string]any{}
	if a.JobID != "" {
		m["jobId"] = a.JobID
	}
	if a.Delay > 0 {
		m["delay"] = a.Delay
	}
	if a.Priority != 0 {
		m["priority"] = a.Priority
	}
	if a.LIFO {
		m["lifo"] = true
	}
	if a.LIFORaw != nil {
		m["lifo"] = a.LIFORaw
	}
	if a.Attempts != 0 {
		m["attempts"] = a.Attempts
	}
	if b := a.Backoff; b != nil {
		if b.Number {
			m["backoff"] = b.Delay
		} else {
			bo := map[string]any{"type": b.Type, "delay": b.Delay}
			if b.Jitter > 0 {
				bo["jitter"] = b.Jitter
			}
			m["backoff"] = bo
		}
	}
	if r := a.RemoveOnComplete; r != nil {
		m["removeOnComplete"] = r.node()
	}
	if r := a.RemoveOnFail; r != nil {
		m["removeOnFail"] = r.node()
	}
	if d := a.Dedup; d != nil {
		de := map[string]any{"id": d.ID}
		if d.TTL > 0 {
			de["ttl"] = d.TTL
		}
		if d.Extend {
			de["extend"] = true
		}
		if d.Replace {
			de["replace"] = true
		}
		if d.KeepLastIfActive {
			de["keepLastIfActive"] = true
		}
		if d.Reschedule {
			de["reschedule"] = true
		}
		m["deduplication"] = de
	}
	if a.KeepLogs != 0 {
		m["keepLogs"] = a.KeepLogs
	}
	if a.SizeLimit != 0 {
		m["sizeLimit"] = a.SizeLimit
	}
	if a.StackTraceLimit != 0 {
		m["stackTraceLimit"] = a.StackTraceLimit
	}
	if a.TelemetryMeta != "" || a.OmitContext {
		tm := map[string]any{}
		if a.TelemetryMeta != "" {
			tm["metadata"] = a.TelemetryMeta
		}
		if a.OmitContext {
			tm["omitContext"] = true
		}
		m["telemetry"] = tm
	}
	if a.OnParentFailure != "" {
		m[a.OnParentFailure] = true
	}
	return m
}

// Node is the retention as Node's options take it.
func (r *Retention) Node() any { return r.node() }

// Drover is the retention as drover's options take it.
func (r *Retention) Drover() *drover.Retention { return r.drover() }

func (r *Retention) node() any {
	switch {
	case r.Bool != nil:
		return *r.Bool
	case !r.Object && r.Count != nil:
		return *r.Count
	}
	o := map[string]any{}
	if r.Age > 0 {
		o["age"] = r.Age
	}
	if r.Count != nil {
		o["count"] = *r.Count
	}
	if r.Limit > 0 {
		o["limit"] = r.Limit
	}
	return o
}

// drover is the same shape as drover's Retention: the short forms as its
// fields alone, the object form with Object (a count of 0 is Remove).
func (r *Retention) drover() *drover.Retention {
	switch {
	case r.Bool != nil:
		return &drover.Retention{Remove: *r.Bool}
	case !r.Object && r.Count != nil:
		return &drover.Retention{Count: *r.Count, Remove: *r.Count == 0}
	}
	d := &drover.Retention{Object: true, Age: time.Duration(r.Age) * time.Second, Limit: r.Limit}
	if r.Count != nil {
		d.Count = *r.Count
		d.Remove = *r.Count == 0
	}
	return d
}

// DroverOpts are the add's options as drover's Queue.Add takes them.
func (a *Add) DroverOpts() *drover.JobOptions {
	o := &drover.JobOptions{
		JobID: a.JobID, Delay: time.Duration(a.Delay) * time.Millisecond, Priority: a.Priority, LIFO: a.LIFO,
		Attempts: a.Attempts, KeepLogs: a.KeepLogs, StackTraceLimit: a.StackTraceLimit, SizeLimit: a.SizeLimit,
	}
	if a.TelemetryMeta != "" || a.OmitContext {
		o.Telemetry = &drover.Telemetry{Metadata: a.TelemetryMeta, OmitContext: a.OmitContext}
	}
	if b := a.Backoff; b != nil {
		typ := b.Type
		if b.Number {
			typ = drover.BackoffFixed
		}
		o.Backoff = &drover.Backoff{Type: typ, Delay: time.Duration(b.Delay) * time.Millisecond, Jitter: b.Jitter}
	}
	if r := a.RemoveOnComplete; r != nil {
		o.RemoveOnComplete = r.drover()
	}
	if r := a.RemoveOnFail; r != nil {
		o.RemoveOnFail = r.drover()
	}
	if d := a.Dedup; d != nil {
		o.Deduplication = &drover.Deduplication{ID: d.ID, TTL: time.Duration(d.TTL) * time.Millisecond, Extend: d.Extend, Replace: d.Replace,
			KeepLastIfActive: d.KeepLastIfActive, Reschedule: d.Reschedule}
	}
	o.ParentPolicy = parentPolicies[a.OnParentFailure]
	return o
}

var parentPolicies = map[string]drover.ParentPolicy{
	"failParentOnFailure": drover.FailParent, "continueParentOnFailure": drover.ContinueParent,
	"ignoreDependencyOnFailure": drover.IgnoreDependency, "removeDependencyOnFailure": drover.RemoveDependency,
}

// String renders the program one step a line, for logs.
func (p *Program) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "program seed %d, %d steps:\n", p.Seed, len(p.Steps))
	if m := p.Manual; m != nil {
		fmt.Fprintf(&b, "  manual workers: %v\n", m.NodeOpts())
	}
	if d := p.Defaults; d != nil {
		fmt.Fprintf(&b, "  default job options: %v\n", d.NodeOpts())
	}
	if d := p.OtherDefaults; d != nil {
		fmt.Fprintf(&b, "  default job options of %s: %v\n", OtherQueueName, d.NodeOpts())
	}
	if p.EventsMaxLen != 0 {
		fmt.Fprintf(&b, "  events streams capped at %d\n", p.EventsMaxLen)
	}
	if p.AddChunk != 0 {
		fmt.Fprintf(&b, "  drover adds in calls of %d\n", p.AddChunk)
	}
	for i := range p.Steps {
		fmt.Fprintf(&b, "  %2d %s\n", i, p.Steps[i].String())
	}
	return b.String()
}

// String renders one step compactly.
func (s *Step) String() string {
	var parts []string
	parts = append(parts, fmt.Sprintf("[%s] %s", s.By, s.Op))
	if s.Job != "" {
		parts = append(parts, "job="+s.Job)
	}
	if s.Add != nil {
		parts = append(parts, s.Add.String())
	}
	var tree func(a *Add, depth int)
	tree = func(a *Add, depth int) {
		parts = append(parts, []string{"", "grand", "great-grand"}[min(depth, 2)]+"child "+a.String())
		for _, c := range a.Children {
			tree(c, depth+1)
		}
	}
	for _, c := range s.Children {
		tree(c, 0)
	}
	if s.Outcome != nil {
		parts = append(parts, fmt.Sprintf("%+v", *s.Outcome))
	}
	if s.State != "" {
		parts = append(parts, "state="+s.State)
	}
	if s.ResetMade || s.ResetStarted {
		parts = append(parts, fmt.Sprintf("reset=%v/%v", s.ResetMade, s.ResetStarted))
	}
	if s.Op == OpChangeDelay || s.Op == OpClean || s.Op == OpSetGlobalRateLimit || s.Op == OpRateLimit || (s.Op == OpRetryJobs && s.Delay != 0) {
		parts = append(parts, fmt.Sprintf("delay=%d", s.Delay))
	}
	if s.OtherQueue {
		parts = append(parts, "queue="+OtherQueueName)
	}
	if s.AltPrefix {
		parts = append(parts, "prefix=alt")
	}
	if s.Op == OpChangePriority {
		parts = append(parts, fmt.Sprintf("priority=%d lifo=%v", s.Priority, s.LIFO))
	}
	if (s.Op == OpGetJobs || s.Op == OpGetJobIDs || s.Op == OpGetSchedulers || s.Op == OpGetLogs || s.Op == OpGetMetrics || s.Op == OpGetFlow || s.Op == OpRemoveOrphanedJobs ||
		s.Op == OpFlowRead) &&
		(s.Priority != 0 || s.LIFO) {
		parts = append(parts, fmt.Sprintf("start/depth=%d desc=%v", s.Priority, s.LIFO))
	}
	if s.Read != "" {
		parts = append(parts, "read="+string(s.Read))
	}
	if s.Metrics != 0 {
		parts = append(parts, fmt.Sprintf("metrics=%d", s.Metrics))
	}
	if len(s.Types) > 0 {
		parts = append(parts, fmt.Sprintf("types=%v", s.Types))
	}
	if s.KeepChildren {
		parts = append(parts, "keepChildren")
	}
	if s.NoForce {
		parts = append(parts, "noForce")
	}
	if r := s.WorkerRemoveOnComplete; r != nil {
		parts = append(parts, fmt.Sprintf("worker removeOnComplete=%v", r.node()))
	}
	if r := s.WorkerRemoveOnFail; r != nil {
		parts = append(parts, fmt.Sprintf("worker removeOnFail=%v", r.node()))
	}
	if s.LimiterMax != 0 {
		parts = append(parts, fmt.Sprintf("worker limiter=%d/h", s.LimiterMax))
	}
	if s.MaxStarted != 0 {
		parts = append(parts, fmt.Sprintf("worker maxStartedAttempts=%d", s.MaxStarted))
	}
	if s.Concurrency != 0 {
		parts = append(parts, fmt.Sprintf("worker concurrency=%d", s.Concurrency))
	}
	if s.Limit != 0 || s.Op == OpTrimEvents {
		parts = append(parts, fmt.Sprintf("limit=%d", s.Limit))
	}
	if s.DedupID != "" {
		parts = append(parts, "dedup="+s.DedupID)
	}
	if s.Token != "" {
		parts = append(parts, "token="+s.Token)
	}
	if s.Delayed {
		parts = append(parts, "delayed")
	}
	if s.Value != nil {
		parts = append(parts, fmt.Sprintf("value=%v", s.Value))
	}
	if s.Line != "" {
		parts = append(parts, fmt.Sprintf("line=%q", s.Line))
	}
	if c := s.Scheduler; c != nil {
		parts = append(parts, fmt.Sprintf("scheduler=%+v", *c))
	}
	return strings.Join(parts, " ")
}

// GoString renders the program as a Go composite literal of this package,
// ready to paste into a regression test.
func (p *Program) GoString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "difftest.Program{Seed: %d, Steps: []difftest.Step{\n", p.Seed)
	for i := range p.Steps {
		fmt.Fprintf(&b, "\t%s,\n", p.Steps[i].GoString())
	}
	b.WriteString("}")
	if m := p.Manual; m != nil {
		f := []string{fmt.Sprintf("Metrics: %d", m.Metrics)}
		if r := m.RemoveOnComplete; r != nil {
			f = append(f, "RemoveOnComplete: "+r.goString())
		}
		if r := m.RemoveOnFail; r != nil {
			f = append(f, "RemoveOnFail: "+r.goString())
		}
		if m.LimiterMax != 0 {
			f = append(f, fmt.Sprintf("LimiterMax: %d", m.LimiterMax))
		}
		b.WriteString(", Manual: &difftest.ManualWorker{" + strings.Join(f, ", ") + "}")
	}
	if d := p.Defaults; d != nil {
		b.WriteString(", Defaults: " + d.goString())
	}
	if d := p.OtherDefaults; d != nil {
		b.WriteString(", OtherDefaults: " + d.goString())
	}
	if p.EventsMaxLen != 0 {
		fmt.Fprintf(&b, ", EventsMaxLen: %d", p.EventsMaxLen)
	}
	if p.AddChunk != 0 {
		fmt.Fprintf(&b, ", AddChunk: %d", p.AddChunk)
	}
	b.WriteString("}")
	return b.String()
}

var implNames = map[Impl]string{Node: "difftest.Node", Drover: "difftest.Drover"}

var opNames = map[Op]string{
	OpAdd: "OpAdd", OpWork: "OpWork", OpStall: "OpStall", OpCheckStalled: "OpCheckStalled", OpRetry: "OpRetry",
	OpRetryJobs: "OpRetryJobs", OpPromote: "OpPromote", OpPromoteJobs: "OpPromoteJobs", OpChangeDelay: "OpChangeDelay",
	OpChangePriority: "OpChangePriority", OpRemove: "OpRemove", OpDrain: "OpDrain", OpClean: "OpClean",
	OpObliterate: "OpObliterate", OpPause: "OpPause", OpResume: "OpResume", OpProgress: "OpProgress", OpLog: "OpLog",
	OpAddFlow: "OpAddFlow", OpAddBulk: "OpAddBulk", OpUpdateData: "OpUpdateData",
	OpUpsertScheduler: "OpUpsertScheduler", OpRemoveScheduler: "OpRemoveScheduler",
	OpClearLogs: "OpClearLogs", OpRemoveChildDependency: "OpRemoveChildDependency",
	OpRemoveUnprocessedChildren: "OpRemoveUnprocessedChildren", OpRemoveDedupKey: "OpRemoveDedupKey",
	OpJobRemoveDedupKey: "OpJobRemoveDedupKey", OpSetGlobalConcurrency: "OpSetGlobalConcurrency",
	OpRemoveGlobalConcurrency: "OpRemoveGlobalConcurrency", OpManualTake: "OpManualTake", OpManualFinish: "OpManualFinish",
	OpSetGlobalRateLimit: "OpSetGlobalRateLimit", OpRemoveGlobalRateLimit: "OpRemoveGlobalRateLimit",
	OpRateLimit: "OpRateLimit", OpRemoveRateLimitKey: "OpRemoveRateLimitKey", OpTrimEvents: "OpTrimEvents",
	OpManualWaitChildren: "OpManualWaitChildren", OpGetScheduler: "OpGetScheduler", OpGetSchedulers: "OpGetSchedulers",
	OpGetDedupJobID: "OpGetDedupJobID", OpGetRateLimitTTL: "OpGetRateLimitTTL", OpGetCountsPerPriority: "OpGetCountsPerPriority",
	OpGetLimits: "OpGetLimits", OpFlowRead: "OpFlowRead", OpGetJob: "OpGetJob",
	OpGetLogs: "OpGetLogs", OpGetCountByTypes: "OpGetCountByTypes", OpIsPaused: "OpIsPaused", OpGetFlow: "OpGetFlow",
	OpGetMetrics: "OpGetMetrics", OpAddFlows: "OpAddFlows", OpOrphan: "OpOrphan", OpAgeFinished: "OpAgeFinished", OpRemoveOrphanedJobs: "OpRemoveOrphanedJobs",
	OpUpdateJobProgress: "OpUpdateJobProgress", OpGetMeta: "OpGetMeta", OpGetSchedulersCount: "OpGetSchedulersCount",
	OpExportMetrics: "OpExportMetrics", OpAddBurst: "OpAddBurst", OpAddMixedBurst: "OpAddMixedBurst", OpGetJobIDs: "OpGetJobIDs", OpWaitFinished: "OpWaitFinished", OpSetIDCounter: "OpSetIDCounter", OpStaleHash: "OpStaleHash",
}

var readNames = map[FlowRead]string{
	ReadChildrenValues: "difftest.ReadChildrenValues", ReadDependencies: "difftest.ReadDependencies",
	ReadDependenciesCount: "difftest.ReadDependenciesCount", ReadIgnoredChildrenFailures: "difftest.ReadIgnoredChildrenFailures",
	ReadFailedChildrenValues: "difftest.ReadFailedChildrenValues", ReadDependenciesPage: "difftest.ReadDependenciesPage",
	ReadDependenciesCountOf: "difftest.ReadDependenciesCountOf",
}

// GoString renders the step as a Go composite literal.
func (s *Step) GoString() string {
	f := []string{"Op: difftest." + opNames[s.Op], "By: " + implNames[s.By]}
	if s.Job != "" {
		f = append(f, fmt.Sprintf("Job: %q", s.Job))
	}
	if s.Add != nil {
		f = append(f, "Add: "+s.Add.goString())
	}
	if len(s.Children) > 0 {
		cs := make([]string, len(s.Children))
		for i, c := range s.Children {
			cs[i] = c.goString()
		}
		f = append(f, "Children: []*difftest.Add{"+strings.Join(cs, ", ")+"}")
	}
	if s.OtherQueue {
		f = append(f, "OtherQueue: true")
	}
	if s.AltPrefix {
		f = append(f, "AltPrefix: true")
	}
	if o := s.Outcome; o != nil {
		of := []string{fmt.Sprintf("Kind: %q", o.Kind)}
		if o.Value != nil {
			of = append(of, "Value: "+goValue(o.Value))
		}
		if o.Message != "" {
			of = append(of, fmt.Sprintf("Message: %q", o.Message))
		}
		if o.Delay != 0 {
			of = append(of, fmt.Sprintf("Delay: %d", o.Delay))
		}
		if o.FetchNext {
			of = append(of, "FetchNext: true")
		}
		f = append(f, "Outcome: &difftest.Outcome{"+strings.Join(of, ", ")+"}")
	}
	if s.State != "" {
		f = append(f, fmt.Sprintf("State: %q", s.State))
	}
	if s.ResetMade {
		f = append(f, "ResetMade: true")
	}
	if s.ResetStarted {
		f = append(f, "ResetStarted: true")
	}
	if s.Delay != 0 {
		f = append(f, fmt.Sprintf("Delay: %d", s.Delay))
	}
	if s.Priority != 0 {
		f = append(f, fmt.Sprintf("Priority: %d", s.Priority))
	}
	if s.LIFO {
		f = append(f, "LIFO: true")
	}
	if s.Limit != 0 || s.Op == OpTrimEvents {
		f = append(f, fmt.Sprintf("Limit: %d", s.Limit))
	}
	if s.DedupID != "" {
		f = append(f, fmt.Sprintf("DedupID: %q", s.DedupID))
	}
	if s.Token != "" {
		f = append(f, fmt.Sprintf("Token: %q", s.Token))
	}
	if s.Delayed {
		f = append(f, "Delayed: true")
	}
	if s.Value != nil {
		f = append(f, "Value: "+goValue(s.Value))
	}
	if s.Line != "" {
		f = append(f, fmt.Sprintf("Line: %q", s.Line))
	}
	if c := s.Scheduler; c != nil {
		pattern := ""
		if c.Pattern != "" {
			pattern = fmt.Sprintf(", Pattern: %q", c.Pattern)
		}
		end := ""
		if c.End != 0 {
			end = fmt.Sprintf(", End: %d", c.End)
		}
		if c.Immediately {
			end += ", Immediately: true"
		}
		if c.TZ != "" {
			end += fmt.Sprintf(", TZ: %q", c.TZ)
		}
		if c.Offset != 0 {
			end += fmt.Sprintf(", Offset: %d", c.Offset)
		}
		f = append(f, fmt.Sprintf("Scheduler: &difftest.Scheduler{ID: %q, Every: %d%s, Start: %d, Limit: %d%s}", c.ID, c.Every, pattern, c.Start, c.Limit, end))
	}
	if s.Read != "" {
		f = append(f, "Read: "+readNames[s.Read])
	}
	if s.Metrics != 0 {
		f = append(f, fmt.Sprintf("Metrics: %d", s.Metrics))
	}
	if len(s.Types) > 0 {
		f = append(f, fmt.Sprintf("Types: %#v", s.Types))
	}
	if s.KeepChildren {
		f = append(f, "KeepChildren: true")
	}
	if s.NoForce {
		f = append(f, "NoForce: true")
	}
	if r := s.WorkerRemoveOnComplete; r != nil {
		f = append(f, "WorkerRemoveOnComplete: "+r.goString())
	}
	if r := s.WorkerRemoveOnFail; r != nil {
		f = append(f, "WorkerRemoveOnFail: "+r.goString())
	}
	if s.LimiterMax != 0 {
		f = append(f, fmt.Sprintf("LimiterMax: %d", s.LimiterMax))
	}
	if s.MaxStarted != 0 {
		f = append(f, fmt.Sprintf("MaxStarted: %d", s.MaxStarted))
	}
	if s.Concurrency != 0 {
		f = append(f, fmt.Sprintf("Concurrency: %d", s.Concurrency))
	}
	return "{" + strings.Join(f, ", ") + "}"
}

// String renders the add compactly.
func (a *Add) String() string {
	s := fmt.Sprintf("%s %v", a.Name, a.NodeOpts())
	if a.OtherQueue {
		s = a.Name + "@" + OtherQueueName + s[len(a.Name):]
	}
	if a.AltPrefix {
		s = "alt:" + s
	}
	if a.Parent != "" {
		s += " parent=" + a.Parent
		if a.ParentInOther {
			s += "@" + OtherQueueName
		}
	}
	if len(a.Data) > 1 {
		s += fmt.Sprintf(" data=%v", a.Data)
	}
	if a.DataRaw != "" {
		s += " data=" + a.DataRaw
	}
	if a.JobName != "" {
		s += fmt.Sprintf(" name=%q", a.JobNameOf())
	}
	if a.TimestampAgo != 0 {
		s += fmt.Sprintf(" timestamp=-%dms", a.TimestampAgo)
	}
	return s
}

func (a *Add) goString() string {
	f := []string{fmt.Sprintf("Name: %q", a.Name)}
	if a.Data != nil {
		f = append(f, "Data: "+goValue(a.Data))
	}
	if a.DataRaw != "" {
		f = append(f, fmt.Sprintf("DataRaw: %q", a.DataRaw))
	}
	if a.JobName != "" {
		f = append(f, fmt.Sprintf("JobName: %q", a.JobName))
	}
	if a.JobID != "" {
		f = append(f, fmt.Sprintf("JobID: %q", a.JobID))
	}
	if a.Delay != 0 {
		f = append(f, fmt.Sprintf("Delay: %d", a.Delay))
	}
	if a.Priority != 0 {
		f = append(f, fmt.Sprintf("Priority: %d", a.Priority))
	}
	if a.LIFO {
		f = append(f, "LIFO: true")
	}
	if a.LIFORaw != nil {
		f = append(f, "LIFORaw: "+goValue(a.LIFORaw))
	}
	if a.Attempts != 0 {
		f = append(f, fmt.Sprintf("Attempts: %d", a.Attempts))
	}
	if b := a.Backoff; b != nil {
		bf := []string{fmt.Sprintf("Type: %q", b.Type), fmt.Sprintf("Delay: %d", b.Delay)}
		if b.Jitter != 0 {
			bf = append(bf, fmt.Sprintf("Jitter: %v", b.Jitter))
		}
		if b.Number {
			bf = append(bf, "Number: true")
		}
		f = append(f, "Backoff: &difftest.Backoff{"+strings.Join(bf, ", ")+"}")
	}
	if r := a.RemoveOnComplete; r != nil {
		f = append(f, "RemoveOnComplete: "+r.goString())
	}
	if r := a.RemoveOnFail; r != nil {
		f = append(f, "RemoveOnFail: "+r.goString())
	}
	if d := a.Dedup; d != nil {
		df := []string{fmt.Sprintf("ID: %q", d.ID)}
		if d.TTL != 0 {
			df = append(df, fmt.Sprintf("TTL: %d", d.TTL))
		}
		if d.Extend {
			df = append(df, "Extend: true")
		}
		if d.Replace {
			df = append(df, "Replace: true")
		}
		if d.KeepLastIfActive {
			df = append(df, "KeepLastIfActive: true")
		}
		if d.Reschedule {
			df = append(df, "Reschedule: true")
		}
		f = append(f, "Dedup: &difftest.Dedup{"+strings.Join(df, ", ")+"}")
	}
	if a.TelemetryMeta != "" {
		f = append(f, fmt.Sprintf("TelemetryMeta: %q", a.TelemetryMeta))
	}
	if a.OmitContext {
		f = append(f, "OmitContext: true")
	}
	if a.KeepLogs != 0 {
		f = append(f, fmt.Sprintf("KeepLogs: %d", a.KeepLogs))
	}
	if a.StackTraceLimit != 0 {
		f = append(f, fmt.Sprintf("StackTraceLimit: %d", a.StackTraceLimit))
	}
	if a.SizeLimit != 0 {
		f = append(f, fmt.Sprintf("SizeLimit: %d", a.SizeLimit))
	}
	if a.TimestampAgo != 0 {
		f = append(f, fmt.Sprintf("TimestampAgo: %d", a.TimestampAgo))
	}
	if a.Parent != "" {
		f = append(f, fmt.Sprintf("Parent: %q", a.Parent))
	}
	if a.ParentInOther {
		f = append(f, "ParentInOther: true")
	}
	if a.OnParentFailure != "" {
		f = append(f, fmt.Sprintf("OnParentFailure: %q", a.OnParentFailure))
	}
	if a.OtherQueue {
		f = append(f, "OtherQueue: true")
	}
	if a.AltPrefix {
		f = append(f, "AltPrefix: true")
	}
	if len(a.Children) > 0 {
		cs := make([]string, len(a.Children))
		for i, c := range a.Children {
			cs[i] = c.goString()
		}
		f = append(f, "Children: []*difftest.Add{"+strings.Join(cs, ", ")+"}")
	}
	return "&difftest.Add{" + strings.Join(f, ", ") + "}"
}

func (r *Retention) goString() string {
	var f []string
	if r.Bool != nil {
		f = append(f, fmt.Sprintf("Bool: difftest.Ptr(%v)", *r.Bool))
	}
	if r.Count != nil {
		f = append(f, fmt.Sprintf("Count: difftest.Ptr(%d)", *r.Count))
	}
	if r.Object {
		f = append(f, "Object: true")
	}
	if r.Age != 0 {
		f = append(f, fmt.Sprintf("Age: %d", r.Age))
	}
	if r.Limit != 0 {
		f = append(f, fmt.Sprintf("Limit: %d", r.Limit))
	}
	return "&difftest.Retention{" + strings.Join(f, ", ") + "}"
}

// Ptr returns a pointer to v (for Retention literals).
func Ptr[T any](v T) *T { return &v }

// goValue renders a JSON-like value (maps, slices, strings, numbers, bools)
// as a Go literal.
func goValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("%q", t)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%q: %s", k, goValue(t[k]))
		}
		return "map[string]any{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = goValue(x)
		}
		return "[]any{" + strings.Join(parts, ", ") + "}"
	default:
		return fmt.Sprintf("%#v", t)
	}
}
