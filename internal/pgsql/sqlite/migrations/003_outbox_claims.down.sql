DROP INDEX drover_outbox_claims;
ALTER TABLE drover_outbox DROP COLUMN claimed_until;
ALTER TABLE drover_outbox DROP COLUMN claim_token;
