package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed40057009/drover/internal/keytype"
	"github.com/seed40057009/drover/internal/orphans"
)

// CountOrphanedJobs counts the job hashes of queue that no state holds,
// what drover.Queue.RemoveOrphanedJobs with the same count and limit would
// remove, without changing anything. count is the SCAN hint (0 = 1000),
// limit stops the count (0 = none). Each batch of ids is checked in one
// script, so the count is exact for the moment of each batch.
func (i *Inspector) CountOrphanedJobs(ctx context.Context, queue string, count, limit int) (int, error) {
	if ctx == nil {
		return 0, errNilContext
	}
	if count < 0 || limit < 0 {
		return 0, fmt.Errorf("inspect: orphaned jobs need count >= 0 and limit >= 0, got %d and %d", count, limit)
	}
	if _, err := i.existing(ctx, queue); err != nil {
		return 0, err
	}
	n, err := orphans.Sweep(ctx, i.rdb, i.keys(queue), count, limit, false, 0)
	if err != nil {
		return n, fmt.Errorf("inspect: count orphaned jobs of queue %q: %w", queue, keytype.Explain(ctx, i.rdb, i.keys(queue), err))
	}
	return n, nil
}

// RemoveOrphanedJobs removes the job hashes of queue that no state holds
// (drover.Queue.RemoveOrphanedJobs) and returns how many it removed.
func (i *Inspector) RemoveOrphanedJobs(ctx context.Context, queue string, count, limit int) (int, error) {
	if ctx == nil {
		return 0, errNilContext
	}
	if count < 0 || limit < 0 {
		return 0, errors.New("inspect: orphaned jobs need count >= 0 and limit >= 0")
	}
	q, err := i.existing(ctx, queue)
	if err != nil {
		return 0, err
	}
	return q.RemoveOrphanedJobs(ctx, count, limit)
}
