// Package inspect is drover's read and admin API over queues: what the
// `drover` CLI and the dashboard show and do, for use from your own tools too.
//
// An [Inspector] works on every queue under one key prefix, whether drover or
// Node BullMQ wrote it. It holds no connection of its own: it uses the
// caller's client, which the caller closes.
//
// # Reading
//
//   - [Inspector.Queues] finds queues by scanning the prefix's keys;
//     [Inspector.Overview] and [Inspector.QueueInfo] count their jobs per state.
//   - [Inspector.Jobs] lists the jobs of one state a page at a time, with a
//     [Filter] on name, failed reason and attempts left.
//   - [Inspector.Job] is the retry-state inspector: where the job is in its
//     retry life ([RetryState]), attempts against budget, the next run time,
//     the attempt timeline, stack traces and logs.
//   - [Inspector.Stalled] lists jobs that stalled (stc > 0) and the lock TTL of
//     every active job.
//   - [Inspector.DelayedStats] measures the delayed set: size, growth rate,
//     a histogram of due times and a clustering ratio; together they raise a
//     retry-storm alert (see [StormOptions] for the exact definitions).
//   - [Inspector.NearExhausted] lists live jobs that used most of their
//     attempt budget.
//
// # Acting
//
// [Inspector.RetryJobs] retries failed jobs in bulk, by [Filter], with or
// without fresh attempts, in paced chunks so the bulk retry cannot itself
// cause a storm; [Inspector.RetryJob] retries one job, including one that
// waits for its backoff. Promote, remove, pause, resume, clean and obliterate
// wrap the engine's admin calls per queue name.
//
// Lists that read job hashes (list pages, the stalled view, budgets) read at
// most Options.ScanLimit jobs per state and say when they stopped early.
package inspect
