package drover

import (
	"context"
	"slices"

	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/seam"
)

// The seams drovertest and the differential tester drive a worker through
// (internal/seam).
func init() {
	seam.SetClock = func(v any, c clock.Clock) {
		switch x := v.(type) {
		case *Queue:
			x.clock = c
		case *Worker:
			x.q.clock = c
		}
	}
	seam.Wake = func(v any) { v.(*Worker).wake() }
	seam.NoFetchOnFinish = func(v any) { v.(*Worker).noFetchOnFinish = true }
	seam.FinishBatch = func(v any, ids []string) {
		c := &v.(*Worker).carry
		c.mu.Lock()
		c.barrier = slices.Clone(ids)
		c.mu.Unlock()
	}
	seam.AdvanceScheduler = func(ctx context.Context, v any, id string, hash []any) error {
		rec, _, err := jobcodec.Decode(id, hash)
		if err != nil {
			// As the worker: a run that does not decode still advances
			// its scheduler (storedOfFetched).
			run, ok := jobcodec.SchedulerRun(id, hash)
			if !ok {
				return err
			}
			rec = run
		}
		if rec.RepeatJobKey == "" {
			return nil
		}
		return v.(*Worker).advanceScheduler(ctx, &rec)
	}
	seam.Promote = func(ctx context.Context, v any, n int, moved func([]string)) (int, error) {
		return v.(*Queue).promoteIDs(ctx, n, moved)
	}
	seam.Drain = func(ctx context.Context, v any, delayed bool, name int) (int, []string, error) {
		return v.(*Queue).drainNamed(ctx, delayed, name)
	}
	seam.CheckStalled = func(ctx context.Context, v any) {
		w := v.(*Worker)
		w.q.rdb.Del(ctx, w.q.k.StalledCheck()) // the once-per-interval guard
		w.checker.checkOnce(ctx)
	}
}
