package drover

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/scripts"
)

// GetDeduplicationJobID returns the id of the job that holds deduplication
// id dedupID (BullMQ's getDeduplicationJobId): the job further adds with
// that id are deduplicated against. "" means no job holds it: the id was
// never used, or was freed (when its job finished, for an id taken without
// a TTL; when the TTL ran out; when its job was removed; by
// RemoveDeduplicationKey). An id taken with a TTL stays with its job after
// the job finished, until the TTL runs out.
func (q *Queue) GetDeduplicationJobID(ctx context.Context, dedupID string) (string, error) {
	if dedupID == "" {
		return "", optionError("deduplication id must not be empty")
	}
	if err := q.check(ctx); err != nil {
		return "", err
	}
	id, err := callWithin(ctx, q, func(ctx context.Context) (string, error) {
		return q.rdb.Get(ctx, q.k.Dedup(dedupID)).Result()
	})
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get job of deduplication id %q in queue %q: %w", dedupID, q.name, err)
	}
	return id, nil
}

// RemoveDeduplicationKey frees deduplication id dedupID whatever job holds
// it (BullMQ's Queue.removeDeduplicationKey), so the next add with that id
// creates a job. The holder itself is left alone. It returns how many keys
// it deleted: 1, or 0 when no job held the id.
//
// Job.RemoveDeduplicationKey is the safe form when the id should be freed
// only from a given job: between reading the holder and calling this, the
// id may have passed to a newer job, whose claim this call drops too.
func (q *Queue) RemoveDeduplicationKey(ctx context.Context, dedupID string) (int, error) {
	if dedupID == "" {
		return 0, optionError("deduplication id must not be empty")
	}
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	// A script rather than BullMQ's plain DEL, with a call token: go-redis
	// resends a command whose reply was lost, and a second DEL would find
	// the key gone and answer 0 for an id this call freed.
	ok, err := scripts.RemoveDedupKey(ctx, q.writes(), q.k, q.call(), "", dedupID)
	if err != nil {
		return 0, fmt.Errorf("remove deduplication id %q of queue %q: %w", dedupID, q.name, err)
	}
	if ok {
		return 1, nil
	}
	return 0, nil
}

// RemoveDeduplicationKey frees the job's deduplication id if the job still
// holds it (BullMQ's job.removeDeduplicationKey), checked and deleted in one
// script, so an id that has passed to another job stays with that job. It
// reports whether it freed the id. The id is the job's DeduplicationID, or,
// on a handle without one (Queue.Job), the one stored with the job.
//
// As in BullMQ only the id's key goes: a newest add kept by
// Deduplication.KeepLastIfActive is not dropped with it.
func (j *Job) RemoveDeduplicationKey(ctx context.Context) (bool, error) {
	if j == nil {
		return false, errNilJob
	}
	if err := j.storedIDErr("remove deduplication key of"); err != nil {
		return false, err
	}
	if err := j.queue.check(ctx); err != nil {
		return false, err
	}
	ok, err := scripts.RemoveDedupKey(ctx, j.queue.writes(), j.queue.k, j.queue.call(), j.ID, j.DeduplicationID)
	if err != nil {
		return false, j.err("remove deduplication key of", err)
	}
	return ok, nil
}
