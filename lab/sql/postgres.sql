-- The failure lab's own tables and queries on PostgreSQL. The lab counts
-- what happened from these rows, never from a process's memory: a worker
-- process killed mid-job takes its memory with it, its committed rows stay.
--
-- drover_lab_executions has a row per processor execution, committed before
-- the effect is attempted; drover_lab_effects has a row per effect written,
-- the business write whose count the lab checks. The ledger the safe
-- processor claims its operation key in is drover_operations (pgmigrate.Up).

-- name: CreateExecutions :exec
CREATE TABLE IF NOT EXISTS drover_lab_executions (
    id         bigserial   PRIMARY KEY,
    op_key     text        NOT NULL,
    job_id     text        NOT NULL,
    attempt    integer     NOT NULL,
    pid        integer     NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    -- claim is what the execution's operation claim found: inserted, existed,
    -- in_progress, or none for an effect written without a claim. NULL while
    -- the execution has not got that far (or never did).
    claim      text
);

-- name: CreateExecutionsIndex :exec
CREATE INDEX IF NOT EXISTS drover_lab_executions_op_key ON drover_lab_executions (op_key);

-- name: CreateEffects :exec
CREATE TABLE IF NOT EXISTS drover_lab_effects (
    id         bigserial   PRIMARY KEY,
    op_key     text        NOT NULL,
    job_id     text        NOT NULL,
    pid        integer     NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);

-- name: CreateEffectsIndex :exec
CREATE INDEX IF NOT EXISTS drover_lab_effects_op_key ON drover_lab_effects (op_key);

-- name: ExecutionInsert :one
INSERT INTO drover_lab_executions (op_key, job_id, attempt, pid)
VALUES ($1, $2, $3, $4)
RETURNING id;

-- name: ExecutionClaim :exec
UPDATE drover_lab_executions SET claim = $2 WHERE id = $1;

-- name: EffectInsert :exec
INSERT INTO drover_lab_effects (op_key, job_id, pid) VALUES ($1, $2, $3);

-- name: EffectCount :one
SELECT count(*) FROM drover_lab_effects WHERE op_key = $1;

-- name: ExecutionList :many
SELECT job_id, attempt, pid, coalesce(claim, '') FROM drover_lab_executions
WHERE op_key = $1
ORDER BY id;
