package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/seed40057009/drover/internal/pgsql"
)

// NewSQLite returns the outbox in the SQLite database behind db, whose schema
// pgmigrate.Up created. Any database/sql SQLite driver works; drover tests
// with modernc.org/sqlite. Open db with a busy timeout (modernc.org/sqlite:
// "?_pragma=busy_timeout(10000)"), so the relay's writes wait for the
// application's instead of failing.
//
// Relays write to the database (a claim and the marks of every batch). In
// WAL mode a transaction of yours that reads before its first write then
// fails at that write with "database is locked" (SQLITE_BUSY_SNAPSHOT)
// whenever a relay wrote in between, busy timeout or not: SQLite cannot
// turn a reader of an old snapshot into a writer. Begin such transactions
// IMMEDIATE (modernc.org/sqlite: "_txlock=immediate"), or write first.
//
// SQLite has no notifications: a relay finds new rows by polling, every
// RelayOptions.PollInterval. Nor row locks: relays lease the rows of a batch
// in the table (see the package documentation), which needs migration
// 003_outbox_claims; a relay over a database without it fails its batches
// with an error saying to run pgmigrate.Up.
func NewSQLite(db *sql.DB) *Outbox[*sql.Tx] {
	return &Outbox[*sql.Tx]{store: &sqlite{db: db, lease: liteLease}, noDB: pgsql.IsNil(db), now: time.Now}
}

var (
	liteInsert     = pgsql.Query(pgsql.SQLite, "OutboxInsert")
	liteClaimable  = pgsql.Query(pgsql.SQLite, "OutboxClaimable")
	liteClaim      = pgsql.Query(pgsql.SQLite, "OutboxClaimBatch")
	liteClaimed    = pgsql.Query(pgsql.SQLite, "OutboxClaimed")
	liteMarkSent   = pgsql.Query(pgsql.SQLite, "OutboxMarkSent")
	liteOlder      = pgsql.Query(pgsql.SQLite, "OutboxOlderPending")
	liteMarkFailed = pgsql.Query(pgsql.SQLite, "OutboxMarkFailed")
	liteRelease    = pgsql.Query(pgsql.SQLite, "OutboxRelease")
	litePrune      = pgsql.Query(pgsql.SQLite, "OutboxPrune")
)

// liteLease is how long a SQLite relay's claim of a batch holds its rows
// against other relays. A batch outliving it (Redis unreachable that long)
// may see its rows claimed by another relay, which then settles them; a
// relay that dies holding rows delays them by up to this much.
const liteLease = 30 * time.Second

type sqlite struct {
	db    *sql.DB
	lease time.Duration // liteLease; tests shorten it
}

func (s sqlite) insert(ctx context.Context, tx *sql.Tx, queue, name string, data, opts []byte, now time.Time) error {
	var optsText sql.NullString
	if opts != nil {
		optsText = sql.NullString{String: string(opts), Valid: true}
	}
	_, err := tx.ExecContext(ctx, liteInsert, queue, name, string(data), optsText, now.UnixMilli())
	return err
}

func (s sqlite) ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// claim leases up to limit pending rows to a token of this batch's own, in
// one short write, and reads them back. The relay then talks to Redis
// holding no lock (SQLite's single write lock held that long would stall
// every writer of the database); other relays skip the rows until the batch
// marks or releases them, or its lease runs out. An idle relay only reads.
//
// idle is not used: a lease runs out by itself.
func (s sqlite) claim(ctx context.Context, limit int, _ time.Duration) (batch, error) {
	now := time.Now()
	var found bool
	if err := s.db.QueryRowContext(ctx, liteClaimable, now.UnixMilli()).Scan(&found); err != nil {
		return nil, claimHint(err)
	}
	if !found {
		return &liteBatch{db: s.db}, nil
	}
	b := &liteBatch{db: s.db, token: rand.Text()}
	_, err := s.db.ExecContext(ctx, liteClaim, limit, b.token, now.Add(s.lease).UnixMilli(), now.UnixMilli())
	if err == nil {
		err = b.read(ctx)
	}
	if err != nil {
		// The claim may have landed (ctx ended as it ran): give it back,
		// detached from ctx, which may be what failed, and bounded.
		rctx, cancel := pgsql.RollbackContext(ctx)
		defer cancel()
		_ = b.rollback(rctx)
		return nil, claimHint(err)
	}
	return b, nil
}

