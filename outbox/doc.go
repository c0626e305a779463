// Package outbox adds jobs to drover queues as part of a database
// transaction: the transactional outbox pattern.
//
// A handler that writes an order and then adds a "send confirmation" job
// has two systems to keep in step. Add the job first and the order may roll
// back, leaving a job about nothing; add it after the commit and a crash in
// between loses it. The outbox makes the job part of the transaction: [Outbox.AddTx]
// writes it as a row of drover_outbox with the order, so both commit or
// neither does, and a [Relay] moves committed rows into their queues.
//
//	ob := outbox.NewPostgres(pool)
//
//	tx, err := pool.Begin(ctx)
//	if err != nil {
//		return err
//	}
//	defer tx.Rollback(ctx)
//	if _, err := tx.Exec(ctx, "INSERT INTO orders (id, total_cents) VALUES ($1, $2)", id, total); err != nil {
//		return err
//	}
//	if err := ob.AddTx(ctx, tx, "emails", "order-confirmation", map[string]any{"order": id}, nil); err != nil {
//		return err
//	}
//	return tx.Commit(ctx)
//
// and, once per process that should relay:
//
//	relay, err := outbox.NewRelay(ob, rdb, &outbox.RelayOptions{Logger: logger})
//	if err != nil {
//		return err
//	}
//	if err := relay.Start(ctx); err != nil {
//		return err
//	}
//	defer relay.Close(shutdownCtx) // shutdownCtx: a context with a deadline
//
// Create the table with pgmigrate.Up first. AddTx assumes nothing about the
// transaction's isolation level: the row is an ordinary insert, invisible to
// relays until the transaction commits.
//
// # One row, one job
//
// A relay claims a batch of pending rows, adds each to its queue, and marks
// the rows sent. It can die between the add and the mark; the rows are then
// still pending, and the next relay adds them again. That second add creates
// nothing, because a row's job id is derived from the row's id
// ("outbox-<id>", see [RelayOptions.JobIDPrefix]): drover reports the add as
// a duplicate of the existing job, and the relay marks the row sent. Every
// row becomes exactly one job, however often relays crash, as long as the
// first job still exists in Redis when the row is re-added: a job removed on
// completion (RemoveOnComplete) in the moments between a crash and the
// re-add would be added again. Relays re-add within the poll interval or the
// retry delay, so keep completed jobs for longer than that when it matters,
// or make the job's processor idempotent with package idempotency.
//
// A row with its own JobID keeps it, so business ids stay business ids; a
// row whose JobID names an existing job is relayed as its duplicate.
//
// Row ids, and with them the derived job ids, are unique only while the
// table lives: re-created (pgmigrate.Down and Up), restored from an older
// backup, or with its ids reset, the outbox hands out ids again that name
// jobs Redis may still keep. A relay that finds the job of a derived id
// added before the row was written (by the clocks of the row's writer and
// of the relay that added the job, or by the row's JobOptions.Timestamp),
// with another name or other data than the row's, does not take the row
// for its duplicate (it would be marked sent and never become a job): it
// marks the row failed, saying so. An old job with the row's very name and
// data passes for its job. Give the relays a new
// [RelayOptions.JobIDPrefix] whenever the ids may start again, and set
// such rows pending again (failed_at and last_error NULL).
//
// On PostgreSQL, commit the transactions that write rows durably
// (synchronous_commit on, the default). A relay sees a row as soon as its
// transaction commits; with synchronous_commit off a server crash can then
// lose the commit after the relay added the job (a job whose row and
// business transaction are gone), and the lost row's id may go to a new row,
// whose job the relay would take for that job's duplicate.
//
// # Rows of one Deduplication ID
//
// Rows sharing a Deduplication ID in Replace (debounce) mode reach Redis in
// row order, so the newest row's job is the one that stands: a row whose
// ID an older pending row has, held by another relay's batch in flight,
// waits for that batch (to the next poll), even across relays; added
// first, it would be replaced by the older row's job. A relay that dies
// holding the older row delays the newer ones until its rows are released
// (PostgreSQL: with its connection; SQLite: when its lease runs out).
// Rows of one batch are added in row order. Row ids are taken at insert,
// not at commit: a row whose transaction commits after a newer row of its
// ID was relayed is relayed after it, and its job replaces the newer one.
//
// # PostgreSQL and SQLite
//
// On PostgreSQL a batch is a transaction that locks its rows (FOR UPDATE
// SKIP LOCKED) until they are marked: relays in many processes share the
// work without waiting for each other, and a relay that dies releases its
// rows with its connection. A relay cut off from the database without either
// side seeing it (a half-open connection) gives its batch up after
// [RelayOptions.BatchTimeout], and PostgreSQL ends the batch's transaction
// once it has been idle as long, releasing its rows. A trigger notifies channel drover_outbox on every
// insert; relays LISTEN on it and relay new rows at once, and poll every
// [RelayOptions.PollInterval] as a fallback.
//
// SQLite has neither row locks nor notifications. A relay claims a batch in
// one short write that leases its rows to the batch (columns claim_token and
// claimed_until, migration 003_outbox_claims), adds them holding no lock
// (SQLite's single write lock held across a Redis call would stall every
// writer), and marks them in a short write transaction, only while its claim
// still holds them. Other relays skip leased rows, so each row gets one
// relay's verdict, sent or failed, as on PostgreSQL. A relay that dies
// leaves its rows leased for up to 30 seconds; one whose batch outlives
// that (Redis unreachable as long) may find them taken over by another
// relay, whose verdict stands (its own marks are dropped, with a warning).
// An idle relay only reads. Relays poll.
//
// # Failures
//
// When Redis or the database cannot be reached, the batch fails, its rows
// stay pending, and the relay retries with exponential backoff between
// [RelayOptions.MinRetryDelay] and [RelayOptions.MaxRetryDelay], for as long
// as it takes: rows are never dropped for being unreachable. A row the queue
// refuses for good (options only the queue can judge, say a custom backoff
// type it does not know; AddTx refuses the others), or that Redis refuses
// whatever the retry (a key of its queue holding another type, WRONGTYPE; a
// row over the server's proto-max-bulk-len), is marked failed with the
// reason and logged at error level; the other rows of its batch go on. On a
// Redis Cluster that includes a row whose queue name has no {hash tag} when
// the relay's prefix has none either (see [NewRelay]).
package outbox
