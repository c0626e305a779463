-- The operations ledger behind package idempotency.
--
-- A row exists for every operation key whose effect committed: ClaimTx
-- inserts it in the same transaction as the effect, so the row and the effect
-- commit or roll back together. CompleteTx stores the effect's result on it.
-- Times are unix milliseconds.
CREATE TABLE drover_operations (
    op_key       TEXT    NOT NULL PRIMARY KEY,
    result       BLOB,
    claimed_at   INTEGER NOT NULL,
    completed_at INTEGER,
    CHECK (length(CAST(op_key AS BLOB)) BETWEEN 1 AND 255)
) WITHOUT ROWID;

-- Prune deletes by age.
CREATE INDEX drover_operations_claimed_at ON drover_operations (claimed_at);
