package outbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed40057009/drover/internal/pgsql"
)

// NewPostgres returns the outbox in the PostgreSQL database behind pool,
// whose schema pgmigrate.Up created. AddTx takes the caller's pgx.Tx; a relay
// uses the pool for its batches and holds one of its connections for LISTEN.
func NewPostgres(pool *pgxpool.Pool) *Outbox[pgx.Tx] {
	return &Outbox[pgx.Tx]{store: postgres{pool}, noDB: pgsql.IsNil(pool), now: time.Now}
}

var (
	pgInsert     = pgsql.Query(pgsql.Postgres, "OutboxInsert")
	pgClaim      = pgsql.Query(pgsql.Postgres, "OutboxClaimBatch")
	pgIdleLimit  = pgsql.Query(pgsql.Postgres, "OutboxBatchIdleLimit")
	pgMarkSent   = pgsql.Query(pgsql.Postgres, "OutboxMarkSent")
	pgOlder      = pgsql.Query(pgsql.Postgres, "OutboxOlderPending")
	pgMarkFailed = pgsql.Query(pgsql.Postgres, "OutboxMarkFailed")
	pgListen     = pgsql.Query(pgsql.Postgres, "OutboxListen")
	pgPrune      = pgsql.Query(pgsql.Postgres, "OutboxPrune")
	pgLanded     = pgsql.Query(pgsql.Postgres, "OutboxMarkLanded")
)

type postgres struct{ pool *pgxpool.Pool }

func (p postgres) insert(ctx context.Context, tx pgx.Tx, queue, name string, data, opts []byte, now time.Time) error {
	var optsText *string
	if opts != nil {
		s := string(opts)
		optsText = &s
	}
	_, err := tx.Exec(ctx, pgInsert, queue, name, string(data), optsText, now)
	return err
}

func (p postgres) ping(ctx context.Context) error { return p.pool.Ping(ctx) }

// claim opens the batch's transaction and locks its rows (FOR UPDATE SKIP
// LOCKED) until commit or rollback: while this relay adds them to Redis, other
// relays take other rows, and if this relay dies the rows return to the
// pending list with the connection. A connection the relay lost without
// PostgreSQL seeing it (half-open: a firewall forgot it) would hold the rows
// until the server's TCP keepalive noticed, hours by default: the
// transaction ends itself after idle without a statement instead
// (idle_in_transaction_session_timeout, for this transaction only, set in
// the claim's round trip).
func (p postgres) claim(ctx context.Context, limit int, idle time.Duration) (batch, error) {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, err
	}
	var calls pgx.Batch
	calls.Queue(pgIdleLimit, strconv.FormatInt(idleLimitMs(idle), 10))
	calls.Queue(pgClaim, limit)
	results := tx.SendBatch(ctx, &calls)
	if _, err := results.Exec(); err != nil {
		_ = results.Close()
		rollback(ctx, tx)
		return nil, err
	}
	pgRows, err := results.Query()
	if err != nil {
		_ = results.Close()
		rollback(ctx, tx)
		return nil, err
	}
	rows, err := pgx.CollectRows(pgRows, scanRow)
	if cerr := results.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		rollback(ctx, tx)
		return nil, err
	}
	return &pgBatch{pool: p.pool, tx: tx, claimed: rows}, nil
}

// scanRow reads a row of drover_outbox: id, queue, name, data, opts,
// created_at.
func scanRow(r pgx.CollectableRow) (row, error) {
	var (
		out  row
		data string
		opts *string
	)
	err := r.Scan(&out.id, &out.queue, &out.name, &data, &opts, &out.created)
	out.data = []byte(data)
	if opts != nil {
		out.opts = []byte(*opts)
	}
	return out, err
}

// idleLimitMs is idle as idle_in_transaction_session_timeout takes it:
// whole milliseconds, at least 1 and at most the setting's maximum,
// math.MaxInt32 (about 24.8 days). PostgreSQL refuses a larger value, and
// with it every claim of a relay whose BatchTimeout is longer.
func idleLimitMs(idle time.Duration) int64 {
	return min(max(idle.Milliseconds(), 1), math.MaxInt32)
}

// rollback ends tx after a failed claim, detached from ctx and bounded
// (pgsql.RollbackContext).
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := pgsql.RollbackContext(ctx)
	defer cancel()
	_ = tx.Rollback(rctx)
}

type pgBatch struct {
	pool    *pgxpool.Pool
	tx      pgx.Tx
	claimed []row

	// marked is a row the batch marked (sent or failed; 0 before any) and
	// markedAt the time of its marks: what commit reads back when its
	// answer is lost.
	marked   int64
	markedAt time.Time
}

