-- Bookkeeping of package pgmigrate on SQLite. A run of Up or Down is one
-- BEGIN IMMEDIATE transaction (SQLite's DDL is transactional too), which
-- takes the write lock up front, so concurrent runs apply each migration once.
-- applied_at is unix milliseconds.

-- name: MigrationsTableExists :one
SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'drover_migrations';

-- name: MigrationsCreateTable :exec
CREATE TABLE IF NOT EXISTS drover_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
);

-- name: MigrationsList :many
SELECT version, name, applied_at FROM drover_migrations ORDER BY version;

-- name: MigrationsInsert :exec
INSERT INTO drover_migrations (version, name, applied_at) VALUES (?1, ?2, ?3);

-- name: MigrationsDelete :exec
DELETE FROM drover_migrations WHERE version = ?1;
