package outbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/pgsql"
)

// Defaults of RelayOptions.
const (
	JobIDPrefixDefault   = "outbox-"
	BatchSizeDefault     = 100
	PollIntervalDefault  = time.Second
	MinRetryDelayDefault = 100 * time.Millisecond
	MaxRetryDelayDefault = 30 * time.Second
	BatchTimeoutDefault  = 30 * time.Second
)

// RelayOptions configure a [Relay]. A nil *RelayOptions means all defaults.
type RelayOptions struct {
	// QueueOptions are used for every queue the relay adds to: Prefix,
	// DefaultJobOptions, AddBulkChunk, BackoffTypes. Without a Logger of
	// their own, the queues log to the relay's Logger when it has one.
	//
	// Defaults to nil: drover's queue defaults (prefix "bull").
	QueueOptions *drover.QueueOptions

	// JobIDPrefix starts the id of every job whose row has no JobID of its
	// own; the row id follows. Relays of databases that feed the same queues
	// need different prefixes, or their row ids would name the same jobs.
	// Never change it while rows are pending: a row added under the old
	// prefix and re-added under the new one would become two jobs.
	//
	// Defaults to JobIDPrefixDefault ("outbox-").
	JobIDPrefix string

	// BatchSize is how many rows one batch claims and adds (with one
	// AddBulk call per queue).
	//
	// Defaults to BatchSizeDefault (100).
	BatchSize int

	// PollInterval is how often the relay looks for rows without being
	// told: on SQLite, always; on PostgreSQL, as a fallback to LISTEN/NOTIFY
	// (a notification lost with a connection, rows inserted while the relay
	// was reconnecting).
	//
	// Defaults to PollIntervalDefault (1s).
	PollInterval time.Duration

	// MinRetryDelay and MaxRetryDelay bound the wait after a failed batch
	// (Redis or the database unreachable): the first retry waits
	// MinRetryDelay, each further one twice as long, up to MaxRetryDelay,
	// less a random part of up to 20%. Rows are never dropped for being
	// unreachable: they stay pending until a batch succeeds.
	//
	// Default to MinRetryDelayDefault (100ms) and MaxRetryDelayDefault (30s).
	MinRetryDelay time.Duration
	MaxRetryDelay time.Duration

	// BatchTimeout bounds one batch, from claiming its rows to committing
	// their marks; a batch that runs out is cancelled and fails, and the
	// relay retries as after any failed batch. It is what ends a batch
	// whose connection went half-open (a firewall or NAT on the path forgot
	// it, or the database host left the network, without a reset reaching
	// the relay): the call would otherwise wait for the operating system to
	// give up on the connection, tens of minutes, and the relay with it. On
	// PostgreSQL it is also the batch transaction's
	// idle_in_transaction_session_timeout (set for that transaction only,
	// at most PostgreSQL's maximum, about 24.8 days):
	// the server, which cannot see that the relay is gone, ends its side of
	// the session once it has been idle that long, and the rows it locked
	// are relayed again, where they would wait for the server's TCP
	// keepalive (hours by default). A batch cancelled after its adds
	// reached Redis is safe: its rows are relayed again and found as
	// duplicates of their jobs.
	// Healthy batches take milliseconds; keep it well above that.
	//
	// Defaults to BatchTimeoutDefault (30s).
	BatchTimeout time.Duration

	// Logger receives a line per relayed batch (info), per failed batch
	// (warn) and per row the queue refused (error), and the warnings of the
	// relay's queues (an add sent again after its reply was lost) unless
	// QueueOptions has a Logger.
	//
	// Defaults to nil, which discards the relay's own lines; its queues then
	// warn on stderr, as a drover.Queue without a Logger does (give
	// QueueOptions a discarding Logger to silence them too).
	Logger *slog.Logger
}

func (o *RelayOptions) withDefaults() RelayOptions {
	var r RelayOptions
	if o != nil {
		r = *o
	}
	r.JobIDPrefix = cmp.Or(r.JobIDPrefix, JobIDPrefixDefault)
	r.BatchSize = cmp.Or(r.BatchSize, BatchSizeDefault)
	r.PollInterval = cmp.Or(r.PollInterval, PollIntervalDefault)
	r.MinRetryDelay = cmp.Or(r.MinRetryDelay, MinRetryDelayDefault)
	r.MaxRetryDelay = cmp.Or(r.MaxRetryDelay, MaxRetryDelayDefault)
	r.BatchTimeout = cmp.Or(r.BatchTimeout, BatchTimeoutDefault)
	if r.Logger != nil && (r.QueueOptions == nil || r.QueueOptions.Logger == nil) {
		var qo drover.QueueOptions
		if r.QueueOptions != nil {
			qo = *r.QueueOptions
		}
		qo.Logger = r.Logger
		r.QueueOptions = &qo
	}
	r.Logger = cmp.Or(r.Logger, slog.New(slog.DiscardHandler))
	return r
}