// noteMark records a row marked at now, for commit.
func (b *pgBatch) noteMark(id int64, now time.Time) {
	if b.marked == 0 {
		b.marked, b.markedAt = id, now
	}
}

func (b *pgBatch) rows() []row { return b.claimed }

func (b *pgBatch) olderPending(ctx context.Context, id int64) ([]row, error) {
	rs, err := b.tx.Query(ctx, pgOlder, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rs, scanRow)
}

// leave does nothing: the rows' locks go with the transaction.
func (b *pgBatch) leave([]int64) {}

// markSent marks every row: the batch's row locks hold them all.
func (b *pgBatch) markSent(ctx context.Context, ids []int64, jobIDs []string, now time.Time) (int, error) {
	if _, err := b.tx.Exec(ctx, pgMarkSent, ids, jobIDs, now); err != nil {
		return 0, err
	}
	b.noteMark(ids[0], now)
	return len(ids), nil
}

func (b *pgBatch) markFailed(ctx context.Context, id int64, reason string, now time.Time) (bool, error) {
	_, err := b.tx.Exec(ctx, pgMarkFailed, id, now, reason)
	if err == nil {
		b.noteMark(id, now)
	}
	return err == nil, err
}

// commit commits the marks. When the COMMIT's answer is lost, commit reads
// one of the batch's marks back, on another connection: the marks land
// together, so finding it tells that the commit landed (nil: the batch is
// done) or not (its rows are relayed again, as duplicates of the jobs this
// batch added). When that read fails too, the error wraps
// errCommitInDoubt.
func (b *pgBatch) commit(ctx context.Context) error {
	err := b.tx.Commit(ctx)
	if !pgsql.CommitInDoubt(err) {
		return err
	}
	if b.marked == 0 {
		return fmt.Errorf("%w: %w", errCommitInDoubt, err)
	}
	landed, cerr := b.landed(ctx)
	switch {
	case cerr != nil:
		return fmt.Errorf("%w: %w (reading the marks back failed too: %w)", errCommitInDoubt, err, cerr)
	case landed:
		return nil
	default:
		return fmt.Errorf("the commit's answer was lost and the marks did not land "+
			"(the rows are relayed again, as duplicates of their jobs): %w", err)
	}
}

// landed reads back whether the batch's marks are committed, within
// pgsql.RollbackTimeout and whether or not ctx ended (the batch's deadline
// may be what cut the COMMIT's answer off). The read waits for the batch's
// transaction, if its server session still runs it.
func (b *pgBatch) landed(ctx context.Context) (bool, error) {
	rctx, cancel := pgsql.RollbackContext(ctx)
	defer cancel()
	var landed bool
	err := b.pool.QueryRow(rctx, pgLanded, b.marked, b.markedAt).Scan(&landed)
	return landed, err
}

// errCommitInDoubt is a batch commit sent whose answer was lost and whose
// marks could not be read back.
var errCommitInDoubt = errors.New("the commit's answer was lost and the rows may be marked sent or not " +
	"(those not marked are relayed again, as duplicates of their jobs)")

func (b *pgBatch) rollback(ctx context.Context) error {
	if err := b.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

// listen takes a connection out of the pool for good (a LISTENing
// connection must not serve other queries) and subscribes it to the
// drover_outbox channel, within listenTimeout: the pool's health check of
// an idle connection that went half-open would wait without any bound.
func (p postgres) listen(ctx context.Context) (listener, error) {
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	pooled, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn := pooled.Hijack()
	if _, err := conn.Exec(ctx, pgListen); err != nil {
		closeConn(conn)
		return nil, err
	}
	return pgListener{conn}, nil
}

type pgListener struct{ conn *pgx.Conn }

// listenCheckAfter is how long a LISTEN connection may stay silent before
// the relay pings it, and listenTimeout how long the ping, or subscribing a
// connection, may take.
const (
	listenCheckAfter = 30 * time.Second
	listenTimeout    = 10 * time.Second
)

// wait waits for a notification. A connection silent for listenCheckAfter
// is pinged: one that went half-open (a firewall or NAT on the path forgot
// it, no reset reached either side) would otherwise be waited on until the
// operating system's TCP keepalive gave up, tens of minutes, and every row
// would wait for the poll meanwhile. pgx keeps the connection usable when
// a wait times out.
func (l pgListener) wait(ctx context.Context) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenCheckAfter)
		_, err := l.conn.WaitForNotification(wctx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, listenTimeout)
		err = l.conn.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("listen connection silent for %s did not answer a ping: %w", listenCheckAfter, err)
		}
	}
}

func (l pgListener) close() { closeConn(l.conn) }

// closeConn closes a connection we own, within a bound even when the
// network is gone.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

func (p postgres) prune(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := p.pool.Exec(ctx, pgPrune, before, limit)
	return tag.RowsAffected(), err
}
