// Package idempotency makes a job's side effect happen once, although the job
// may run more than once.
//
// A queue that recovers work runs some jobs twice: a retry after the effect
// was written but before the job was acknowledged, a worker killed after its
// write and recovered as stalled, two producers submitting the same business
// operation. The queue cannot prevent that. The effect can tolerate it if it
// is written in a database transaction that also claims a durable operation
// key: the first transaction to commit the claim wins, every later one sees
// the key taken and skips the effect. This package is that ledger, on
// PostgreSQL (pgx v5) or SQLite (database/sql).
//
// # Using it
//
// Create the ledger table once with pgmigrate.Up. Then, in a processor:
//
//	ledger := idempotency.NewPostgres(pool, nil)
//
//	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
//		key := idempotency.OpKey("welcome-email", userID)
//		res, err := ledger.Do(ctx, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
//			_, err := tx.Exec(ctx, "INSERT INTO outgoing_mail (user_id, template) VALUES ($1, 'welcome')", userID)
//			return nil, err
//		})
//		if err != nil {
//			return nil, err // ErrInProgressElsewhere too: the job retries later
//		}
//		if res.Status == idempotency.AlreadyCompleted {
//			// a duplicate run: nothing was written twice
//			return "already sent", nil
//		}
//		return nil, nil
//	})
//
// [Ledger.Do] opens the transaction, claims the key, runs the function,
// records its result and commits. When the transaction is already open (the
// effect is part of a larger unit of work), claim inside it with
// [Ledger.ClaimTx] and record the result with [Ledger.CompleteTx]:
//
//	claim, err := ledger.ClaimTx(ctx, tx, key)
//	if err != nil {
//		return err
//	}
//	if claim.Status != idempotency.Claimed {
//		return nil // done before, or being done right now by someone else
//	}
//	// ... write the effect with tx ...
//	return ledger.CompleteTx(ctx, tx, key, result)
//
// The claim is a row in drover_operations written by the caller's
// transaction: it commits if and only if the effect commits. A rolled-back
// attempt leaves no trace, and its retry claims the key afresh.
//
// Build keys with [OpKey] from what identifies the business operation ("charge
// order 42"), never from what differs between attempts. Keys are at most
// [MaxKeyLen] bytes of UTF-8; [ValidateKey] says why one is not.
//
// # Concurrent duplicates on PostgreSQL
//
// The caller's transaction is assumed to run at READ COMMITTED, PostgreSQL's
// default, and Do uses it: each statement sees what committed before it
// began. A claim first looks for a committed row (found: AlreadyCompleted, in
// one round trip). Otherwise it tries a transaction-scoped advisory lock
// derived from the key, without waiting, and inserts the row only while
// holding it. So when two transactions claim the same key at the same moment,
// one gets Claimed and the other InProgressElsewhere at once, not after the
// first finishes: the effect may include a slow call, and a worker should not
// sit on a connection meanwhile. Do turns InProgressElsewhere into
// [ErrInProgressElsewhere], so the job is retried with backoff; by then the
// first transaction has committed (the retry reports AlreadyCompleted) or
// rolled back (the retry claims the key).
//
// The lock lives as long as the claiming transaction. A transaction whose
// client hangs, or whose connection a network partition cut without the
// server seeing it, keeps the key in progress (every retry reports
// InProgressElsewhere) until PostgreSQL ends the session: set
// idle_in_transaction_session_timeout (and TCP keepalives,
// tcp_keepalives_idle) for the role the workers use, so such a claim is
// released in seconds rather than at the operating system's TCP timeout.
//
// At REPEATABLE READ or SERIALIZABLE the protocol stays safe, but a claim
// that races a committing duplicate can fail with a serialization error
// (SQLSTATE 40001), to be retried like any other.
//
// The advisory lock id is a 64-bit hash of the key, so another key (or an
// application lock) with the same id would make a claim report
// InProgressElsewhere spuriously while that lock is held: retried, never
// wrong.
//
// # Concurrent duplicates on SQLite
//
// SQLite lets one transaction write at a time. The claim is an insert that
// takes the write lock, waiting up to the connection's busy timeout, and
// holds it until the transaction ends; so a second claimer of the same key
// waits for the first transaction and then sees AlreadyCompleted (or Claimed,
// if the first rolled back). InProgressElsewhere does not occur; a busy
// timeout that runs out is an error, and the job is retried. See [NewSQLite]
// for how to open the database. For the same reason a Do inside another
// Do's function cannot claim anything until the outer transaction ends: it
// returns [ErrNestedDo] at once (see [Ledger.Do]); claim further keys in the
// outer transaction with ClaimTx instead.
//
// # Effects outside the database
//
// A payment, an email sent through an API, a message to another system
// cannot join the transaction. Two habits make them safe to retry:
//
// Send the operation key upstream as the provider's idempotency key (the
// Idempotency-Key header many APIs accept). Do puts the key in the ctx it
// passes to the function, so an HTTP client wrapper can find it with
// [KeyFrom] without threading it through every call. A retry then repeats the
// same request, and the provider answers with the first response instead of
// acting twice. Record that response as the operation's result.
//
// Reconcile before retrying. When an earlier attempt may have reached the
// provider (it timed out, or the worker died after the call and before the
// commit), ask the provider first, by the same key, whether the operation
// happened, and record what it says instead of calling again:
//
//	res, err := ledger.Do(ctx, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
//		if job.AttemptsStarted > 1 { // an earlier attempt, failed or stalled, may have called
//			if charge, ok, err := payments.FindByIdempotencyKey(ctx, key); err != nil {
//				return nil, err
//			} else if ok {
//				return charge.JSON(), nil // it happened: record it, do not charge again
//			}
//		}
//		charge, err := payments.Charge(ctx, order, key) // key as Idempotency-Key
//		if err != nil {
//			return nil, err
//		}
//		return charge.JSON(), nil
//	})
//
// # Observability
//
// With [Options.Logger] set, every claim logs "operation claim" with the
// attributes op_key and claim (inserted, existed or in_progress). For
// metrics, count per call of Do: executions (every call), effects (Status
// Claimed with a nil error) and duplicates suppressed (Status
// AlreadyCompleted).
package idempotency