func (o *RelayOptions) validate() error {
	switch {
	case o.BatchSize < 1:
		return fmt.Errorf("RelayOptions.BatchSize must be at least 1, got %d", o.BatchSize)
	case o.PollInterval < 0:
		return fmt.Errorf("RelayOptions.PollInterval must not be negative, got %s", o.PollInterval)
	case o.MinRetryDelay < 0:
		return fmt.Errorf("RelayOptions.MinRetryDelay must not be negative, got %s", o.MinRetryDelay)
	case o.MaxRetryDelay < o.MinRetryDelay:
		return fmt.Errorf("RelayOptions.MaxRetryDelay must be at least MinRetryDelay (%s), got %s", o.MinRetryDelay, o.MaxRetryDelay)
	case o.BatchTimeout < 0:
		return fmt.Errorf("RelayOptions.BatchTimeout must not be negative, got %s", o.BatchTimeout)
	}
	if err := keys.ValidateJobID(o.JobIDPrefix + "1"); err != nil {
		return fmt.Errorf("RelayOptions.JobIDPrefix %q does not make valid job ids: %w", o.JobIDPrefix, err)
	}
	return nil
}

// Stats counts what relaying did.
type Stats struct {
	// Created counts rows whose job was new: AddCreated, and AddReAdded (a
	// new job over a Deduplication ID whose owner had been removed).
	Created int
	// Duplicates counts rows whose job id already named a job: the re-add
	// after a relay died between adding and marking, or a row with a JobID of
	// its own that exists.
	Duplicates int
	// Deduplicated counts rows whose Deduplication ID another job owned.
	Deduplicated int
	// Failed counts rows the queue refused, and rows whose derived job id
	// names another row's job (the outbox's ids restarted, see the package
	// documentation); they are marked failed.
	Failed int
}

// Sent is the number of rows marked sent.
func (s Stats) Sent() int { return s.Created + s.Duplicates + s.Deduplicated }

func (s *Stats) add(o Stats) {
	s.Created += o.Created
	s.Duplicates += o.Duplicates
	s.Deduplicated += o.Deduplicated
	s.Failed += o.Failed
}

// Relay moves committed outbox rows into their queues: it claims a batch of
// pending rows, adds each as a job whose id derives from the row id, and
// marks the rows sent. Run it in the background with Start and Close, or
// call Flush when it suits you (a cron job, a test). Several relays may serve
// one outbox, in one process or many.
type Relay struct {
	src    source
	noDB   bool // the outbox has a nil database handle: Start and Flush fail
	rdb    redis.UniversalClient
	opts   RelayOptions
	logger *slog.Logger
	hooks  testHooks

	// flushing holds a token while a flush runs: one flush at a time per
	// relay. A channel, not a mutex, so that a Flush waiting for the
	// background loop's batch (stuck while Redis or the database does not
	// answer) still ends with its ctx.
	flushing chan struct{}

	queuesMu sync.Mutex
	queues   map[string]*drover.Queue

	// closing is closed by the first Close before it takes lifeMu: a Start
	// holding lifeMu while the database does not answer sees it and gives
	// up, so Close is not held up by a Start that could wait forever.
	closing   chan struct{}
	closeOnce sync.Once

	lifeMu     sync.Mutex // guards the lifecycle below; held by Start and Close
	state      int
	stopLoop   context.CancelFunc // ends the loops after their current step
	cancelWork context.CancelFunc // cancels a batch in flight
	wake       chan struct{}
	wg         sync.WaitGroup
}

const (
	stateNew = iota
	stateRunning
	stateClosed
)

// testHooks let tests stop a batch at each of its steps, as a crash would.
// A hook returning an error aborts the batch there. The zero value does
// nothing.
type testHooks struct {
	beforeAdd    func(ctx context.Context) error // rows claimed, nothing added
	afterAdd     func(ctx context.Context) error // jobs added, rows not marked
	beforeCommit func(ctx context.Context) error // rows marked, not committed
}

