-- The transactional outbox behind package outbox.
--
-- outbox.AddTx inserts a row in the caller's business transaction; the Relay
-- adds each pending row to its queue as job "<prefix><id>" and then marks it
-- sent. The job id is derived from the row id, so a relay that dies between
-- the two steps re-adds the same id, which the queue reports as a duplicate:
-- one row, one job. AUTOINCREMENT keeps SQLite from reusing the ids of
-- deleted rows. Times are unix milliseconds.
CREATE TABLE drover_outbox (
    id           INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    queue        TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    data         TEXT    NOT NULL, -- job data, JSON
    opts         TEXT,             -- job options, JSON; NULL for none
    created_at   INTEGER NOT NULL,
    available_at INTEGER NOT NULL, -- not relayed before; moved on by failed attempts
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    sent_at      INTEGER,
    job_id       TEXT
);

-- The relay's work list: pending rows in id order.
CREATE INDEX drover_outbox_pending ON drover_outbox (id) WHERE sent_at IS NULL;
