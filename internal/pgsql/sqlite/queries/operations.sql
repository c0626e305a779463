-- Queries of package idempotency on SQLite. SQLite has one writer at a time:
-- the insert that claims a key takes the database's write lock (or waits for
-- it, up to the connection's busy timeout) and holds it to the end of the
-- transaction, so a second claimer of the same key starts only after the
-- first committed or rolled back. Parameters are numbered (?1) in the order
-- of the PostgreSQL variants, so one Go call site serves both.

-- name: OperationInsert :execrows
INSERT INTO drover_operations (op_key, claimed_at)
VALUES (?1, ?2)
ON CONFLICT (op_key) DO NOTHING;

-- name: OperationResult :one
SELECT result FROM drover_operations WHERE op_key = ?1;

-- name: OperationComplete :execrows
UPDATE drover_operations
SET result = ?2, completed_at = ?3
WHERE op_key = ?1 AND completed_at IS NULL;

-- name: OperationPrune :execrows
DELETE FROM drover_operations
WHERE op_key IN (
    SELECT op_key FROM drover_operations WHERE claimed_at < ?1 LIMIT ?2
);
