-- The transactional outbox behind package outbox.
--
-- outbox.AddTx inserts a row in the caller's business transaction; a Relay
-- adds each pending row to its queue under a job id derived from the row id
-- ("outbox-<id>") and then marks the row sent. A relay that dies between the
-- two steps leaves the row pending, and the next relay's add of the same id is
-- reported by the queue as a duplicate: one row, one job. AUTOINCREMENT keeps
-- SQLite from reusing the ids of deleted rows. Times are unix milliseconds.
CREATE TABLE drover_outbox (
    id         INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    queue      TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    data       TEXT    NOT NULL, -- job data, JSON
    opts       TEXT,             -- job options, JSON (see package outbox); NULL for none
    created_at INTEGER NOT NULL,
    sent_at    INTEGER,          -- added to the queue
    job_id     TEXT,             -- the job it became
    failed_at  INTEGER,          -- refused by the queue (invalid options); never retried
    last_error TEXT
);

-- The relays' work list: pending rows in id order.
CREATE INDEX drover_outbox_pending ON drover_outbox (id) WHERE sent_at IS NULL AND failed_at IS NULL;
