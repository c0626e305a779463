-- Queries of package outbox on PostgreSQL.

-- name: OutboxInsert :exec
-- Runs in the caller's business transaction.
INSERT INTO drover_outbox (queue, name, data, opts, created_at)
VALUES ($1, $2, $3, $4, $5);

-- name: OutboxClaimBatch :many
-- The relay's transaction locks the rows it relays until it has marked them
-- sent; other relays skip them rather than wait, and take the next ones.
SELECT id, queue, name, data, opts, created_at
FROM drover_outbox
WHERE sent_at IS NULL AND failed_at IS NULL
ORDER BY id
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: OutboxOlderPending :many
-- Pending rows with options older than row $1, whoever holds them: the
-- claim took the oldest rows no other batch locks, so these are the rows of
-- other relays' batches in flight (and rows committed since with a lower
-- id), a few. Read, not locked: a relay checks that no older row of a
-- claimed row's Deduplication ID is still to be added. The data is not
-- read (only the options matter): an empty string stands in for it.
SELECT id, queue, name, '' AS data, opts, created_at
FROM drover_outbox
WHERE sent_at IS NULL AND failed_at IS NULL AND id < $1 AND opts IS NOT NULL
ORDER BY id;

-- name: OutboxBatchIdleLimit :one
-- $1 milliseconds, as text. For the batch's transaction only: PostgreSQL
-- ends the session once it has been idle in the transaction that long (its
-- relay gone without a word), which releases the rows for other relays.
SELECT set_config('idle_in_transaction_session_timeout', $1, true);

-- name: OutboxMarkSent :exec
-- $1 row ids and $2 their job ids, in the same order.
UPDATE drover_outbox AS o
SET sent_at = $3, job_id = v.job_id
FROM unnest($1::bigint[], $2::text[]) AS v (id, job_id)
WHERE o.id = v.id;

-- name: OutboxMarkFailed :exec
UPDATE drover_outbox SET failed_at = $2, last_error = $3 WHERE id = $1;

-- name: OutboxListen :exec
LISTEN drover_outbox;

-- name: OutboxPrune :execrows
-- In batches, so a large backlog does not hold one long transaction.
DELETE FROM drover_outbox
WHERE id IN (SELECT id FROM drover_outbox WHERE sent_at < $1 LIMIT $2);

-- name: OutboxMarkLanded :one
-- Whether row $1 carries the mark a batch made at $2 (sent or failed): read
-- after that batch's COMMIT answer was lost, it tells whether the commit
-- landed (a batch's marks land together). Another relay's mark has another
-- time. FOR SHARE waits for the batch's transaction, if its session has not
-- ended yet, to finish either way.
SELECT COALESCE(sent_at = $2 OR failed_at = $2, false)
FROM drover_outbox
WHERE id = $1
FOR SHARE;