// NewRelay returns a relay from outbox to the queues of rdb. It does no
// I/O; Start or Flush does. Whoever created rdb closes it, after Close.
// Options every queue would refuse, RelayOptions.QueueOptions included, are
// refused here with an error wrapping drover.ErrInvalidOption.
//
// On a Redis Cluster each queue's keys must share a hash slot, so the
// prefix (QueueOptions.Prefix) or the queue name must carry a {hash tag},
// as for drover.NewQueue. With a tagged prefix every row is relayed; with
// an untagged one, a row whose queue name has no tag names a queue no
// producer or worker can use there, and is marked failed with that reason
// (neither AddTx, which does not know the Redis server, nor NewRelay, which
// does not know the rows, can refuse it sooner).
func NewRelay[Tx any](outbox *Outbox[Tx], rdb redis.UniversalClient, opts *RelayOptions) (*Relay, error) {
	if outbox == nil || pgsql.IsNil(rdb) {
		return nil, errors.New("outbox: NewRelay needs an outbox and a Redis client")
	}

	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("outbox: %w: %w", drover.ErrInvalidOption, err)
	}
	// QueueOptions every queue refuses would otherwise surface at relay
	// time, as a refusal of every row: each marked failed, for good. A
	// queue made and dropped here does no I/O. Its name carries a hash
	// tag: on a Redis Cluster a prefix without one is fine for the rows
	// whose queue names have one, and only those rows can tell.
	if _, err := drover.NewQueue(rdb, "{outbox}", o.QueueOptions); err != nil {
		return nil, fmt.Errorf("outbox: RelayOptions.QueueOptions: %w", err)
	}
	return &Relay{
		src:      outbox.store,
		noDB:     outbox.noDB,
		rdb:      rdb,
		opts:     o,
		logger:   o.Logger,
		queues:   make(map[string]*drover.Queue),
		wake:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		flushing: make(chan struct{}, 1),
	}, nil
}

// Start checks that the database answers, subscribes to its notifications
// (PostgreSQL) and starts relaying in the background until Close. It
// returns once the relay runs; rows committed from then on are relayed
// within moments, the rows already pending right away. Redis need not be up:
// the relay retries until it is. Start on a running relay does nothing; on a
// closed one, or when Close is called while Start still waits for the
// database, it fails with drover.ErrClosed.
func (r *Relay) Start(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("outbox: start relay: %w", errNilContext)
	}
	r.lifeMu.Lock()
	defer r.lifeMu.Unlock()
	switch r.state {
	case stateRunning:
		return nil
	case stateClosed:
		return fmt.Errorf("outbox: start relay: %w", drover.ErrClosed)
	}
	if r.noDB {
		return fmt.Errorf("outbox: start relay: %w", errNoDB)
	}
	// The database calls below end when ctx does or when Close is called:
	// Close waits for lifeMu, which this Start holds.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	closed := func() bool {
		select {
		case <-r.closing:
			return true
		default:
			return false
		}
	}
	if closed() {
		return fmt.Errorf("outbox: start relay: %w", drover.ErrClosed)
	}
	if err := r.src.ping(ctx); err != nil {
		if closed() {
			return fmt.Errorf("outbox: start relay: %w", drover.ErrClosed)
		}
		return fmt.Errorf("outbox: start relay: reach the database: %w", err)
	}
	lis, err := r.src.listen(ctx)
	if err != nil {
		if closed() {
			return fmt.Errorf("outbox: start relay: %w", drover.ErrClosed)
		}
		return fmt.Errorf("outbox: start relay: listen for new rows: %w", err)
	}
	if closed() {
		if lis != nil {
			lis.close()
		}
		return fmt.Errorf("outbox: start relay: %w", drover.ErrClosed)
	}
	loopCtx, stopLoop := context.WithCancel(context.Background())
	workCtx, cancelWork := context.WithCancel(context.Background())
	r.stopLoop, r.cancelWork = stopLoop, cancelWork
	r.wg.Add(1)
	go r.run(loopCtx, workCtx)
	if lis != nil {
		r.wg.Add(1)
		go r.listen(loopCtx, lis)
	}
	r.state = stateRunning
	r.logger.InfoContext(ctx, "outbox relay started")
	return nil
}

