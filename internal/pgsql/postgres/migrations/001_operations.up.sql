-- The operations ledger behind package idempotency.
--
-- A row exists for every operation key whose effect committed: ClaimTx
-- inserts it in the same transaction as the effect, so the row and the effect
-- commit or roll back together. CompleteTx stores the effect's result on it.
-- completed_at is NULL only while the claiming transaction is open, or when
-- it committed without calling CompleteTx.
CREATE TABLE drover_operations (
    op_key       text        NOT NULL,
    result       bytea,
    claimed_at   timestamptz NOT NULL,
    completed_at timestamptz,
    CONSTRAINT drover_operations_pkey PRIMARY KEY (op_key),
    CONSTRAINT drover_operations_op_key_length CHECK (octet_length(op_key) BETWEEN 1 AND 255)
);

-- Prune deletes by age.
CREATE INDEX drover_operations_claimed_at ON drover_operations (claimed_at);
