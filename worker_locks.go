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

// lockLoop renews the locks of running jobs every LockDuration/4, in one
// script call, and cancels the jobs whose lock is gone.
func (w *Worker) lockLoop() {
	defer w.bgWG.Done()
	ticker := time.NewTicker(w.opts.LockDuration / 4)
	defer ticker.Stop()
	for {
		select {
		case <-w.bgCtx.Done():
			return
		case <-ticker.C:
		}
		w.renewLocks(w.bgCtx)
	}
}

func (w *Worker) renewLocks(ctx context.Context) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.running))
	tokens := make([]string, 0, len(w.running))
	for id, rj := range w.running {
		ids = append(ids, id)
		tokens = append(tokens, rj.token)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	lost, err := scripts.ExtendLocks(ctx, w.q.rdb, w.q.k, w.opts.LockDuration.Milliseconds(), ids, tokens)
	if err != nil {
		if ctx.Err() == nil {
			reloadTopology(w.q.rdb, err)
			w.log.WarnContext(ctx, "renew job locks failed", slog.Int(logkey.Count, len(ids)), slog.Any(logkey.Error, err))
		}
		return
	}
	now := w.q.nowMs()
	lostSet := make(map[string]string, len(lost))
	for _, l := range lost {
		lostSet[l.ID] = l.Reason
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		rj := w.running[id]
		if rj == nil {
			continue
		}
		reason, isLost := lostSet[id]
		if !isLost {
			rj.lastRenew.Store(now)
			continue
		}
		var why string
		if reason == "taken" {
			why = "another worker holds the job's lock: it was recovered as stalled and taken again, or moved by someone else"
		} else {
			last := rj.lastRenew.Load()
			expired := now - (last + w.opts.LockDuration.Milliseconds())
			why = fmt.Sprintf("lock expired before renewal: last renewed %dms ago, expired %dms ago (is the process starved or was Redis unreachable?)",
				now-last, max(expired, 0))
		}
		rj.lostWhy.Store(why)
		if h := w.opts.Hooks.LockLost; h != nil {
			h(rj.job, why)
		}
		if rj.cancel != nil {
			rj.cancel(ErrLockLost)
		}
	}
}

// stalledLoop runs the stalled checker at start and every StalledInterval.
func (w *Worker) stalledLoop() {
	defer w.bgWG.Done()
	ticker := time.NewTicker(w.opts.StalledInterval)
	defer ticker.Stop()
	for {
		w.checkStalled(w.bgCtx)
		select {
		case <-w.bgCtx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (w *Worker) checkStalled(ctx context.Context) {
	ran, moved, err := scripts.MoveStalledJobsToWait(ctx, w.q.rdb, w.q.k, w.q.nowMs(),
		w.opts.StalledInterval.Milliseconds(), w.opts.MaxStalledCount)
	if err != nil {
		if ctx.Err() == nil {
			reloadTopology(w.q.rdb, err)
			w.log.WarnContext(ctx, "stalled check failed", slog.Any(logkey.Error, err))
		}
		return
	}
	if !ran {
		return
	}
	for _, s := range moved {
		w.log.WarnContext(ctx, "job stalled: moved back to wait", slog.String(logkey.JobID, s.ID), slog.Int("stalled_count", s.StalledCounter))
		if h := w.opts.Hooks.Stalled; h != nil {
			h(s.ID, s.StalledCounter)
		}
	}
}
