package drover

// The worker's background keepers: lock renewal for running jobs, and the
// stalled-job checker that recovers jobs whose worker died.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// lockKeeper renews the locks of a worker's in-flight jobs every
// duration/4, all in one script call, and cancels the jobs whose lock is
// gone with cause ErrLockLost (BullMQ's LockManager). It runs in one
// goroutine, started and stopped by the Worker.
type lockKeeper struct {
	q        *Queue
	jobs     *inflight
	duration time.Duration
	log      *slog.Logger
	lost     func(job *Job, why string) // WorkerHooks.LockLost; may be nil
}

func (k *lockKeeper) run(ctx context.Context) {
	ticker := time.NewTicker(k.duration / 4)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		k.renew(ctx)
	}
}

// renew extends every in-flight job's lock once.
func (k *lockKeeper) renew(ctx context.Context) {
	rjs := k.jobs.snapshot()
	if len(rjs) == 0 {
		return
	}
	ids := make([]string, len(rjs))
	tokens := make([]string, len(rjs))
	for i, rj := range rjs {
		ids[i], tokens[i] = rj.job.ID, rj.token
	}
	lost, err := scripts.ExtendLocks(ctx, k.q.rdb, k.q.k, k.duration.Milliseconds(), ids, tokens)
	if err != nil {
		if ctx.Err() == nil {
			reloadTopology(k.q.rdb, err)
			k.log.WarnContext(ctx, "renew job locks failed", slog.Int(logkey.Count, len(ids)), slog.Any(logkey.Error, err))
		}
		return
	}
	// The script reports lost locks in the order it was given them, so a
	// job id that is in flight twice (an old attempt that lost its lock
	// and a new one) is matched to the right attempt.
	reasons := make(map[*runningJob]string, len(lost))
	for i, j := 0, 0; i < len(rjs) && j < len(lost); i++ {
		if lost[j].ID == ids[i] {
			reasons[rjs[i]] = lost[j].Reason
			j++
		}
	}
	now := k.q.nowMs()
	k.jobs.whileInFlight(rjs, func(rj *runningJob) {
		if rj.written.Load() {
			return // its result is written: the lock went with it
		}
		reason, isLost := reasons[rj]
		if !isLost {
			rj.lastRenew.Store(now)
			return
		}
		why := k.explain(rj, reason, now)
		rj.lostWhy.Store(why)
		if k.lost != nil {
			k.lost(rj.job, why)
		}
		rj.cancel(ErrLockLost)
	})
}

// explain says why a job's lock could not be renewed.
func (k *lockKeeper) explain(rj *runningJob, reason string, now int64) string {
	if reason == "taken" {
		return "another worker holds the job's lock: it was recovered as stalled and taken again, or moved by someone else"
	}
	last := rj.lastRenew.Load()
	expired := now - (last + k.duration.Milliseconds())
	return fmt.Sprintf("lock expired before renewal: last renewed %dms ago, expired %dms ago (is the process starved or was Redis unreachable?)",
		now-last, max(expired, 0))
}

// stalledChecker runs the stalled-job check at start and every interval:
// jobs whose lock expired go back to wait, or fail past maxStalled. Across
// all workers of a queue the check runs once per interval. It runs in one
// goroutine, started and stopped by the Worker.
type stalledChecker struct {
	q          *Queue
	interval   time.Duration
	maxStalled int
	log        *slog.Logger
	stalled    func(jobID string, stalledCount int) // WorkerHooks.Stalled; may be nil
}

func (c *stalledChecker) run(ctx context.Context) {
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		c.checkOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (c *stalledChecker) checkOnce(ctx context.Context) {
	ran, moved, err := scripts.MoveStalledJobsToWait(ctx, c.q.rdb, c.q.k, c.q.nowMs(),
		c.interval.Milliseconds(), c.maxStalled)
	if err != nil {
		if ctx.Err() == nil {
			reloadTopology(c.q.rdb, err)
			c.log.WarnContext(ctx, "stalled check failed", slog.Any(logkey.Error, err))
		}
		return
	}
	if !ran {
		return
	}
	for _, s := range moved {
		c.log.WarnContext(ctx, "job stalled: moved back to wait", slog.String(logkey.JobID, s.ID), slog.Int("stalled_count", s.StalledCounter))
		if c.stalled != nil {
			c.stalled(s.ID, s.StalledCounter)
		}
	}
}