// Close stops the relay: no batch starts after it is called, and a batch in
// flight may finish until ctx ends; then it is cancelled, which leaves its
// rows pending for the next relay (their jobs, if already added, are found as
// duplicates). Close returns once the relay's goroutines have exited: when
// the database does not answer (a network partition), a cancelled batch's
// rollback, or the read-back of a batch whose COMMIT answer was lost, holds
// it up to 5 s more; an add Redis does not answer is
// abandoned (it may still land, and the row is then found as its job's
// duplicate when relayed again). A Start still waiting for the database
// is abandoned (it returns drover.ErrClosed), so it does not hold Close up.
// It is idempotent and safe on a relay that never started, which then cannot
// start.
func (r *Relay) Close(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("outbox: close relay: %w", errNilContext)
	}
	r.closeOnce.Do(func() { close(r.closing) }) // ends a Start in progress
	r.lifeMu.Lock()
	defer r.lifeMu.Unlock()
	if r.state != stateRunning {
		r.state = stateClosed
		return nil
	}
	r.state = stateClosed
	r.stopLoop()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		r.cancelWork()
		<-done
	}
	r.cancelWork()
	r.logger.InfoContext(ctx, "outbox relay stopped")
	return nil
}

// Flush relays every pending row now, batch after batch, and returns what it
// did. Rows other relays' batches hold are theirs, and a row whose
// Deduplication ID an older row held there has too waits for it (see the
// package documentation): Flush leaves both pending. It stops at the first
// failed batch and returns its error; rows relayed before stay relayed. A
// batch whose COMMIT's answer was lost (PostgreSQL) is read back, and is
// done when its marks landed; when it cannot be read back (the database
// went away with the answer), its error says the rows may be marked or not,
// and the Stats returned with it count that batch's jobs, which are in
// Redis either way (rows whose marks did not land are relayed again, and
// count as Duplicates then). The read-back takes up to 5 s more than
// BatchTimeout, and runs even when ctx ended during the COMMIT.
// Each batch is bounded by RelayOptions.BatchTimeout. On a started relay it
// first waits for the background batch in flight, if any, or for ctx to
// end.
func (r *Relay) Flush(ctx context.Context) (Stats, error) {
	if r.noDB {
		return Stats{}, fmt.Errorf("outbox: flush: %w", errNoDB)
	}
	if ctx == nil {
		return Stats{}, fmt.Errorf("outbox: flush: %w", errNilContext)
	}
	return r.flush(ctx, ctx)
}

// flush runs batches until one comes back short. loopCtx ending stops it
// between batches; workCtx ending cancels the batch in flight.
func (r *Relay) flush(loopCtx, workCtx context.Context) (Stats, error) {
	select {
	case r.flushing <- struct{}{}:
	case <-loopCtx.Done():
		return Stats{}, fmt.Errorf("outbox: wait for the batch in flight: %w", loopCtx.Err())
	case <-workCtx.Done():
		return Stats{}, fmt.Errorf("outbox: wait for the batch in flight: %w", workCtx.Err())
	}
	defer func() { <-r.flushing }()
	var total Stats
	for loopCtx.Err() == nil {
		stats, claimed, err := r.relayBatch(workCtx)
		total.add(stats)
		if err != nil {
			return total, err
		}
		if claimed < r.opts.BatchSize {
			return total, nil
		}
	}
	return total, loopCtx.Err()
}

// nudge wakes the run loop, if it is not already about to wake.
func (r *Relay) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run is the relay's main loop: flush, then wait for a notification or the
// poll interval, or, after a failure, for the retry delay (ignoring
// notifications, which would only repeat the failure sooner).
func (r *Relay) run(loopCtx, workCtx context.Context) {
	defer r.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		_, err := r.flush(loopCtx, workCtx)
		if loopCtx.Err() != nil {
			return
		}
		wait, wake := r.opts.PollInterval, r.wake
		if err != nil {
			failures++
			wait, wake = r.retryDelay(failures), nil
			r.logger.WarnContext(loopCtx, "outbox batch failed; retrying",
				slog.Int(logkey.Attempt, failures), slog.Duration(logkey.Delay, wait), slog.Any(logkey.Error, err))
		} else {
			failures = 0
		}
		timer.Reset(wait)
		select {
		case <-loopCtx.Done():
			return
		case <-timer.C:
		case <-wake:
		}
	}
}

