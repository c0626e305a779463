-- The failure lab's own tables and queries on SQLite: the same rows as on
-- PostgreSQL (see postgres.sql), with numbered parameters (?1) in the order
-- of the PostgreSQL ones, so one Go call site serves both. Times are unix
-- milliseconds.

-- name: CreateExecutions :exec
CREATE TABLE IF NOT EXISTS drover_lab_executions (
    id         INTEGER PRIMARY KEY,
    op_key     TEXT    NOT NULL,
    job_id     TEXT    NOT NULL,
    attempt    INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    started_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)),
    claim      TEXT
);

-- name: CreateExecutionsIndex :exec
CREATE INDEX IF NOT EXISTS drover_lab_executions_op_key ON drover_lab_executions (op_key);

-- name: CreateEffects :exec
CREATE TABLE IF NOT EXISTS drover_lab_effects (
    id         INTEGER PRIMARY KEY,
    op_key     TEXT    NOT NULL,
    job_id     TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    written_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER))
);

-- name: CreateEffectsIndex :exec
CREATE INDEX IF NOT EXISTS drover_lab_effects_op_key ON drover_lab_effects (op_key);

-- name: ExecutionInsert :one
INSERT INTO drover_lab_executions (op_key, job_id, attempt, pid)
VALUES (?1, ?2, ?3, ?4)
RETURNING id;

-- name: ExecutionClaim :exec
UPDATE drover_lab_executions SET claim = ?2 WHERE id = ?1;

-- name: EffectInsert :exec
INSERT INTO drover_lab_effects (op_key, job_id, pid) VALUES (?1, ?2, ?3);

-- name: EffectCount :one
SELECT count(*) FROM drover_lab_effects WHERE op_key = ?1;

-- name: ExecutionList :many
SELECT job_id, attempt, pid, coalesce(claim, '') FROM drover_lab_executions
WHERE op_key = ?1
ORDER BY id;
