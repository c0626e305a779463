-- Queries of package outbox on SQLite.

-- name: OutboxInsert :exec
-- Runs in the caller's business transaction.
INSERT INTO drover_outbox (queue, name, data, opts, created_at)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: OutboxClaimBatch :many
-- SQLite cannot lock rows: relays read the pending rows without a lock (a
-- write lock held across the queue call would stall every writer of the
-- database). Two relays may then add the same row; the second add is a
-- duplicate, and both mark the row sent.
SELECT id, queue, name, data, opts
FROM drover_outbox
WHERE sent_at IS NULL AND failed_at IS NULL
ORDER BY id
LIMIT ?1;

-- name: OutboxMarkSent :exec
-- One row: ?1 row id, ?2 its job id. The first relay's mark stands.
UPDATE drover_outbox SET sent_at = ?3, job_id = ?2 WHERE id = ?1 AND sent_at IS NULL;

-- name: OutboxMarkFailed :exec
UPDATE drover_outbox SET failed_at = ?2, last_error = ?3 WHERE id = ?1;

-- name: OutboxPrune :execrows
DELETE FROM drover_outbox
WHERE id IN (SELECT id FROM drover_outbox WHERE sent_at < ?1 LIMIT ?2);
