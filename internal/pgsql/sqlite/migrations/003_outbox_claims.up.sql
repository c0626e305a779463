-- Claims of SQLite outbox rows by relays.
--
-- SQLite has no row locks: a relay claims a batch by writing a token of its
-- own into its rows, leased until claimed_until (unix milliseconds). Other
-- relays skip claimed rows until the lease runs out (the relay died), and a
-- relay marks a row sent or failed only while its token is still there, so
-- the row ends with one relay's verdict, as PostgreSQL's FOR UPDATE SKIP
-- LOCKED gives. Both are NULL on a row nobody holds.
ALTER TABLE drover_outbox ADD COLUMN claim_token TEXT;
ALTER TABLE drover_outbox ADD COLUMN claimed_until INTEGER;

-- A batch reads and releases its rows by token without scanning a backlog
-- of pending rows.
CREATE INDEX drover_outbox_claims ON drover_outbox (claim_token) WHERE claim_token IS NOT NULL;
