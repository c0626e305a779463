-- The transactional outbox behind package outbox.
--
-- outbox.AddTx inserts a row in the caller's business transaction; a Relay
-- adds each pending row to its queue under a job id derived from the row id
-- ("outbox-<id>") and then marks the row sent. A relay that dies between the
-- two steps leaves the row pending, and the next relay's add of the same id is
-- reported by the queue as a duplicate: one row, one job. Ids come from an
-- identity column and are never reused.
CREATE TABLE drover_outbox (
    id         bigint      GENERATED ALWAYS AS IDENTITY,
    queue      text        NOT NULL,
    name       text        NOT NULL,
    data       text        NOT NULL, -- job data, JSON
    opts       text,                 -- job options, JSON (see package outbox); NULL for none
    created_at timestamptz NOT NULL,
    sent_at    timestamptz,          -- added to the queue
    job_id     text,                 -- the job it became
    failed_at  timestamptz,          -- refused by the queue (invalid options); never retried
    last_error text,
    CONSTRAINT drover_outbox_pkey PRIMARY KEY (id)
);

-- The relays' work list: pending rows in id order.
CREATE INDEX drover_outbox_pending ON drover_outbox (id) WHERE sent_at IS NULL AND failed_at IS NULL;

-- Wake the relays listening on channel drover_outbox when rows are added, by
-- any writer. PostgreSQL delivers the notification at commit, once per
-- transaction for the same channel and payload.
CREATE FUNCTION drover_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('drover_outbox', TG_TABLE_SCHEMA);
    RETURN NULL;
END;
$$;

CREATE TRIGGER drover_outbox_notify
AFTER INSERT ON drover_outbox
FOR EACH STATEMENT EXECUTE FUNCTION drover_outbox_notify();
