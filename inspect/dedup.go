package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
)

// Deduplication says who holds a deduplication id of a queue: the job an add
// with that id is deduplicated against (BullMQ's `de:<id>` key).
type Deduplication struct {
	ID string `json:"id"`
	// JobID is the job holding the id; "" when no job holds it (the next
	// add with the id creates a job).
	JobID string `json:"jobId,omitempty"`
	// State is the holder's state. A holder in completed or failed still
	// holds the id while its TTL runs; StateUnknown: the holder's job is
	// gone (removed or kept by no one) and the id is still taken.
	State drover.JobState `json:"state,omitempty"`
	// Expires is when the id frees itself (its TTL), zero when it has no
	// expiry: it is freed when its job finishes or is removed.
	Expires Instant `json:"expires,omitzero"`
}

// Deduplication reads who holds deduplication id dedupID in queue.
func (i *Inspector) Deduplication(ctx context.Context, queue, dedupID string) (*Deduplication, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if dedupID == "" {
		return nil, errors.New("inspect: a deduplication id must not be empty")
	}
	if _, err := i.existing(ctx, queue); err != nil {
		return nil, err
	}
	key := i.keys(queue).Dedup(dedupID)
	pipe := i.rdb.Pipeline()
	get := pipe.Get(ctx, key)
	ttl := pipe.PTTL(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("inspect: read deduplication id %q of queue %q: %w", dedupID, queue, err)
	}
	d := &Deduplication{ID: dedupID}
	d.JobID = get.Val()
	if d.JobID == "" {
		return d, nil
	}
	if left := ttl.Val(); left > 0 {
		d.Expires = Instant{i.now(ctx).Add(left).Truncate(time.Millisecond)}
	}
	// jobState, not Queue.GetJobState: no LPOS over the wait list.
	var err error
	if d.State, err = i.jobState(ctx, queue, d.JobID); err != nil {
		return nil, err
	}
	return d, nil
}

// ReleaseDeduplication frees deduplication id dedupID of queue whatever job
// holds it (drover.Queue.RemoveDeduplicationKey), so the next add with the
// id creates a job; the holder itself is left alone. It reports whether a
// job held the id.
func (i *Inspector) ReleaseDeduplication(ctx context.Context, queue, dedupID string) (bool, error) {
	if ctx == nil {
		return false, errNilContext
	}
	if dedupID == "" {
		return false, errors.New("inspect: a deduplication id must not be empty")
	}
	q, err := i.existing(ctx, queue)
	if err != nil {
		return false, err
	}
	n, err := q.RemoveDeduplicationKey(ctx, dedupID)
	return n > 0, err
}