// listen turns database notifications into nudges, reconnecting with
// backoff when the connection breaks (the poll interval covers the gap).
func (r *Relay) listen(ctx context.Context, lis listener) {
	defer r.wg.Done()
	failures := 0
	for {
		if lis == nil {
			var err error
			if lis, err = r.src.listen(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				r.logger.WarnContext(ctx, "outbox listen failed; polling meanwhile",
					slog.Int(logkey.Attempt, failures), slog.Any(logkey.Error, err))
				if !sleep(ctx, r.retryDelay(failures)) {
					return
				}
				continue
			}
			r.nudge() // rows may have been added while nobody listened
		}
		err := lis.wait(ctx)
		if err == nil {
			failures = 0
			r.nudge()
			continue
		}
		lis.close()
		lis = nil
		if ctx.Err() != nil {
			return
		}
		failures++
		r.logger.WarnContext(ctx, "outbox listen connection lost; reconnecting",
			slog.Int(logkey.Attempt, failures), slog.Any(logkey.Error, err))
		if !sleep(ctx, r.retryDelay(failures)) {
			return
		}
	}
}

// sleep waits for d or for ctx to end, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retryDelay is the wait before retry number n (1-based).
func (r *Relay) retryDelay(n int) time.Duration {
	d := r.opts.MinRetryDelay
	for i := 1; i < n && d < r.opts.MaxRetryDelay; i++ {
		d *= 2
	}
	d = min(d, r.opts.MaxRetryDelay)
	return d - time.Duration(rand.Float64()*0.2*float64(d))
}

// queue returns the drover queue called name.
func (r *Relay) queue(name string) (*drover.Queue, error) {
	r.queuesMu.Lock()
	defer r.queuesMu.Unlock()
	if q, ok := r.queues[name]; ok {
		return q, nil
	}
	q, err := drover.NewQueue(r.rdb, name, r.opts.QueueOptions)
	if err != nil {
		return nil, err
	}
	r.queues[name] = q
	return q, nil
}

// jobID is the id the row's job gets.
func (r *Relay) jobID(rw row, opts *drover.JobOptions) string {
	if opts != nil && opts.JobID != "" {
		return opts.JobID
	}
	return r.opts.JobIDPrefix + strconv.FormatInt(rw.id, 10)
}

// settled is what became of one row of a batch.
type settled struct {
	row     row
	jobID   string
	outcome drover.AddOutcome
	failure error // the queue refused the row for good
}

// errBatchTimedOut is the cause of a batch's ctx when BatchTimeout ran out.
var errBatchTimedOut = errors.New("the batch ran out of RelayOptions.BatchTimeout")

// relayBatch claims, adds and marks one batch, within BatchTimeout. It
// returns the number of rows claimed (0 when every row claimed waits for an
// older row of its Deduplication ID), so the caller knows whether more may
// be pending.
func (r *Relay) relayBatch(ctx context.Context) (Stats, int, error) {
	bctx, cancel := context.WithTimeoutCause(ctx, r.opts.BatchTimeout, errBatchTimedOut)
	defer cancel()
	stats, claimed, err := r.runBatch(bctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(bctx), errBatchTimedOut) {
		// The database and Redis calls report a bare deadline.
		err = fmt.Errorf("%w (%w, %s; retrying)", err, errBatchTimedOut, r.opts.BatchTimeout)
	}
	return stats, claimed, err
}

