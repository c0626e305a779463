-- The transactional outbox behind package outbox.
--
-- outbox.AddTx inserts a row in the caller's business transaction; the Relay
-- adds each pending row to its queue as job "<prefix><id>" and then marks it
-- sent. The job id is derived from the row id, so a relay that dies between
-- the two steps re-adds the same id, which the queue reports as a duplicate:
-- one row, one job. Ids come from an identity column and are never reused.
CREATE TABLE drover_outbox (
    id           bigint      GENERATED ALWAYS AS IDENTITY,
    queue        text        NOT NULL,
    name         text        NOT NULL,
    data         text        NOT NULL, -- job data, JSON
    opts         text,                 -- job options, JSON; NULL for none
    created_at   timestamptz NOT NULL,
    available_at timestamptz NOT NULL, -- not relayed before; moved on by failed attempts
    attempts     integer     NOT NULL DEFAULT 0,
    last_error   text,
    sent_at      timestamptz,
    job_id       text,
    CONSTRAINT drover_outbox_pkey PRIMARY KEY (id)
);

-- The relay's work list: pending rows in id order.
CREATE INDEX drover_outbox_pending ON drover_outbox (id) WHERE sent_at IS NULL;

-- Wake relays listening on channel drover_outbox when rows are added, by any
-- writer. Notifications are delivered at commit, once per channel and payload
-- per transaction.
CREATE FUNCTION drover_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('drover_outbox', TG_TABLE_SCHEMA);
    RETURN NULL;
END;
$$;

CREATE TRIGGER drover_outbox_notify
AFTER INSERT ON drover_outbox
FOR EACH STATEMENT EXECUTE FUNCTION drover_outbox_notify();
