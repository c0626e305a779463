-- Nothing to change on PostgreSQL: its relays claim rows with row locks
-- (FOR UPDATE SKIP LOCKED). SQLite's relays need claim columns (see the
-- SQLite migration of the same number); the version exists in both
-- dialects so that they number alike.
SELECT 1;