// runBatch is relayBatch without its bound.
func (r *Relay) runBatch(ctx context.Context) (Stats, int, error) {
	b, err := r.src.claim(ctx, r.opts.BatchSize, r.opts.BatchTimeout)
	if err != nil {
		return Stats{}, 0, fmt.Errorf("outbox: claim rows: %w", err)
	}
	// Detached: the rows must be released even when ctx is what failed;
	// bounded, as the database may not answer (pgsql.RollbackContext).
	defer func() {
		rctx, cancel := pgsql.RollbackContext(ctx)
		defer cancel()
		_ = b.rollback(rctx)
	}()
	rows := b.rows()
	if len(rows) == 0 {
		return Stats{}, 0, nil
	}
	claimed := len(rows)
	rows, err = r.inOrder(ctx, b, rows)
	if err != nil {
		return Stats{}, claimed, err
	}
	if len(rows) == 0 {
		// All wait for older rows of their ids: reported as none claimed,
		// so Flush does not claim them again at once.
		return Stats{}, 0, nil
	}
	if err := callHook(ctx, r.hooks.beforeAdd); err != nil {
		return Stats{}, claimed, err
	}
	results, err := r.addAll(ctx, rows)
	if err != nil {
		return Stats{}, claimed, err
	}
	if err := callHook(ctx, r.hooks.afterAdd); err != nil {
		return Stats{}, claimed, err
	}

	now := time.Now()
	var (
		stats  Stats
		ids    []int64
		jobIDs []string
	)
	lost := 0 // rows another relay took over while this batch ran (SQLite's lease ran out)
	for i := range results {
		s := &results[i]
		if s.failure != nil {
			marked, err := b.markFailed(ctx, s.row.id, s.failure.Error(), now)
			if err != nil {
				return Stats{}, claimed, fmt.Errorf("outbox: mark row %d failed: %w", s.row.id, err)
			}
			if !marked {
				// Its holder decides; this batch's verdict is not logged
				// as if it stood.
				s.failure = nil
				lost++
				continue
			}
			stats.Failed++
			continue
		}
		switch s.outcome {
		case drover.AddCreated, drover.AddReAdded: // both stored a new job
			stats.Created++
		case drover.AddDuplicate:
			stats.Duplicates++
		case drover.AddDeduplicated:
			stats.Deduplicated++
		}
		ids = append(ids, s.row.id)
		jobIDs = append(jobIDs, s.jobID)
	}
	if len(ids) > 0 {
		marked, err := b.markSent(ctx, ids, jobIDs, now)
		if err != nil {
			return Stats{}, claimed, fmt.Errorf("outbox: mark %d rows sent: %w", len(ids), err)
		}
		lost += len(ids) - marked
	}
	if err := callHook(ctx, r.hooks.beforeCommit); err != nil {
		return Stats{}, claimed, err
	}
	if err := b.commit(ctx); err != nil {
		if errors.Is(err, errCommitInDoubt) {
			// The jobs are in Redis whether or not the marks landed: they
			// count. Rows whose marks did not land are relayed again and
			// then count as duplicates.
			return stats, claimed, fmt.Errorf("outbox: commit batch: %w", err)
		}
		return Stats{}, claimed, fmt.Errorf("outbox: commit batch: %w", err)
	}

	for _, s := range results {
		if s.failure != nil {
			msg := "outbox row refused by its queue; marked failed"
			if errors.Is(s.failure, errOtherRowsJob) {
				msg = "outbox row's job id names another row's job; marked failed"
			}
			r.logger.ErrorContext(ctx, msg,
				slog.Int64(logkey.OutboxID, s.row.id), slog.String(logkey.Queue, s.row.queue),
				slog.String(logkey.JobID, s.jobID), slog.Any(logkey.Error, s.failure))
		}
	}
	if lost > 0 {
		r.logger.WarnContext(ctx, "outbox rows taken over by another relay while this batch ran; its verdict on them stands",
			slog.Int(logkey.Count, lost))
	}
	r.logger.InfoContext(ctx, "outbox batch relayed",
		slog.Int(logkey.Count, stats.Sent()), slog.Int(logkey.Created, stats.Created),
		slog.Int(logkey.Duplicates, stats.Duplicates))
	// All claimed, the rows left waiting included: a full batch that made
	// progress means more rows may be pending behind it.
	return stats, claimed, nil
}

// inOrder returns the rows of the batch that may be added now. A row whose
// Deduplication ID an older pending row in Replace (debounce) mode has too
// waits for it, held by another relay's batch in flight: added after this
// one, that row's job would replace this one's, the older row winning
// (and a batch that dies after its add leaves its row to be added again
// later, when it would do so too). The rows left wait for a later batch,
// this relay's next poll; rows of one batch are added in their order.
// Only a batch holding a row with a Deduplication ID asks the database.
func (r *Relay) inOrder(ctx context.Context, b batch, rows []row) ([]row, error) {
	var newest int64
	for _, rw := range rows {
		if _, ok := dedupOf(rw); ok {
			newest = rw.id
		}
	}
	if newest == 0 {
		return rows, nil
	}
	older, err := b.olderPending(ctx, newest)
	if err != nil {
		return nil, fmt.Errorf("outbox: read older pending rows: %w", err)
	}
	mine := make(map[int64]bool, len(rows))
	for _, rw := range rows {
		mine[rw.id] = true
	}
	first := make(map[dedupKey]int64) // the oldest replacing row of each id held elsewhere
	for _, o := range older {
		if mine[o.id] {
			continue
		}
		if k, ok := dedupOf(o); ok && k.replace {
			k.replace = false
			if _, seen := first[k]; !seen {
				first[k] = o.id
			}
		}
	}
	if len(first) == 0 {
		return rows, nil
	}
	now := rows[:0:0]
	var left []int64
	for _, rw := range rows {
		if k, ok := dedupOf(rw); ok {
			k.replace = false
			if id, held := first[k]; held && id < rw.id {
				left = append(left, rw.id)
				continue
			}
		}
		now = append(now, rw)
	}
	if len(left) > 0 {
		b.leave(left)
		r.logger.InfoContext(ctx, "outbox rows wait for an older row of their deduplication id held by another relay",
			slog.Int(logkey.Count, len(left)))
	}
	return now, nil
}

