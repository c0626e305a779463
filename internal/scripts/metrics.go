package scripts

import (
	"context"

	"github.com/seed40057009/drover/internal/keys"
)

var collectMetrics = load("collectMetrics")

// CollectMetrics counts completed and failed jobs finished at now (ms) in
// the queue's per-minute metrics, keeping maxPoints data points.
func CollectMetrics(ctx context.Context, rdb Doer, k keys.Queue, now int64, maxPoints, completed, failed int) error {
	return collectMetrics.run(ctx, rdb, k, now, maxPoints, completed, failed).Err()
}
