package drover

import (
	"context"
	"log/slog"
	"strings"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
)

// infoMemory is the INFO section with maxmemory_policy.
const infoMemory = "memory"

// warnEviction logs a warning when Redis may evict keys under memory
// pressure (maxmemory-policy other than noeviction), as BullMQ warns when it
// connects: an evicted job hash, lock or list entry is a job lost or left
// half-moved, without an error anywhere. Under noeviction a full Redis
// refuses writes instead, which the worker waits out. A server that does
// not answer within ctx is not judged (the next start or add asks again);
// one that refuses INFO (an ACL without it, a managed Redis that renamed
// it) is not judged either, and not asked again.
func (w *Worker) warnEviction(ctx context.Context) {
	w.q.checkEviction(ctx, w.log)
}

// checkEviction reads Redis's maxmemory-policy and logs the eviction
// warning on log (which names the queue) when it is not noeviction, once per Queue (a Worker's
// queue included): after the first read that succeeds, it does nothing.
// A Queue checks after its first add (register), so a process that only
// adds jobs is warned too. A refusal (an error reply other than an
// outage's: NOPERM, an unknown command) counts as a read: it is logged once
// at Info and INFO is not sent again, where asking on every add cost each
// add a round trip and the server an ACL log entry.
func (q *Queue) checkEviction(ctx context.Context, log *slog.Logger) {
	if ctx.Err() != nil || q.evictionChecked.Load() {
		return
	}
	info, err := bounded.Call(ctx, func(ctx context.Context) (string, error) {
		return q.rdb.Info(ctx, infoMemory).Result()
	})
	if err != nil {
		if ctx.Err() == nil && !outage.Is(err) && outage.ReplyCode(err) != "" && q.evictionChecked.CompareAndSwap(false, true) {
			log.InfoContext(ctx, "Redis refuses INFO, so its maxmemory-policy is not checked (it should be noeviction)",
				slog.Any(logkey.Error, err))
		}
		return
	}
	if !q.evictionChecked.CompareAndSwap(false, true) {
		return
	}
	for line := range strings.SplitSeq(info, "\n") {
		policy, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:")
		if ok && policy != "noeviction" {
			log.WarnContext(ctx, "Redis may evict the queue's keys when its memory is full, losing jobs without an error; "+
				"set maxmemory-policy to noeviction", slog.String(logkey.MaxmemoryPolicy, policy))
		}
	}
}