// dedupKey is a row's queue and Deduplication ID, and whether its add
// replaces a delayed owner of the id (Replace).
type dedupKey struct {
	queue, id string
	replace   bool
}

// dedupOf reads the row's Deduplication ID; false without one (or with
// options the relay will refuse anyway).
func dedupOf(rw row) (dedupKey, bool) {
	if rw.opts == nil {
		return dedupKey{}, false
	}
	o, err := decodeOpts(rw.opts)
	if err != nil || o == nil || o.Deduplication == nil || o.Deduplication.ID == "" {
		return dedupKey{}, false
	}
	return dedupKey{queue: rw.queue, id: o.Deduplication.ID, replace: o.Deduplication.Replace}, true
}

func callHook(ctx context.Context, h func(context.Context) error) error {
	if h == nil {
		return nil
	}
	return h(ctx)
}

// addAll adds the rows to their queues, one AddBulk per queue, in row
// order. A row the queue refuses for good (invalid options or data) is
// settled as failed; any other error fails the whole batch, to be retried.
//
// Each add ends when ctx does (internal/bounded): Close cancels ctx, which
// go-redis does not heed for a call in flight (it heeds a deadline, and its
// own timeouts, which a client may have switched off), so against a Redis
// that does not answer (a partition, a paused server) Close would wait for
// as long as that lasts. An abandoned add goes on until the client's
// timeouts or its Close end it; if it lands, its rows, still pending, are
// found as duplicates of its jobs when they are relayed again.
func (r *Relay) addAll(ctx context.Context, rows []row) ([]settled, error) {
	var order []string
	byQueue := make(map[string][]int)
	for i, rw := range rows {
		if _, ok := byQueue[rw.queue]; !ok {
			order = append(order, rw.queue)
		}
		byQueue[rw.queue] = append(byQueue[rw.queue], i)
	}

	results := make([]settled, len(rows))
	for _, name := range order {
		idx := byQueue[name]
		q, qErr := r.queue(name)
		var (
			jobs    []drover.BulkJob
			of      []int  // row index of each job
			derived []bool // whether the job's id derives from its row's id
		)
		for _, i := range idx {
			rw := rows[i]
			results[i].row = rw
			if qErr != nil {
				results[i].failure = qErr
				continue
			}
			opts, err := decodeOpts(rw.opts)
			if err != nil {
				results[i].failure = err
				continue
			}
			id := r.jobID(rw, opts)
			results[i].jobID = id
			withID := drover.JobOptions{}
			if opts != nil {
				withID = *opts
			}
			withID.JobID = id
			jobs = append(jobs, drover.BulkJob{Name: rw.name, Data: jsonData(rw.data), Opts: &withID})
			of = append(of, i)
			derived = append(derived, opts == nil || opts.JobID == "")
		}
		if len(jobs) == 0 {
			continue
		}
		added, err := bounded.Call(ctx, func(ctx context.Context) ([]*drover.AddResult, error) {
			return q.AddBulk(ctx, jobs)
		})
		if err != nil && (refused(err) || redisRefused(err)) {
			// One job spoils the bulk call: add them one by one to find it
			// (drover refuses before writing; Redis refuses the call whole).
			added, err = r.addOneByOne(ctx, q, jobs, of, results)
		}
		if err != nil {
			return nil, fmt.Errorf("outbox: add %d jobs to queue %q: %w", len(jobs), name, err)
		}
		for k, res := range added {
			if res == nil {
				continue
			}
			if res.Outcome == drover.AddDuplicate && derived[k] {
				if err := otherRowsJob(name, rows[of[k]], res.Job); err != nil {
					results[of[k]].failure = err
					continue
				}
			}
			results[of[k]].outcome = res.Outcome
			if res.Outcome == drover.AddDeduplicated && res.Job != nil {
				// The row became the job that owns its deduplication id;
				// no job has the row's own id.
				results[of[k]].jobID = res.Job.ID
			}
		}
	}
	return results, nil
}

