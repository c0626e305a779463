package idempotency

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"time"

	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/pgsql"
)

// logKeyClaim is the attribute with the claim outcome: inserted, existed or
// in_progress. It belongs in internal/logkey.
const logKeyClaim = "claim"

// Status is what a claim found.
type Status int

const (
	// Claimed: the key was free and this transaction now owns it. Run the
	// effect in the same transaction and record its result with CompleteTx;
	// the claim commits or rolls back with the effect.
	Claimed Status = iota + 1

	// AlreadyCompleted: a transaction that claimed the key committed, so
	// the effect happened. Do not run it again; Claim.Result holds the
	// recorded result.
	AlreadyCompleted

	// InProgressElsewhere: another transaction claimed the key and is still
	// open. Do not run the effect; try again later. PostgreSQL only: SQLite
	// lets one writer at a time in, so there a concurrent claimer waits for
	// the other transaction instead and then sees AlreadyCompleted or
	// Claimed.
	InProgressElsewhere
)

func (s Status) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case AlreadyCompleted:
		return "already_completed"
	case InProgressElsewhere:
		return "in_progress_elsewhere"
	default:
		return "Status(" + strconv.Itoa(int(s)) + ")"
	}
}

// logValue is the claim attribute of the log line.
func (s Status) logValue() string {
	switch s {
	case Claimed:
		return "inserted"
	case AlreadyCompleted:
		return "existed"
	case InProgressElsewhere:
		return "in_progress"
	default:
		return s.String()
	}
}

// Claim is the outcome of [Ledger.ClaimTx].
type Claim struct {
	Key    string
	Status Status
	// Result is the result recorded by CompleteTx when Status is
	// AlreadyCompleted; nil otherwise, and nil too when the claiming
	// transaction recorded a nil result or committed without CompleteTx.
	Result []byte
}

// Result is the outcome of [Ledger.Do].
type Result struct {
	Key string
	// Status is what the claim found. With a nil error, Claimed means the
	// function ran and its transaction committed (an effect), and
	// AlreadyCompleted means the function did not run (a duplicate
	// suppressed). With an error and Claimed, the function ran but nothing
	// committed, unless the error wraps ErrCommitInDoubt: then the commit
	// was sent, its answer lost and the claim could not be read back, and
	// it may have committed.
	Status Status
	// Value is the function's result when Status is Claimed, or the
	// recorded result when it is AlreadyCompleted.
	Value []byte
}

// Options configure a [Ledger]. A nil *Options means all defaults.
type Options struct {
	// Logger receives an info line for every claim, with the attributes
	// op_key and claim (inserted, existed or in_progress).
	//
	// Defaults to nil, which discards.
	Logger *slog.Logger
}

// Ledger claims operation keys in one database. Make one with [NewPostgres]
// or [NewSQLite]; Tx is that database's transaction type, so the functions
// given to Do receive the transaction they would use anyway. A Ledger is safe
// for concurrent use.
type Ledger[Tx any] struct {
	db     database[Tx]
	noDB   bool // made with a nil handle: Do and Prune fail, ClaimTx and CompleteTx work
	logger *slog.Logger
	now    func() time.Time
	// handle is the database handle given to the constructor, as far as
	// Do can tell it from another (see sameHandle): ledgers sharing one
	// share a database, which is what a nested Do asks (openDo).
	handle any
}

// database is what a Ledger needs from one kind of database. The claim
// protocol differs by database (see ClaimTx); the rest is plumbing.
type database[Tx any] interface {
	// begin opens a transaction for Do, at READ COMMITTED where there is a
	// choice.
	begin(ctx context.Context) (Tx, error)
	commit(ctx context.Context, tx Tx) error
	// commitInDoubt reports whether a commit that failed with err may
	// have committed all the same: it was sent, and its answer was lost.
	commitInDoubt(err error) bool
	// landed reads back, after a commit in doubt, whether the claim of key
	// made at claimedAt committed, once the claiming transaction has
	// ended on the server.
	landed(ctx context.Context, key string, claimedAt time.Time) (bool, error)
	rollback(ctx context.Context, tx Tx) error

	// lookup finds a completed key outside any transaction, so Do can answer
	// a duplicate without taking a write lock. It may always report false.
	lookup(ctx context.Context, key string) (result []byte, found bool, err error)
	claim(ctx context.Context, tx Tx, key string, now time.Time) (Claim, error)
	complete(ctx context.Context, tx Tx, key string, result []byte, now time.Time) (ok bool, err error)
	// pruneBatch deletes up to limit rows claimed before the cutoff.
	pruneBatch(ctx context.Context, before time.Time, limit int) (int64, error)
	// oneWriter reports whether an open claim holds the whole database's
	// write lock (SQLite), so that any other claim waits for it.
	oneWriter() bool
}