// read reads the rows the batch's claim holds.
func (b *liteBatch) read(ctx context.Context) (err error) {
	b.claimed, err = liteRows(ctx, b.db, liteClaimed, b.token)
	return err
}

// liteRows runs query, which selects id, queue, name, data, opts,
// created_at.
func liteRows(ctx context.Context, db *sql.DB, query string, args ...any) ([]row, error) {
	rs, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var (
			r       row
			data    string
			opts    sql.NullString
			created int64
		)
		if err := rs.Scan(&r.id, &r.queue, &r.name, &data, &opts, &created); err != nil {
			return nil, err
		}
		r.created = time.UnixMilli(created)
		r.data = []byte(data)
		if opts.Valid {
			r.opts = []byte(opts.String)
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

func (b *liteBatch) olderPending(ctx context.Context, id int64) ([]row, error) {
	return liteRows(ctx, b.db, liteOlder, id)
}

// leave marks the batch as one that settles only some of its rows: the
// claim is given back after the commit too (rollback), which returns the
// rows left unmarked to the next claim at once rather than after the lease.
func (b *liteBatch) leave(ids []int64) {
	if len(ids) > 0 {
		b.partial = true
	}
}

// claimHint names the missing migration when the claim columns are absent:
// a drover that needs 003_outbox_claims over a database migrated before it.
func claimHint(err error) error {
	if err != nil && strings.Contains(err.Error(), "no such column") {
		return fmt.Errorf("%w (the outbox table lacks the claim columns of migration 003_outbox_claims: run pgmigrate.Up)", err)
	}
	return err
}

// liteBatch writes its marks in one transaction, opened at the first mark.
// A mark lands only while the batch's claim still holds the row.
type liteBatch struct {
	db      *sql.DB
	token   string // "": nothing claimed
	claimed []row
	tx      *sql.Tx
	done    bool // committed: every row it still held is marked
	partial bool // rows were left unmarked on purpose (leave)
}

func (b *liteBatch) rows() []row { return b.claimed }

func (b *liteBatch) begin(ctx context.Context) error {
	if b.tx != nil {
		return nil
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	b.tx = tx
	return nil
}

func (b *liteBatch) markSent(ctx context.Context, ids []int64, jobIDs []string, now time.Time) (int, error) {
	if err := b.begin(ctx); err != nil {
		return 0, err
	}
	marked := 0
	for i, id := range ids {
		res, err := b.tx.ExecContext(ctx, liteMarkSent, id, jobIDs[i], now.UnixMilli(), b.token)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		marked += int(n)
	}
	return marked, nil
}

func (b *liteBatch) markFailed(ctx context.Context, id int64, reason string, now time.Time) (bool, error) {
	if err := b.begin(ctx); err != nil {
		return false, err
	}
	res, err := b.tx.ExecContext(ctx, liteMarkFailed, id, now.UnixMilli(), reason, b.token)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (b *liteBatch) commit(context.Context) error {
	if b.tx == nil {
		return nil
	}
	err := b.tx.Commit()
	b.tx = nil
	b.done = err == nil && !b.partial
	return err
}

// rollback drops the marks not committed and gives the rows the claim
// still holds back to the next claim.
func (b *liteBatch) rollback(ctx context.Context) error {
	var err error
	if b.tx != nil {
		err = b.tx.Rollback()
		b.tx = nil
	}
	if b.token != "" && !b.done {
		if _, rerr := b.db.ExecContext(ctx, liteRelease, b.token); rerr != nil && err == nil {
			err = rerr
		}
		b.done = true
	}
	return err
}

func (sqlite) listen(context.Context) (listener, error) { return nil, nil }

func (s sqlite) prune(ctx context.Context, before time.Time, limit int) (int64, error) {
	res, err := s.db.ExecContext(ctx, litePrune, before.UnixMilli(), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
