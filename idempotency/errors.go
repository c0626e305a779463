package idempotency

import "errors"

// Errors about a missing handle: a programming error, reported instead of a
// nil-pointer panic inside pgx or database/sql.
var (
	errNilTx = errors.New("the transaction is nil")
	errNoDB  = errors.New("the ledger was made with a nil database handle (NewPostgres or NewSQLite)")
	// errNilContext: the database drivers would dereference it (a panic).
	errNilContext = errors.New("the context.Context is nil (pass context.Background(), or the caller's context)")
)

var (
	// ErrInvalidKey is wrapped by errors about an operation key that is empty,
	// longer than MaxKeyLen, not UTF-8 or holds a NUL byte. Retrying will not
	// help.
	ErrInvalidKey = errors.New("idempotency: invalid operation key")

	// ErrInProgressElsewhere is returned by Do when another open transaction
	// holds the operation key. The effect did not run; retry later (a queue
	// job returning it is retried with backoff). If the other transaction
	// commits, the retry reports AlreadyCompleted; if it rolls back, the retry
	// claims the key.
	ErrInProgressElsewhere = errors.New("idempotency: operation in progress in another transaction")

	// ErrNotClaimed is returned by CompleteTx for a key that the transaction
	// did not claim, or whose result is already recorded.
	ErrNotClaimed = errors.New("idempotency: operation key not claimed by this transaction")

	// ErrCommitInDoubt is wrapped by Do's error when the COMMIT was sent but
	// its answer never came (the connection broke, the context ended), and
	// reading the claim back failed too (the database stayed out of
	// reach): the effect and its claim may have committed or not. Do again
	// to learn which: it reports AlreadyCompleted with the recorded result
	// if the commit happened, and runs the function if it did not.
	ErrCommitInDoubt = errors.New("idempotency: commit outcome unknown (its answer was lost)")
)

// ErrNestedDo is wrapped by the error of a Do called from inside another
// Do's function (with the ctx that Do handed it, or one made from it) on
// the same database, when it could only wait for the enclosing Do's open
// transaction, which waits for it: with the same operation key on any
// database, and with any key on SQLite, whose single write lock the
// enclosing transaction holds. Nothing ran or was written, and retrying
// the same code will not help: it is a programming error. To make another
// key part of the same unit of work, claim it in the enclosing function's
// transaction with ClaimTx and CompleteTx.
var ErrNestedDo = errors.New("idempotency: Do inside the function of a Do it would wait for")
