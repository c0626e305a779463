package outbox

import (
	"context"
	"database/sql"
	"time"

	"github.com/seed40057009/drover/internal/pgsql"
)

// NewSQLite returns the outbox in the SQLite database behind db, whose schema
// pgmigrate.Up created. Any database/sql SQLite driver works; drover tests
// with modernc.org/sqlite. Open db with a busy timeout (modernc.org/sqlite:
// "?_pragma=busy_timeout(10000)"), so the relay's writes wait for the
// application's instead of failing.
//
// SQLite has no notifications: a relay finds new rows by polling, every
// RelayOptions.PollInterval.
func NewSQLite(db *sql.DB) *Outbox[*sql.Tx] {
	return &Outbox[*sql.Tx]{store: sqlite{db}, noDB: pgsql.IsNil(db), now: time.Now}
}

var (
	liteInsert     = pgsql.Query(pgsql.SQLite, "OutboxInsert")
	liteClaim      = pgsql.Query(pgsql.SQLite, "OutboxClaimBatch")
	liteMarkSent   = pgsql.Query(pgsql.SQLite, "OutboxMarkSent")
	liteMarkFailed = pgsql.Query(pgsql.SQLite, "OutboxMarkFailed")
	litePrune      = pgsql.Query(pgsql.SQLite, "OutboxPrune")
)

type sqlite struct{ db *sql.DB }

func (s sqlite) insert(ctx context.Context, tx *sql.Tx, queue, name string, data, opts []byte, now time.Time) error {
	var optsText sql.NullString
	if opts != nil {
		optsText = sql.NullString{String: string(opts), Valid: true}
	}
	_, err := tx.ExecContext(ctx, liteInsert, queue, name, string(data), optsText, now.UnixMilli())
	return err
}

func (s sqlite) ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// claim reads the pending rows without locking them: holding SQLite's single
// write lock while the relay talks to Redis would stall every writer of the
// database. A second relay may read the same rows; its adds are duplicates
// of the first relay's jobs, so there is still one job per row.
func (s sqlite) claim(ctx context.Context, limit int) (batch, error) {
	rs, err := s.db.QueryContext(ctx, liteClaim, limit)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var rows []row
	for rs.Next() {
		var (
			r    row
			data string
			opts sql.NullString
		)
		if err := rs.Scan(&r.id, &r.queue, &r.name, &data, &opts); err != nil {
			return nil, err
		}
		r.data = []byte(data)
		if opts.Valid {
			r.opts = []byte(opts.String)
		}
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return &liteBatch{db: s.db, claimed: rows}, nil
}

// liteBatch writes its marks in one transaction, opened at the first mark.
type liteBatch struct {
	db      *sql.DB
	claimed []row
	tx      *sql.Tx
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

func (b *liteBatch) markSent(ctx context.Context, ids []int64, jobIDs []string, now time.Time) error {
	if err := b.begin(ctx); err != nil {
		return err
	}
	for i, id := range ids {
		if _, err := b.tx.ExecContext(ctx, liteMarkSent, id, jobIDs[i], now.UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

func (b *liteBatch) markFailed(ctx context.Context, id int64, reason string, now time.Time) error {
	if err := b.begin(ctx); err != nil {
		return err
	}
	_, err := b.tx.ExecContext(ctx, liteMarkFailed, id, now.UnixMilli(), reason)
	return err
}

func (b *liteBatch) commit(context.Context) error {
	if b.tx == nil {
		return nil
	}
	err := b.tx.Commit()
	b.tx = nil
	return err
}

func (b *liteBatch) rollback(context.Context) error {
	if b.tx == nil {
		return nil
	}
	err := b.tx.Rollback()
	b.tx = nil
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
