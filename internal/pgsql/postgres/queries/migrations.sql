-- Bookkeeping of package pgmigrate on PostgreSQL. A run of Up or Down is one
-- transaction (PostgreSQL's DDL is transactional) that first takes a
-- transaction-scoped advisory lock, so concurrent runs apply each migration
-- once.

-- name: MigrationsLock :exec
-- The lock id is "drovermg" in ASCII.
SELECT pg_advisory_xact_lock(7237970105436630375);

-- name: MigrationsTableExists :one
SELECT to_regclass('drover_migrations') IS NOT NULL;

-- name: MigrationsCreateTable :exec
CREATE TABLE IF NOT EXISTS drover_migrations (
    version    integer     NOT NULL PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL
);

-- name: MigrationsList :many
SELECT version, name, applied_at FROM drover_migrations ORDER BY version;

-- name: MigrationsInsert :exec
INSERT INTO drover_migrations (version, name, applied_at) VALUES ($1, $2, $3);

-- name: MigrationsDelete :exec
DELETE FROM drover_migrations WHERE version = $1;
