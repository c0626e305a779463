// Package bullmqoracle drives Node BullMQ, pinned to the version [Version]
// returns, from Go tests: the reference implementation drover's interop and
// differential tests compare against.
//
// # Processes
//
// [Start] spawns `node driver.mjs` (in internal/testkit/bullmqoracle/node), a
// long-running process that answers newline-delimited JSON requests on
// stdin/stdout. Each [Oracle] method is one request: queue operations
// ([Oracle.Add], [Oracle.GetJob], [Oracle.GetState], [Oracle.GetJobCounts],
// [Oracle.Pause], [Oracle.Clean], [Oracle.RetryJob] ...), Workers running
// inside the driver ([Oracle.StartWorker], [Oracle.WorkerEvents]) and
// QueueEvents ([Oracle.StartQueueEvents], [Oracle.QueueEvents]). Requests
// run concurrently and are matched to responses by id; an error thrown in
// Node comes back as a [*NodeError] carrying Node's message. The driver keeps
// one ioredis connection per role (queues, workers) and caches Queue objects
// by (prefix, queue). With [Options].Cluster those connections are ioredis
// Cluster clients seeded with the given address, so Node BullMQ can be the
// peer of drover on a Redis Cluster (queue names or prefixes then need a
// {hash tag}); [WorkerOptions].Cluster does the same for a worker process.
//
// [StartWorkerProcess] runs one Worker in its own `node worker.mjs` process
// so a test can SIGKILL it mid-job ([WorkerProcess.Kill]); it prints one JSON
// line per event, read as [WorkerEvent]s.
//
// # Scripted processors
//
// What a Node worker does with a job is data: a [Behavior] such as
// [Return], [Echo], [Fail], [FailTimes], [Unrecoverable], [Sleep],
// [Progress], [Log], [MoveToDelayed], [Sequence] or [FromData] (the behavior
// travels in the job's data). [WorkerOptions].BackoffStrategy selects one of
// a few custom backoff strategies defined in node/lib.mjs.
//
// # Dependencies
//
// node/package.json pins bullmq and ioredis exactly and node/package-lock.json
// is committed. The first Start or StartWorkerProcess in a test binary checks
// node_modules against the pins and runs `npm ci` when they are missing or
// stale, holding an flock on node/.npm-ci.lock so parallel test binaries do
// not install at the same time. A missing node or a failing npm fails the
// test with the reason; tests never skip. `make deps` does the same install
// ahead of time.
package bullmqoracle
