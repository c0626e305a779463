package idempotency

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed40057009/drover/internal/pgsql"
)

// PostgresDB is what a Ledger needs of a PostgreSQL handle to open its own
// transactions (Do, Prune): *pgxpool.Pool and *pgx.Conn have it.
type PostgresDB interface {
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

// NewPostgres returns the ledger in the PostgreSQL database behind db, whose
// schema pgmigrate.Up created. ClaimTx and CompleteTx take the caller's
// pgx.Tx; Do and Prune open their own through db.
func NewPostgres(db PostgresDB, opts *Options) *Ledger[pgx.Tx] {
	return newLedger[pgx.Tx](postgres{db}, db, opts)
}

var (
	pgFindOrLock = pgsql.Query(pgsql.Postgres, "OperationFindOrLock")
	pgInsert     = pgsql.Query(pgsql.Postgres, "OperationInsert")
	pgResult     = pgsql.Query(pgsql.Postgres, "OperationResult")
	pgComplete   = pgsql.Query(pgsql.Postgres, "OperationComplete")
	pgLockWait   = pgsql.Query(pgsql.Postgres, "OperationLockWait")
	pgLanded     = pgsql.Query(pgsql.Postgres, "OperationLanded")
	pgPrune      = pgsql.Query(pgsql.Postgres, "OperationPrune")
)

type postgres struct{ db PostgresDB }

func (p postgres) begin(ctx context.Context) (pgx.Tx, error) {
	return p.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
}

func (postgres) commit(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }

// commitInDoubt: see pgsql.CommitInDoubt.
func (postgres) commitInDoubt(err error) bool { return pgsql.CommitInDoubt(err) }

// oneWriter: a claim locks its key only.
func (postgres) oneWriter() bool { return false }

// landed waits for the key's advisory lock, so for the claiming
// transaction to end on the server (its session may outlive the client's
// connection), then reads whether the claim made at claimedAt committed.
func (p postgres) landed(ctx context.Context, key string, claimedAt time.Time) (bool, error) {
	var landed bool
	err := pgx.BeginTxFunc(ctx, p.db, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, pgLockWait, key); err != nil {
			return err
		}
		return tx.QueryRow(ctx, pgLanded, key, claimedAt).Scan(&landed)
	})
	return landed, err
}

func (postgres) rollback(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) }

// lookup reports false without asking: the claim's first statement answers a
// duplicate in the same single round trip.
func (postgres) lookup(context.Context, string) ([]byte, bool, error) { return nil, false, nil }

// claim is at most three statements: look for a committed row or try the
// key's advisory lock; insert; and, only if a claimer committed in between,
// read its result. See the queries in internal/pgsql for why the insert never
// waits.
func (postgres) claim(ctx context.Context, tx pgx.Tx, key string, now time.Time) (Claim, error) {
	var (
		found, locked bool
		result        []byte
	)
	if err := tx.QueryRow(ctx, pgFindOrLock, key).Scan(&found, &result, &locked); err != nil {
		return Claim{}, err
	}
	switch {
	case found:
		return Claim{Key: key, Status: AlreadyCompleted, Result: result}, nil
	case !locked:
		return Claim{Key: key, Status: InProgressElsewhere}, nil
	}
	tag, err := tx.Exec(ctx, pgInsert, key, now)
	if err != nil {
		return Claim{}, err
	}
	if tag.RowsAffected() == 1 {
		return Claim{Key: key, Status: Claimed}, nil
	}
	if err := tx.QueryRow(ctx, pgResult, key).Scan(&result); err != nil {
		return Claim{}, err
	}
	return Claim{Key: key, Status: AlreadyCompleted, Result: result}, nil
}

func (postgres) complete(ctx context.Context, tx pgx.Tx, key string, result []byte, now time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, pgComplete, key, result, now)
	return tag.RowsAffected() == 1, err
}

func (p postgres) pruneBatch(ctx context.Context, before time.Time, limit int) (int64, error) {
	var n int64
	err := pgx.BeginTxFunc(ctx, p.db, pgx.TxOptions{}, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, pgPrune, before, limit)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
