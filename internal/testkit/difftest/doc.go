// Package difftest is drover's randomized differential tester against Node
// BullMQ: a seeded generator of programs, the one list of accepted
// differences, the state normalisation and a shrinker. The runner that
// executes programs is TestDifferentialRandom in internal/interoptest
// (`make test-differential`; `make test` runs a fixed set of seeds).
//
// # Programs
//
// A [Program] is a sequence of [Step]s over the surface drover shares with
// BullMQ: adds with random option combinations ([Add]: delay, priority
// (2097151, the lowest, too), LIFO, custom ids with duplicates and odd
// characters (a:b:c, spaces, /, %, +5, -0; x:y, 0 and 0:5, which both
// refuse; with Config.Known, ids that name a queue key, which only drover
// refuses), names with odd characters or none, data that is no object
// (a string, number, bool, null, array, an object whose keys
// JSON.stringify reorders: [Add].DataRaw), the telemetry option
// (metadata, omitContext), attempts with fixed, exponential
// (jitter) or custom backoff, retention in its shapes, deduplication in
// its modes with reschedule, keepLogs, stackTraceLimit, sizeLimit, and,
// Node's only, a lifo that is not a bool: "false", "0", "", 0, 1), bulks
// of mostly plain adds (no custom id, delay, priority, lifo or
// deduplication: drover's addPlainJobs) among others, sent by drover in
// calls of 1 to 3 jobs ([Program].AddChunk: pure and mixed calls), bursts
// of copies of one job added at once ([OpAddBurst]: drover's from
// goroutines released together, batched by Queue.Add's group commit),
// mixed bursts of distinct plain and custom-id jobs added at once
// ([OpAddMixedBurst]: Node adds them in the order drover's group commit
// took them, read from the mixed run's events stream),
// harness steps that set the id counter (big; with Config.Known also past
// 10^14 or back below the jobs' ids) or leave a stale hash at the next
// generated id, worker
// steps that take the next
// job (of the main queue or, sometimes, of the queue of flow children in
// another queue) and complete it with a value, fail it, fail it
// unrecoverably or delay it ([Outcome]), stalls (the worker dies holding a job) and stalled
// checks, admin calls (retry with and without resets, retryJobs,
// promote, promoteJobs, changeDelay, changePriority, remove, drain, clean,
// obliterate, pause, resume, progress by job or by id
// (queue.updateJobProgress), log, updateData, global concurrency (0
// included), global rate limit, queue.rateLimit and removeRateLimitKey,
// trimEvents, removeOrphanedJobs after a harness step that leaves a
// finished job's keys without its id in a set; a harness step that ages
// every finished job by an hour and a half, so that retention ages, clean
// graces and retryJobs' cut-off of an hour reach them), reads whose answers are
// compared (getJobCounts, getJobs ranges, from a negative start too, and
// the same ranges' ids alone (getRanges / GetJobIDs), waitUntilFinished on
// a finished, waiting or missing job,
// getJobScheduler and getJobSchedulers pages, getJobSchedulersCount,
// getMeta, exportPrometheusMetrics, getDeduplicationJobId,
// getRateLimitTtl, getCountsPerPriority, isMaxed with the global limits, a
// job's getChildrenValues, getDependencies, getDependenciesCount and
// getIgnoredChildrenFailures (and its old name getFailedChildrenValues), a
// job's logs in ranges oldest or newest first, getJobCountByTypes,
// isPaused, FlowProducer.getFlow with a depth and maxChildren, and
// getMetrics of the metrics work steps write when their worker has the
// metrics option, on either side; work steps may also give the worker
// removeOnComplete/removeOnFail, a rate limiter (alone or beside a global
// rate limit) and maxStartedAttempts, and may run as a running worker
// does: the finish takes the next job in the same call, or the worker's
// loop takes it after a retry at once or a move to delayed, and that job
// runs too, or at concurrency 2: two jobs taken and in flight at once,
// finished in the order taken, or at concurrency 2 to 4 finishing its
// jobs together while more wait, the finishes' fetch taking the next job
// for every slot: drover's one finishJobs call, whose RPOP takes several,
// against Node's finishes one call each), obliterate with a count of jobs per call,
// manual processing (getNextJob /
// Worker.NextJob, the job's finishes, with and without fetchNext,
// moveToWaitingChildren; a program's manual workers may have metrics,
// retention and rate limiter options), flows (a parent with children, each failure policy,
// a child in a second queue, a child with children of its own; a lone job
// with a parent link, to a job of either queue; several trees in one
// FlowProducer.addBulk, three levels deep across both queues; children
// under another key prefix ([Add].AltPrefix), reached through their
// parent and by job, work and queue steps there ([Step.OnAltPrefix]:
// retry, removal, promotion, priority or delay change, progress, logs,
// data, reads, counts, retryJobs, promoteJobs, a worker of that queue
// whose finishes reach the parent under the run's prefix); a tree
// under an existing job; a remove that keeps the children), job
// schedulers (upsert with every and an offset or a cron pattern and a
// time zone, a limit and an end date, Node's with a template that carries
// a job id, delay, timestamp or deduplication, and remove; runs promoted
// and taken by either side's worker, which makes the next run), paged
// getDependencies by kind and getDependenciesCount of some kinds,
// moveToWaitingChildren with the child option, stalled checks with
// maxStalledCount 0, 1 or 2, job and queue steps on the queue of flow
// children in another queue ([Step.OnOtherQueue]: a retry, removal,
// promotion, priority or delay change, progress, log, data update,
// dependency removal or read of a child there, whose parent waits in the
// program's queue; lone adds with or without a parent link, flow roots,
// stalls and stalled checks, manual takes and the finishes of the jobs
// taken there; drain, clean, obliterate, pause, resume, retryJobs,
// promoteJobs and the counts and lists of that queue; its jobs' states
// read by both after every step), and a queue's default job options
// ([Program].Defaults, and [Program].OtherDefaults for the other queue's
// jobs: Node's defaultJobOptions and FlowProducer.add's
// queuesOptions, drover's QueueOptions and FlowProducerOptions
// DefaultJobOptions), and capped events streams ([Program].EventsMaxLen:
// Node's streams.events.maxLen QueueOption, drover's
// Queue.SetEventsMaxLen; the runner's redis-server keeps 4 entries per
// stream node, so MAXLEN ~ trims within a program). Drover does its share of each
// through its public API: Queue.Add/AddBulk, FlowProducer.Add (FlowJob.
// Parent for a parent link), Queue.UpsertJobScheduler/RemoveJobScheduler,
// Worker, the admin methods. [Generate] makes the program of a seed; the
// same seed and generator always give the same program (a change of the
// generator changes the programs of old seeds: a campaign's seed is
// reproduced at the commit it ran at, its shrunk program anywhere).
//
// # Runs
//
// Each program runs twice, each run on a fresh key prefix of a real
// redis-server: once with Node BullMQ doing every step, once with drover
// doing the steps whose [Step].By is [Drover] and Node the rest. Worker
// steps are one job at a time: Node's Worker.getNextJob + processJob with
// no next fetch, drover's Worker writing its result without a next fetch
// (internal/seam.NoFetchOnFinish) and closed before it takes another. After
// every step the two normalised states ([Comparable], the events stream
// included) and the step results must be equal, and in the mixed run a
// Node QueueEvents and a drover QueueEvents, both reading the stream from
// its start, must have delivered the step's events alike: each event's
// name, id and fields as each hands them to a listener (progress data and
// return values parsed, delays as numbers, drover's typed fields). Time is not controlled
// (Node's scripts read Date.now()), so every generated delay, backoff and
// grace is a whole number of hours: nothing becomes due during a run, and
// due times compare to the minute. The paths where time passes (short
// delays and backoffs coming due, ttls and limiter windows ending, locks
// expiring) are TestDifferentialTimed's, in internal/interoptest (`make
// test-timed`).
//
// # Accepted differences
//
// [Deliberate] lists every difference the comparison removes, with its
// reason. [Known] lists the divergences being fixed: the generator leaves
// their inputs out, or Comparable masks them, unless [Config].Known is
// set, so `make test` stays green while a campaign with KNOWN=1 still
// finds them.
//
// # Shrinking
//
// On a divergence, [Shrink] drops chunks of steps and then simplifies the
// rest (options removed, drover steps handed to Node) while the program
// still diverges, and the runner prints the minimal program as a Go
// regression test ([Program.GoString]).
package difftest
