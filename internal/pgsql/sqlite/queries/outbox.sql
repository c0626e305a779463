-- Queries of package outbox on SQLite.

-- name: OutboxInsert :exec
-- Runs in the caller's business transaction.
INSERT INTO drover_outbox (queue, name, data, opts, created_at)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: OutboxClaimable :one
-- Whether a claim would find rows: a plain read, so an idle relay's polls
-- never take the database's write lock. ?1 now.
SELECT EXISTS (
    SELECT 1 FROM drover_outbox
    WHERE sent_at IS NULL AND failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?1)
);

-- name: OutboxClaimBatch :exec
-- SQLite cannot lock rows: a relay claims up to ?1 pending rows nobody holds
-- (or whose holder's lease ran out) by writing its token ?2 and lease end ?3
-- into them, in one short write; ?4 now. It then reads them back
-- (OutboxClaimed) and talks to Redis holding no lock, so writers of the
-- database are not stalled.
UPDATE drover_outbox SET claim_token = ?2, claimed_until = ?3
WHERE id IN (
    SELECT id FROM drover_outbox
    WHERE sent_at IS NULL AND failed_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?4)
    ORDER BY id
    LIMIT ?1
);

-- name: OutboxClaimed :many
-- The rows claim ?1 holds.
SELECT id, queue, name, data, opts, created_at
FROM drover_outbox
WHERE sent_at IS NULL AND failed_at IS NULL AND claim_token = ?1
ORDER BY id;

-- name: OutboxOlderPending :many
-- Pending rows with options older than row ?1, whoever holds them: the
-- claim took the oldest rows no other claim holds, so these are the rows
-- of other relays' batches in flight (or of a relay that died, until its
-- lease runs out), a few. A relay checks that no older row of a claimed
-- row's Deduplication ID is still to be added. The data is not read
-- (only the options matter): an empty string stands in for it.
SELECT id, queue, name, '' AS data, opts, created_at
FROM drover_outbox
WHERE sent_at IS NULL AND failed_at IS NULL AND id < ?1 AND opts IS NOT NULL
ORDER BY id;

-- name: OutboxMarkSent :execrows
-- One row: ?1 row id, ?2 its job id, while claim ?4 still holds it (a relay
-- whose lease ran out and whose rows another relay took marks nothing).
UPDATE drover_outbox SET sent_at = ?3, job_id = ?2, claim_token = NULL, claimed_until = NULL
WHERE id = ?1 AND claim_token = ?4 AND sent_at IS NULL AND failed_at IS NULL;

-- name: OutboxMarkFailed :execrows
-- As OutboxMarkSent: only while claim ?4 holds the row.
UPDATE drover_outbox SET failed_at = ?2, last_error = ?3, claim_token = NULL, claimed_until = NULL
WHERE id = ?1 AND claim_token = ?4 AND sent_at IS NULL AND failed_at IS NULL;

-- name: OutboxRelease :exec
-- Gives back the rows claim ?1 still holds (a batch that failed or was
-- cancelled), for the next claim at once.
UPDATE drover_outbox SET claim_token = NULL, claimed_until = NULL
WHERE claim_token = ?1 AND sent_at IS NULL AND failed_at IS NULL;

-- name: OutboxPrune :execrows
DELETE FROM drover_outbox
WHERE id IN (SELECT id FROM drover_outbox WHERE sent_at < ?1 LIMIT ?2);
