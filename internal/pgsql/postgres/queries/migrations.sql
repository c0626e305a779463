-- Bookkeeping of package pgmigrate on PostgreSQL. A run of Up or Down is one
-- transaction (PostgreSQL's DDL is transactional) that first takes a
-- transaction-scoped advisory lock, so concurrent runs apply each migration
-- once.

-- name: MigrationsLock :exec
-- The lock id is "drovermg" in ASCII.
SELECT pg_advisory_xact_lock(7237970105436630375);

-- name: MigrationsTableExists :one
SELECT to_regclass('drover_migrations') IS NOT NULL;

-- name: MigrationsElsewhere :one
-- Where the search_path finds drover_migrations, when that is not the first
-- schema of the search_path, where Up creates tables ('' when it is, or
-- when there is none); then that first schema, and the search_path.
SELECT COALESCE((SELECT n.nspname::text
                 FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                 WHERE c.oid = to_regclass('drover_migrations')
                   AND n.nspname IS DISTINCT FROM current_schema()), ''),
       COALESCE(current_schema()::text, ''),
       current_setting('search_path');

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
