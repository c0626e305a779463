package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/pgsql"
)

// Outbox writes job rows into drover_outbox inside the caller's
// transactions. Make one with [NewPostgres] or [NewSQLite]; Tx is that
// database's transaction type. An Outbox is safe for concurrent use.
type Outbox[Tx any] struct {
	store store[Tx]
	noDB  bool // made with a nil handle: AddTx works, a relay and Prune cannot
	now   func() time.Time
}

// errNoDB is the error of a relay or Prune on an Outbox made with a nil
// database handle: a programming error, reported instead of a nil-pointer
// panic inside pgx or database/sql.
var errNoDB = errors.New("the outbox was made with a nil database handle (NewPostgres or NewSQLite)")

// errNilContext is the error of a call given a nil context.Context, which
// pgx and database/sql would dereference (a panic; inside database/sql,
// one that leaves the *sql.DB locked for good). It wraps
// drover.ErrInvalidOption.
var errNilContext = fmt.Errorf("%w: the context.Context is nil (pass context.Background(), or the caller's context)",
	drover.ErrInvalidOption)

// row is one pending outbox row, as a relay reads it.
type row struct {
	id    int64
	queue string
	name  string
	data  []byte
	opts  []byte // nil: no options
	// created is when AddTx wrote the row, by the writer's clock.
	created time.Time
}

// store is one database's side of the outbox.
type store[Tx any] interface {
	source
	insert(ctx context.Context, tx Tx, queue, name string, data, opts []byte, now time.Time) error
}

// source is what a Relay needs of the database.
type source interface {
	ping(ctx context.Context) error
	// claim starts a batch of up to limit pending rows, in id order. A
	// batch left idle for idle (its relay cut off from the database) lets
	// the rows go, where the database can tell (PostgreSQL).
	claim(ctx context.Context, limit int, idle time.Duration) (batch, error)
	// listen returns a listener for "rows were added" notifications, or
	// nil when the database has none (SQLite): the relay then polls.
	listen(ctx context.Context) (listener, error)
	prune(ctx context.Context, before time.Time, limit int) (int64, error)
}

// batch is a claimed set of rows and the writes that settle them. Nothing
// is settled until commit; rollback (a no-op after commit) releases the rows
// for the next claim. A mark lands only while the batch still holds the
// row: markSent returns how many rows it marked, markFailed whether it
// marked the row (on SQLite a batch that outlived its lease may have lost
// rows to another relay, which settles them).
type batch interface {
	rows() []row
	// olderPending returns the pending rows with options older than row
	// id, those of other batches included.
	olderPending(ctx context.Context, id int64) ([]row, error)
	// leave gives up the batch's hold on rows it will not settle: they
	// stay pending for a later batch (at commit or rollback).
	leave(ids []int64)
	markSent(ctx context.Context, ids []int64, jobIDs []string, now time.Time) (int, error)
	markFailed(ctx context.Context, id int64, reason string, now time.Time) (bool, error)
	commit(ctx context.Context) error
	rollback(ctx context.Context) error
}

// listener waits for the database's notifications.
type listener interface {
	// wait returns nil when a notification arrives, an error when ctx ends
	// or the connection breaks.
	wait(ctx context.Context) error
	close()
}

// AddTx writes a job into the outbox inside tx, the caller's business
// transaction: the job exists if and only if tx commits, and a [Relay] adds
// it to queue once it has. name, data and opts mean what they mean to
// drover's Queue.Add: data is encoded with encoding/json (nil as {}), and the
// options are stored with the row and applied when the job is added.
//
// Without opts.JobID the job's id is derived from the row id
// (RelayOptions.JobIDPrefix, "outbox-" by default, then the id), so that a
// relay that adds the job twice gets one job. With opts.JobID, that id is
// used, and a row whose id already names a job in the queue is relayed as a
// duplicate of it.
//
// AddTx checks what it can before writing: the queue name, the data (and
// its size against opts.SizeLimit), and the options (JobOptions.Validate:
// the job id, a negative delay, ...), and
// refuses bad ones with an error wrapping ErrInvalidOption, ErrInvalidJobID
// or ErrInvalidData. Options only the relay's queue can judge (a custom
// Backoff.Type its QueueOptions.BackoffTypes lacks) make the row fail at
// relay time: it is marked failed, logged at error level, and not retried.
func (o *Outbox[Tx]) AddTx(ctx context.Context, tx Tx, queue, name string, data any, opts *drover.JobOptions) error {
	where := fmt.Sprintf("outbox: add job %q to queue %q", name, queue)
	if pgsql.IsNil(tx) {
		return fmt.Errorf("%s: the transaction is nil", where)
	}
	if ctx == nil {
		return fmt.Errorf("%s: %w", where, errNilContext)
	}
	if err := keys.ValidateName(queue); err != nil {
		return fmt.Errorf("%s: %w: %w", where, drover.ErrInvalidOption, err)
	}
	if opts != nil {
		// What every queue refuses (wrapping ErrInvalidJobID or
		// ErrInvalidOption): refused here, not as a failed row later.
		if err := opts.Validate(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	encoded, err := encodeData(data)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", where, drover.ErrInvalidData, err)
	}
	if opts != nil && opts.SizeLimit > 0 && len(encoded) > opts.SizeLimit {
		// What Queue.Add would refuse for every queue: refused here.
		return fmt.Errorf("%s: %w: data is %d bytes, over SizeLimit %d", where, drover.ErrInvalidData, len(encoded), opts.SizeLimit)
	}
	storedOpts, err := encodeOpts(opts)
	if err != nil {
		return fmt.Errorf("%s: encode options: %w", where, err)
	}
	if err := o.store.insert(ctx, tx, queue, name, encoded, storedOpts, o.now()); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// PruneBatchSize is how many rows Prune deletes per statement.
const PruneBatchSize = 1000

// Prune deletes rows that were sent before the cutoff and returns how many
// it deleted. Pending and failed rows are kept. Pruning does not make the
// table reuse row ids, so a new row's job id cannot collide with a pruned
// row's job (re-creating the table does: see the package documentation).
func (o *Outbox[Tx]) Prune(ctx context.Context, before time.Time) (int64, error) {
	if o.noDB {
		return 0, fmt.Errorf("outbox: prune: %w", errNoDB)
	}
	if ctx == nil {
		return 0, fmt.Errorf("outbox: prune: %w", errNilContext)
	}
	var total int64
	for {
		n, err := o.store.prune(ctx, before, PruneBatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("outbox: prune rows sent before %s: %w", before.Format(time.RFC3339), err)
		}
		if n < PruneBatchSize {
			return total, nil
		}
	}
}
