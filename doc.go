// Package drover is a job queue for Go whose Redis state is Node BullMQ's.
//
// A [Queue] adds jobs; a [Worker] runs a [Processor] on them; a
// [QueueEvents] reads what happened. The keys, the job hash, the score
// encodings and the events are BullMQ 6.7.0's, so a job added by Node BullMQ
// is processed by a drover worker and the other way round, and BullMQ tools
// keep working on the same data.
//
// # Adding and processing
//
//	q, err := drover.NewQueue(rdb, "emails", nil)
//	if err != nil {
//		return err
//	}
//	res, err := q.Add(ctx, "welcome", payload, &drover.JobOptions{Attempts: 5})
//	if err != nil {
//		return err
//	}
//	fmt.Println(res.Outcome) // created
//
//	w, err := drover.NewWorker(rdb, "emails", drover.ProcessorFunc(send), &drover.WorkerOptions{Concurrency: 50})
//	if err != nil {
//		return err
//	}
//	if err := w.Start(ctx); err != nil {
//		return err
//	}
//	defer w.Close(shutdownCtx) // waits for running jobs until shutdownCtx ends: give it a deadline
//
// Add reports what it did: [AddCreated], or [AddDuplicate] when a job with
// the same custom [JobOptions.JobID] exists (the existing job is returned and
// nothing is written but a duplicated event), [AddDeduplicated] when another
// job owns its [Deduplication] id, or [AddReAdded] when it took over an id
// whose owner had been removed.
//
// # Coming from River or asynq
//
// The defaults are BullMQ's, not River's or asynq's: a job runs once
// ([JobOptions.Attempts] 0 or 1) and, given more attempts, is retried at
// once unless it has a [Backoff]. Set both on the job, or once for a queue in
// [QueueOptions.DefaultJobOptions]. [JobOptions.RunAt] is asynq's ProcessAt
// and River's ScheduledAt; [JobOptions.Timeout] bounds each attempt;
// [Queue.CancelJob] (River's JobCancel) fails a job that is not running yet
// at once and cancels a running attempt.
//
// # The three ways a job runs again
//
// Automatic retry: a processor error fails the attempt. While attempts
// remain (JobOptions.Attempts) the job goes back to wait at once, or to the
// delayed set for its [Backoff] (fixed, exponential, with jitter, or a custom
// [BackoffFunc]); the last failure moves it to failed. [Unrecoverable]
// fails for good at once; returning [Delay] postpones without spending an
// attempt.
//
// Manual retry: [Job.Retry] re-runs a failed or completed job, optionally
// with fresh attempts; [Queue.RetryJobs] does it in bulk, in chunks.
//
// Stalled recovery: a worker holds a lock per running job and renews it. If
// the worker dies, the lock expires and the stalled checker (run by every
// worker, at most once per StalledInterval across them) moves the job back to
// wait, counting the stall in [Job.StalledCount] but not as an attempt. A job
// stalled more than MaxStalledCount times is failed by the next worker,
// except a job scheduler's run or a legacy (BullMQ v5) repeatable job, which
// BullMQ keeps running so that its schedule goes on.
//
// Each drover worker also records the attempt history in the job hash (an
// extra field Node BullMQ ignores): see [Job.Timeline].
//
// # Atomicity and cost
//
// Every state transition is one Lua script of drover's own, so it is atomic
// with respect to other drover and Node clients. Workers fetch several jobs
// per script call and write a batch of results in the call that also fetches
// the next jobs, which keeps Redis CPU per job well below BullMQ's own.
//
// # Redis Cluster
//
// All keys of a queue must share a hash slot: put a {hash tag} in the
// prefix or the queue name. On a *redis.ClusterClient, NewQueue and
// NewWorker refuse names without one.
package drover
