-- Queries of package idempotency on PostgreSQL. Each runs inside the
-- caller's transaction, which is assumed to be READ COMMITTED: every
-- statement sees the rows committed before it started.

-- name: OperationFindOrLock :one
-- One round trip for both common cases. A committed row (or one this
-- transaction inserted) means the effect already happened: found, and no lock
-- is taken. Otherwise try the key's transaction-scoped advisory lock without
-- waiting: false means another open transaction is claiming the key right now.
-- Every claimer takes the lock before inserting and holds it until its
-- transaction ends, so a transaction holding the lock cannot meet another's
-- uncommitted row for the key, and the following insert never blocks.
-- The lock id is a 64-bit hash of the key, seeded with "drover" in ASCII.
SELECT o.op_key IS NOT NULL AS found,
       o.result,
       CASE WHEN o.op_key IS NULL
            THEN pg_try_advisory_xact_lock(hashtextextended($1::text, 110442659079538))
            ELSE false
       END AS locked
FROM (VALUES (1)) AS one (x)
LEFT JOIN drover_operations AS o ON o.op_key = $1::text;

-- name: OperationInsert :execrows
-- Zero rows: a transaction committed the key between OperationFindOrLock's
-- snapshot and now.
INSERT INTO drover_operations (op_key, claimed_at)
VALUES ($1, $2)
ON CONFLICT (op_key) DO NOTHING;

-- name: OperationResult :one
SELECT result FROM drover_operations WHERE op_key = $1;

-- name: OperationLockWait :exec
-- Waits for the key's advisory lock: once it is held, the transaction that
-- claimed the key before has ended, committed or not (its server session may
-- run it on for a while after its client lost the connection).
SELECT pg_advisory_xact_lock(hashtextextended($1::text, 110442659079538));

-- name: OperationLanded :one
-- Whether the claim made at $2 committed: read after OperationLockWait, in
-- the same transaction, when the claimer's COMMIT answer was lost. Another
-- claimer's row has another time.
SELECT EXISTS (SELECT 1 FROM drover_operations WHERE op_key = $1 AND claimed_at = $2);

-- name: OperationComplete :execrows
-- Only the claiming transaction may record the result. A row committed
-- without a result has completed_at NULL too, so the row alone cannot tell:
-- the claimer is the transaction holding the key's advisory lock
-- (OperationFindOrLock took it before inserting, in this transaction or in
-- one of its savepoints, and it is held to the end of the transaction).
UPDATE drover_operations
SET result = $2, completed_at = $3
WHERE op_key = $1 AND completed_at IS NULL
  AND EXISTS (
    SELECT 1
    FROM pg_locks AS l,
         (SELECT hashtextextended($1::text, 110442659079538) AS h) AS k
    WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ((k.h >> 32) & 4294967295)::oid
      AND l.objid = (k.h & 4294967295)::oid
      AND l.objsubid = 1
  );

-- name: OperationPrune :execrows
-- In batches, so a large backlog does not hold one long transaction.
DELETE FROM drover_operations
WHERE op_key IN (
    SELECT op_key FROM drover_operations WHERE claimed_at < $1 LIMIT $2
);
