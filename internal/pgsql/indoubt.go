package pgsql

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CommitInDoubt reports whether a PostgreSQL COMMIT that failed with err
// may have committed all the same: unless PostgreSQL answered (a
// *pgconn.PgError: the transaction rolled back), the transaction was over
// before the COMMIT, or ctx had ended before it was sent, the COMMIT went
// out and its answer was lost. pgconn.SafeToRetry alone cannot tell: a
// connection that broke while pgx sent the COMMIT (its background reader
// met the reset) comes back as "conn closed", which pgx calls safe to
// retry, after the COMMIT ran.
func CommitInDoubt(err error) bool {
	var pgErr *pgconn.PgError
	notSent := pgconn.SafeToRetry(err) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
	return err != nil && !errors.As(err, &pgErr) && !notSent &&
		!errors.Is(err, pgx.ErrTxClosed) && !errors.Is(err, pgx.ErrTxCommitRollback)
}