// newLedger makes the ledger; handle is the database handle given to the
// constructor, checked for nil only when Do or Prune needs it.
func newLedger[Tx any](db database[Tx], handle any, opts *Options) *Ledger[Tx] {
	if opts == nil {
		opts = &Options{}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l := &Ledger[Tx]{db: db, noDB: pgsql.IsNil(handle), logger: logger, now: time.Now}
	if !l.noDB && reflect.ValueOf(handle).Comparable() {
		l.handle = handle
	}
	return l
}

// openDo is a Do whose function is running: the ctx Do hands its function
// carries them all, innermost first, so a Do inside can tell whether it
// would wait for one of them (nested).
type openDo struct {
	handle any // the ledger's handle; nil: not comparable, never matches
	key    string
	outer  *openDo
}

type openDoContextKey struct{}

// nested returns the error wrapping ErrNestedDo for a Do of key that could
// only wait for an enclosing Do on the same database, or nil.
func (l *Ledger[Tx]) nested(ctx context.Context, key string) error {
	if l.handle == nil {
		return nil
	}
	for o, _ := ctx.Value(openDoContextKey{}).(*openDo); o != nil; o = o.outer {
		switch {
		case o.handle != l.handle:
		case o.key == key:
			return fmt.Errorf("%w: the enclosing Do holds operation %s on this database", ErrNestedDo, quoteKey(key))
		case l.db.oneWriter():
			return fmt.Errorf("%w: the enclosing Do of operation %s holds this SQLite database's write lock "+
				"(claim inside its transaction with ClaimTx and CompleteTx instead)", ErrNestedDo, quoteKey(o.key))
		}
	}
	return nil
}

// ClaimTx claims the operation key inside tx, the caller's transaction, and
// reports what it found: Claimed (run the effect in tx, then CompleteTx),
// AlreadyCompleted (skip it), or InProgressElsewhere (skip it and try again
// later). It never blocks on another claimer on PostgreSQL; see the package
// documentation for the isolation level assumed and for SQLite.
//
// Claim a key once per transaction: a second claim of the same key in the
// transaction that claimed it reports AlreadyCompleted, which is the right
// answer for a caller that would otherwise run the effect twice.
//
// An error means nothing is known: roll tx back.
func (l *Ledger[Tx]) ClaimTx(ctx context.Context, tx Tx, key string) (Claim, error) {
	return l.claimAt(ctx, tx, key, l.now())
}

// claimAt is ClaimTx with the claim's time, which Do reads back by.
func (l *Ledger[Tx]) claimAt(ctx context.Context, tx Tx, key string, now time.Time) (Claim, error) {
	if err := ValidateKey(key); err != nil {
		return Claim{Key: key}, err
	}
	if pgsql.IsNil(tx) {
		return Claim{Key: key}, fmt.Errorf("idempotency: claim operation %s: %w", quoteKey(key), errNilTx)
	}
	if ctx == nil {
		return Claim{Key: key}, fmt.Errorf("idempotency: claim operation %s: %w", quoteKey(key), errNilContext)
	}
	c, err := l.db.claim(ctx, tx, key, now)
	if err != nil {
		return Claim{Key: key}, fmt.Errorf("idempotency: claim operation %s: %w", quoteKey(key), err)
	}
	l.logClaim(ctx, c)
	return c, nil
}

func (l *Ledger[Tx]) logClaim(ctx context.Context, c Claim) {
	l.logger.LogAttrs(ctx, slog.LevelInfo, "operation claim",
		slog.String(logkey.OpKey, c.Key), slog.String(logKeyClaim, c.Status.logValue()))
}

// CompleteTx records the effect's result on the key that tx claimed; it
// commits with tx. result may be nil. It returns an error wrapping
// ErrNotClaimed when tx did not claim the key or the result is already
// recorded.
func (l *Ledger[Tx]) CompleteTx(ctx context.Context, tx Tx, key string, result []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if pgsql.IsNil(tx) {
		return fmt.Errorf("idempotency: complete operation %s: %w", quoteKey(key), errNilTx)
	}
	if ctx == nil {
		return fmt.Errorf("idempotency: complete operation %s: %w", quoteKey(key), errNilContext)
	}
	ok, err := l.db.complete(ctx, tx, key, result, l.now())
	if err != nil {
		return fmt.Errorf("idempotency: complete operation %s: %w", quoteKey(key), err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotClaimed, quoteKey(key))
	}
	return nil
}

// Do runs fn at most once per operation key, across retries, processes and
// machines, as long as fn's effect is written through the transaction it is
// handed. Do opens a transaction, claims the key, and:
//
//   - when the key was free, calls fn with the transaction and a ctx that
//     carries the key (see KeyFrom), records fn's result with CompleteTx and
//     commits. Result.Status is Claimed.
//   - when a committed transaction already claimed it, returns the recorded
//     result without calling fn. Result.Status is AlreadyCompleted and the
//     error is nil: a duplicate suppressed is a success.
//   - when another open transaction holds it (PostgreSQL), returns at once
//     with Result.Status InProgressElsewhere and an error wrapping
//     ErrInProgressElsewhere, so a queue job retries later.
//
// An error from fn rolls everything back, the claim included, and is
// returned as is, so errors that steer a job's retries pass through. A
// commit whose answer was lost (the connection broke, ctx ended) is read
// back on another connection (PostgreSQL), once the transaction has ended
// on the server, for up to 5 s more and whether or not ctx ended: if it
// committed, Do succeeds; if not, its error says nothing committed; if
// the read fails too, the error wraps ErrCommitInDoubt: the effect may have
// committed, so do not undo or redo it outside the ledger; Do again, which
// runs fn only if it did not. fn must not commit or roll back the
// transaction itself.
//
// A Do inside fn, on the same database and with fn's ctx (or one made from
// it), that could only wait for this Do's open transaction returns at once
// with an error wrapping ErrNestedDo and runs nothing: one with the same
// key, and on SQLite one with any key (the transaction holds SQLite's only
// write lock). Another key on PostgreSQL is another transaction, which
// commits or rolls back on its own. Ledgers share a database when they were
// made with the same handle; a Do through a second *sql.DB on the same
// SQLite file, or with a ctx not made from fn's, cannot be told and waits
// for the write lock up to the busy timeout.
func (l *Ledger[Tx]) Do(ctx context.Context, key string, fn func(ctx context.Context, tx Tx) ([]byte, error)) (Result, error) {
	if err := ValidateKey(key); err != nil {
		return Result{Key: key}, err
	}
	switch {
	case fn == nil:
		return Result{Key: key}, fmt.Errorf("idempotency: do operation %s: the function is nil", quoteKey(key))
	case l.noDB:
		return Result{Key: key}, fmt.Errorf("idempotency: do operation %s: %w", quoteKey(key), errNoDB)
	case ctx == nil:
		return Result{Key: key}, fmt.Errorf("idempotency: do operation %s: %w", quoteKey(key), errNilContext)
	}
	if err := l.nested(ctx, key); err != nil {
		return Result{Key: key}, fmt.Errorf("idempotency: do operation %s: %w", quoteKey(key), err)
	}
	if stored, found, err := l.db.lookup(ctx, key); err != nil {
		return Result{Key: key}, fmt.Errorf("idempotency: look up operation %s: %w", quoteKey(key), err)
	} else if found {
		l.logClaim(ctx, Claim{Key: key, Status: AlreadyCompleted})
		return Result{Key: key, Status: AlreadyCompleted, Value: stored}, nil
	}

	tx, err := l.db.begin(ctx)
	if err != nil {
		return Result{Key: key}, fmt.Errorf("idempotency: begin transaction for operation %s: %w", quoteKey(key), err)
	}
	committed := false
	defer func() {
		if !committed {
			// Detached from ctx, and bounded (see pgsql.RollbackContext).
			rctx, cancel := pgsql.RollbackContext(ctx)
			defer cancel()
			_ = l.db.rollback(rctx, tx)
		}
	}()

	claimedAt := l.now()
	claim, err := l.claimAt(ctx, tx, key, claimedAt)
	if err != nil {
		return Result{Key: key}, err
	}
	switch claim.Status {
	case AlreadyCompleted:
		return Result{Key: key, Status: AlreadyCompleted, Value: claim.Result}, nil
	case InProgressElsewhere:
		return Result{Key: key, Status: InProgressElsewhere},
			fmt.Errorf("%w: %s", ErrInProgressElsewhere, quoteKey(key))
	}

	open := &openDo{handle: l.handle, key: key}
	open.outer, _ = ctx.Value(openDoContextKey{}).(*openDo)
	value, err := fn(context.WithValue(WithKey(ctx, key), openDoContextKey{}, open), tx)
	if err != nil {
		return Result{Key: key, Status: Claimed}, err
	}
	if err := l.CompleteTx(ctx, tx, key, value); err != nil {
		return Result{Key: key, Status: Claimed}, err
	}
	if err := l.db.commit(ctx, tx); err != nil {
		if !l.db.commitInDoubt(err) {
			return Result{Key: key, Status: Claimed}, fmt.Errorf("idempotency: commit operation %s: %w", quoteKey(key), err)
		}
		return l.readBack(ctx, key, claimedAt, value, err)
	}
	committed = true
	return Result{Key: key, Status: Claimed, Value: value}, nil
}

// readBack settles a commit whose answer was lost (commitErr) by reading
// the claim made at claimedAt back on another connection, within
// pgsql.RollbackTimeout and whether or not ctx ended (its end may be what
// cut the answer off): committed, Do succeeded with value; not committed,
// nothing did; unreadable, the error wraps ErrCommitInDoubt.
func (l *Ledger[Tx]) readBack(ctx context.Context, key string, claimedAt time.Time, value []byte, commitErr error) (Result, error) {
	rctx, cancel := pgsql.RollbackContext(ctx)
	defer cancel()
	landed, err := l.db.landed(rctx, key, claimedAt)
	switch {
	case err != nil:
		return Result{Key: key, Status: Claimed}, fmt.Errorf("%w: operation %s: %w (reading the claim back failed too: %w)",
			ErrCommitInDoubt, quoteKey(key), commitErr, err)
	case landed:
		return Result{Key: key, Status: Claimed, Value: value}, nil
	default:
		return Result{Key: key, Status: Claimed}, fmt.Errorf("idempotency: commit operation %s: its answer was lost, "+
			"and reading the claim back found that it did not land (nothing committed): %w", quoteKey(key), commitErr)
	}
}

// PruneBatchSize is how many ledger rows Prune deletes per statement.
const PruneBatchSize = 1000

// Prune deletes the ledger rows of operations claimed before the cutoff, in
// batches of PruneBatchSize, and returns how many it deleted. A pruned key
// can be claimed again, so keep rows for longer than any duplicate can
// arrive: longer than a job's retries can last, and than producers can
// re-submit the same business operation.
func (l *Ledger[Tx]) Prune(ctx context.Context, before time.Time) (int64, error) {
	if l.noDB {
		return 0, fmt.Errorf("idempotency: prune: %w", errNoDB)
	}
	if ctx == nil {
		return 0, fmt.Errorf("idempotency: prune: %w", errNilContext)
	}
	var total int64
	for {
		n, err := l.db.pruneBatch(ctx, before, PruneBatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("idempotency: prune operations claimed before %s: %w", before.Format(time.RFC3339), err)
		}
		if n < PruneBatchSize {
			return total, nil
		}
	}
}
