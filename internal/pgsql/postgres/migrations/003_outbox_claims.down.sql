-- Nothing to revert on PostgreSQL (see 003_outbox_claims.up.sql).
SELECT 1;