// addOneByOne adds jobs singly, settling refused ones as failed. The result
// has a nil entry for each failed job.
func (r *Relay) addOneByOne(ctx context.Context, q *drover.Queue, jobs []drover.BulkJob, of []int, results []settled) ([]*drover.AddResult, error) {
	out := make([]*drover.AddResult, len(jobs))
	for k, j := range jobs {
		res, err := bounded.Call(ctx, func(ctx context.Context) (*drover.AddResult, error) {
			return q.Add(ctx, j.Name, j.Data, j.Opts)
		})
		switch {
		case err == nil:
			out[k] = res
		case refused(err) || redisRefused(err):
			results[of[k]].failure = err
		default:
			return nil, err
		}
	}
	return out, nil
}

// refused reports whether the queue turned a job down for good.
func refused(err error) bool {
	return errors.Is(err, drover.ErrInvalidOption) || errors.Is(err, drover.ErrInvalidData) ||
		errors.Is(err, drover.ErrInvalidJobID)
}

// redisRefused reports whether Redis answered an add with an error that
// sending it again cannot change: a key of the queue holding another type
// (WRONGTYPE), or an argument over the server's proto-max-bulk-len. Retried
// as a batch failure, one such row (or queue) blocked every row behind it
// for good; settled as failed, it is kept with its reason and the others go
// on. Errors about the server's state (failover, loading, memory, a busy
// script, permissions) are not among them: the batch waits those out.
func redisRefused(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "WRONGTYPE") || strings.Contains(msg, "Protocol error") ||
		strings.Contains(msg, "exceeds maximum allowed size")
}

// otherRowsJob returns an error when job, the existing job an add of rw
// (under the id derived from rw's id) was found a duplicate of, is not
// rw's job: a job added before rw was written, with another name or other
// data. It is then an older row's, whose id rw reuses because the outbox's
// ids restarted (the table re-created, by pgmigrate.Down and Up say, or
// restored from a backup, or its ids reset) while Redis kept the old rows'
// jobs. Taken for its duplicate, rw would be marked sent and never become
// a job; settled as failed, it is kept with the reason. rw's own job, added
// by a relay that died before marking rw, was added after rw was written;
// its data may differ from the row's (an AddMiddleware that rewrites it, a
// processor's UpdateData), so both must say it is another job. A job that
// could not be read (nil Data) passes: a duplicate it is.
func otherRowsJob(queue string, rw row, job *drover.Job) error {
	if job == nil || job.Data == nil || job.Timestamp.IsZero() || rw.created.IsZero() {
		return nil
	}
	if !job.Timestamp.Before(rw.created.Truncate(time.Millisecond)) {
		return nil // added after the row was written
	}
	if job.Name == rw.name && sameJSON(job.Data, rw.data) {
		return nil
	}
	return fmt.Errorf("%w: job %q of queue %q, the id of row %d, was added before the row was written, named %q (the row %q) or with other data; "+
		"the outbox's row ids restarted (its table re-created, by pgmigrate.Down and Up say, restored from a backup, "+
		"or its ids reset) while Redis kept the jobs of the old rows; "+
		"taken for that job's duplicate, the row would never become a job. Give the relays a new "+
		"RelayOptions.JobIDPrefix, then set the row pending again (failed_at and last_error NULL)",
		errOtherRowsJob, job.ID, queue, rw.id, job.Name, rw.name)
}

// errOtherRowsJob is the reason of a row whose derived job id names
// another row's job (otherRowsJob).
var errOtherRowsJob = errors.New("the row's job id names another row's job")

// sameJSON reports whether a and b are the same JSON value (the encoding
// aside: space, escapes, key order).
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, erra := decodeJSON(a)
	vb, errb := decodeJSON(b)
	return erra == nil && errb == nil && reflect.DeepEqual(va, vb)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}
