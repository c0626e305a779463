// Package orphans finds the job hashes of a queue that no state holds
// (BullMQ 6.7's removeOrphanedJobs), for drover.Queue.RemoveOrphanedJobs and
// inspect's count of them.
package orphans

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/scripts"
)

// CountDefault is the SCAN COUNT hint used for a count of 0 (BullMQ's
// default).
const CountDefault = 1000

// batch bounds the candidates one script call checks, so that one call
// holds Redis for a short while only.
const batch = 100

// Sweep walks the queue's keys with SCAN (count keys a step as a hint, 0 =
// CountDefault) and checks the job ids it finds, batch by batch, in one
// script each: an id no state set holds is an orphan. With remove its keys
// are deleted; without, it is only counted. It stops once limit orphans
// (0 = no bound) were found and returns how many it found. A removing
// script call carries a call token valid for window (the queue's
// AddRetryWindow), so that go-redis resending it after a lost reply does
// not make its deletions go uncounted.
func Sweep(ctx context.Context, rdb redis.UniversalClient, k keys.Queue, count, limit int, remove bool, window time.Duration) (int, error) {
	if count == 0 {
		count = CountDefault
	}
	node, err := scanNode(ctx, rdb, k)
	if err != nil {
		return 0, err
	}
	pattern := k.JobScanPattern()
	found := 0
	var cursor uint64
	for {
		ks, next, err := node.Scan(ctx, cursor, pattern, int64(count)).Result()
		if err != nil {
			return found, fmt.Errorf("scan: %w", err)
		}
		var ids []string
		for _, key := range ks {
			if id, ok := k.JobIDOfKey(key); ok && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		for part := range slices.Chunk(ids, batch) {
			left := 0
			if limit > 0 {
				left = limit - found
			}
			var call scripts.Call // counting only: nothing to do once
			if remove {
				call = scripts.NewCall(window)
			}
			n, err := scripts.RemoveOrphanedJobs(ctx, rdb, k, call, left, remove, part)
			if err != nil {
				return found, err
			}
			found += int(n)
			if limit > 0 && found >= limit {
				return found, nil
			}
		}
		if next == 0 {
			return found, nil
		}
		cursor = next
	}
}

// scanNode is the client to SCAN the queue's keys on: the client itself,
// or on a cluster the master of the queue's slot (a queue's keys share its
// hash tag).
func scanNode(ctx context.Context, rdb redis.UniversalClient, k keys.Queue) (*redis.Client, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, k.Meta())
	default:
		return nil, fmt.Errorf("cannot scan the keys of one queue through a %T", rdb)
	}
}
