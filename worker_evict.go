package drover

import (
	"context"
	"log/slog"
	"strings"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/logkey"
)

// infoMemory is the INFO section with maxmemory_policy.
const infoMemory = "memory"

// warnEviction logs a warning when Redis may evict keys under memory
// pressure (maxmemory-policy other than noeviction), as BullMQ warns when it
// connects: an evicted job hash, lock or list entry is a job lost or left
// half-moved, without an error anywhere. Under noeviction a full Redis
// refuses writes instead, which the worker waits out. A server that does
// not let the worker read INFO, or does not answer within ctx, is not
// judged.
func (w *Worker) warnEviction(ctx context.Context) {
	w.q.checkEviction(ctx, w.log)
}

// checkEviction reads Redis's maxmemory-policy and logs the eviction
// warning on log (which names the queue) when it is not noeviction, once per Queue (a Worker's
// queue included): after the first read that succeeds, it does nothing.
// A Queue checks after its first add (register), so a process that only
// adds jobs is warned too.
func (q *Queue) checkEviction(ctx context.Context, log *slog.Logger) {
	if ctx.Err() != nil || q.evictionChecked.Load() {
		return
	}
	info, err := bounded.Call(ctx, func(ctx context.Context) (string, error) {
		return q.rdb.Info(ctx, infoMemory).Result()
	})
	if err != nil || !q.evictionChecked.CompareAndSwap(false, true) {
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
