package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/seed40057009/drover/internal/pgsql"
)

// NewSQLite returns the ledger in the SQLite database behind db, whose schema
// pgmigrate.Up created. Any database/sql SQLite driver works; drover tests
// with modernc.org/sqlite.
//
// Open db with a busy timeout, so that writers wait for each other instead
// of failing at once with "database is locked" (modernc.org/sqlite:
// "?_pragma=busy_timeout(10000)"), and preferably in WAL mode
// ("&_pragma=journal_mode(WAL)"), so readers never wait for the writer. A
// transaction of yours that calls ClaimTx should either claim before it reads
// anything or start with BEGIN IMMEDIATE (modernc.org/sqlite: "_txlock=immediate"):
// SQLite cannot upgrade a transaction that read an old snapshot to a writer,
// and fails it with SQLITE_BUSY instead. Do claims first, so it needs neither.
func NewSQLite(db *sql.DB, opts *Options) *Ledger[*sql.Tx] {
	return newLedger[*sql.Tx](sqlite{db}, db, opts)
}

var (
	liteInsert   = pgsql.Query(pgsql.SQLite, "OperationInsert")
	liteResult   = pgsql.Query(pgsql.SQLite, "OperationResult")
	liteComplete = pgsql.Query(pgsql.SQLite, "OperationComplete")
	litePrune    = pgsql.Query(pgsql.SQLite, "OperationPrune")
)

type sqlite struct{ db *sql.DB }

func (s sqlite) begin(ctx context.Context) (*sql.Tx, error) { return s.db.BeginTx(ctx, nil) }
func (sqlite) commit(_ context.Context, tx *sql.Tx) error   { return busyHint(tx.Commit()) }
func (sqlite) rollback(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }

// oneWriter: a claim's insert holds the database's write lock until its
// transaction ends.
func (sqlite) oneWriter() bool { return true }

// commitInDoubt is false: SQLite commits in this process, and a failed
// commit (a busy timeout, say) did not commit.
func (sqlite) commitInDoubt(error) bool { return false }

// landed is never asked: no SQLite commit is in doubt.
func (sqlite) landed(context.Context, string, time.Time) (bool, error) {
	return false, errors.New("no SQLite commit is in doubt")
}

// lookup answers a duplicate with a plain read, which in WAL mode neither
// waits for nor blocks the writer. Without it every duplicate would queue for
// the database's single write lock just to find the key taken.
func (s sqlite) lookup(ctx context.Context, key string) ([]byte, bool, error) {
	var result []byte
	err := s.db.QueryRowContext(ctx, liteResult, key).Scan(&result)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return result, err == nil, err
}

// claim inserts first: the insert takes the database's write lock (waiting
// for it up to the busy timeout) and keeps it until tx ends, so no other
// transaction can claim, or be claiming, the key meanwhile. That is why
// SQLite never reports InProgressElsewhere.
func (sqlite) claim(ctx context.Context, tx *sql.Tx, key string, now time.Time) (Claim, error) {
	res, err := tx.ExecContext(ctx, liteInsert, key, now.UnixMilli())
	if err != nil {
		return Claim{}, busyHint(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Claim{}, err
	}
	if n == 1 {
		liteClaims.add(tx, key)
		return Claim{Key: key, Status: Claimed}, nil
	}
	var result []byte
	if err := tx.QueryRowContext(ctx, liteResult, key).Scan(&result); err != nil {
		return Claim{}, err
	}
	return Claim{Key: key, Status: AlreadyCompleted, Result: result}, nil
}

func (sqlite) complete(ctx context.Context, tx *sql.Tx, key string, result []byte, now time.Time) (bool, error) {
	if !liteClaims.has(tx, key) {
		return false, nil
	}
	res, err := tx.ExecContext(ctx, liteComplete, key, result, now.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s sqlite) pruneBatch(ctx context.Context, before time.Time, limit int) (int64, error) {
	res, err := s.db.ExecContext(ctx, litePrune, before.UnixMilli(), limit)
	if err != nil {
		return 0, busyHint(err)
	}
	return res.RowsAffected()
}

// busyHint explains SQLite's "database is locked", which usually means a
// missing busy timeout or a transaction that read before it claimed.
func busyHint(err error) error {
	if err == nil || !strings.Contains(err.Error(), "database is locked") {
		return err
	}
	return fmt.Errorf("%w (another writer held SQLite's write lock: open the database with a busy timeout, "+
		"and claim before reading in the transaction or begin it IMMEDIATE; see idempotency.NewSQLite)", err)
}

// liteClaims remembers the keys each transaction claimed, so that CompleteTx
// records a result only in the claiming transaction. On SQLite the row cannot
// tell: a claim committed without CompleteTx looks just like an open one, and
// a later transaction that found it AlreadyCompleted (or never claimed) would
// record its result over it. Package-wide, as several ledgers may share a
// database; an entry goes when its transaction is garbage collected.
var liteClaims = &claimSet{m: make(map[weak.Pointer[sql.Tx]]map[string]struct{})}

type claimSet struct {
	mu sync.Mutex
	m  map[weak.Pointer[sql.Tx]]map[string]struct{}
}

func (c *claimSet) add(tx *sql.Tx, key string) {
	wp := weak.Make(tx)
	c.mu.Lock()
	defer c.mu.Unlock()
	keys, ok := c.m[wp]
	if !ok {
		keys = make(map[string]struct{})
		c.m[wp] = keys
		runtime.AddCleanup(tx, c.drop, wp)
	}
	keys[key] = struct{}{}
}

func (c *claimSet) has(tx *sql.Tx, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[weak.Make(tx)][key]
	return ok
}

func (c *claimSet) drop(wp weak.Pointer[sql.Tx]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, wp)
}
