package drover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/keytype"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/topology"
)

// Queue adds jobs to one BullMQ queue and inspects and administers it.
// It is safe for concurrent use. It holds no connection of its own: it uses
// the caller's client, which the caller closes.
type Queue struct {
	name  string
	k     keys.Queue
	rdb   redis.UniversalClient
	opts  QueueOptions
	clock clock.Clock
	// clocker corrects clock by the offset to Redis TIME (worker_clock.go);
	// nil when QueueOptions.ClockCheckInterval is negative.
	clocker *clockKeeper
	logger  *slog.Logger
	closed  atomic.Bool
	// life ends at Close: it abandons the reads of waiting calls that
	// Redis does not answer (the client may ignore ctx, internal/bounded).
	life    context.Context
	endLife context.CancelFunc
	// registered is set once the queue's name is in keys.Registry.
	registered atomic.Bool
	// evictionChecked is set once checkEviction read maxmemory-policy.
	evictionChecked atomic.Bool
	adds            addBatcher
	// callBudget is how long one add call can take before the client's
	// own timeouts end it (bounded.ClientBudget): a caller's deadline
	// past it needs no goroutine to be kept.
	callBudget time.Duration
	// The add chains through QueueOptions.AddMiddleware (middleware.go);
	// nil without middleware.
	addOneChain, addBulkChain AddFunc
	// onWait, set by tests only, runs at stages of WaitUntilFinished.
	onWait func(stage string)
	// waits is the events reader WaitUntilFinished calls share (wait.go).
	waits waitHub
	// worker is the Worker whose own queue this is (Worker.Queue), nil
	// for a NewQueue: a job read through it is finished manually with
	// that worker's options, as BullMQ's Job.fromId(worker, id).
	worker *Worker
}

// NewQueue returns the queue called name. It does no I/O. On a Redis
// Cluster client it adds a go-redis hook (once per client) that reloads the
// slot map after a connection-level error, so every command of every queue
// follows a failover (see internal/topology).
func NewQueue(rdb redis.UniversalClient, name string, opts *QueueOptions) (*Queue, error) {
	o := opts.withDefaults()
	if rdb == nil {
		return nil, errors.New("drover: NewQueue needs a Redis client, got nil")
	}
	if err := checkNames(rdb, o.Prefix, name); err != nil {
		return nil, err
	}
	if o.AddBulkChunk < 1 {
		return nil, optionError("QueueOptions.AddBulkChunk must be at least 1, got %d", o.AddBulkChunk)
	}
	if o.AddRetryWindow < time.Millisecond {
		return nil, optionError("QueueOptions.AddRetryWindow must be at least 1ms, got %s", o.AddRetryWindow)
	}
	if o.DefaultJobOptions != nil {
		if err := checkDefaultJobOptions("QueueOptions.DefaultJobOptions", o.DefaultJobOptions); err != nil {
			return nil, err
		}
		// Every Add would fail on it; say so now.
		if err := backoffTypeKnown(o.DefaultJobOptions.Backoff, o.BackoffTypes); err != nil {
			return nil, fmt.Errorf("QueueOptions.DefaultJobOptions: %w", err)
		}
	}
	for i, mw := range o.AddMiddleware {
		if mw == nil {
			return nil, optionError("QueueOptions.AddMiddleware[%d] is nil", i)
		}
	}
	topology.Watch(rdb)
	k := keys.New(o.Prefix, name)
	if _, cluster := rdb.(*redis.ClusterClient); !cluster {
		k = k.Standalone()
	}
	q := &Queue{
		name:   name,
		k:      k,
		rdb:    rdb,
		opts:   o,
		clock:  clock.Real{},
		logger: outageLogger(o.Logger),

		callBudget: bounded.ClientBudget(rdb),
	}
	q.life, q.endLife = context.WithCancel(context.Background())
	if o.ClockCheckInterval > 0 {
		corrected := clock.NewCorrected(clock.Real{})
		q.clock = corrected
		q.clocker = &clockKeeper{rdb: rdb, clock: corrected, interval: o.ClockCheckInterval,
			warnAt: o.ClockSkewWarning, log: o.Logger.With(slog.String(logkey.Queue, name))}
	}
	if len(o.AddMiddleware) > 0 {
		q.addChains()
	}
	return q, nil
}

// checkNames validates the queue name and, on a Redis Cluster client, that
// every key of the queue will land in one hash slot.
func checkNames(rdb redis.UniversalClient, prefix, name string) error {
	if err := keys.ValidateName(name); err != nil {
		return optionError("%v", err)
	}
	if _, ok := rdb.(*redis.ClusterClient); ok {
		if _, tagged := keys.HashTag(prefix + ":" + name + ":"); !tagged {
			return optionError("queue %q with prefix %q on a Redis Cluster: its keys would spread over many hash slots "+
				"and its scripts would fail with CROSSSLOT; put a hash tag in the prefix (Prefix: \"{%s}\") or in the queue name (\"{%s}\")",
				name, prefix, prefix, name)
		}
	}
	return nil
}

// Name is the queue's name.
func (q *Queue) Name() string {
	if q == nil {
		return ""
	}
	return q.name
}

// Prefix is the queue's key prefix.
func (q *Queue) Prefix() string {
	if q == nil {
		return ""
	}
	return q.k.Prefix()
}

// Close marks the queue closed: later calls fail with ErrClosed, and
// WaitUntilFinished calls in progress end with it. It returns once the
// events reader those calls share has stopped: within a quarter second
// while Redis answers, longer during an outage (one failed read). It
// does not close the Redis client, which belongs to the caller.
func (q *Queue) Close() error {
	if q == nil {
		return ErrNoQueue
	}
	q.closed.Store(true)
	if q.endLife != nil {
		q.endLife()
	}
	q.stopWaits()
	return nil
}

func (q *Queue) check(ctx context.Context) error {
	if q == nil {
		return ErrNoQueue // the zero Job's
	}
	if q.rdb == nil {
		return errZeroValue("Queue", "NewQueue")
	}
	if q.closed.Load() {
		return fmt.Errorf("queue %q: %w", q.name, ErrClosed)
	}
	if ctx == nil {
		return errNilContext
	}
	return nil
}

// AddOutcome says what an add did.
type AddOutcome int

const (
	// AddCreated: a new job was stored.
	AddCreated AddOutcome = iota + 1
	// AddDuplicate: a job with the custom JobID already existed; nothing was
	// stored and Job is the existing job. A duplicated event was emitted.
	AddDuplicate
	// AddDeduplicated: the Deduplication ID is owned by another job; no job
	// was created and Job is the owner. The add may still have changed
	// something: with KeepLastIfActive and the owner running, the add is
	// kept and queued as a new job when the owner finishes; with Reschedule
	// a delayed owner's run was moved.
	AddDeduplicated
	// AddReAdded: a new job was stored for a Deduplication ID whose previous
	// owner had been removed while still holding it (BullMQ 6.7's stale-key
	// recovery). PreviousJobID names the removed job: the operation ran, or
	// was meant to run, before.
	AddReAdded
)

func (o AddOutcome) String() string {
	switch o {
	case AddCreated:
		return "created"
	case AddDuplicate:
		return "duplicate"
	case AddDeduplicated:
		return "deduplicated"
	case AddReAdded:
		return "re-added"
	}
	return "unknown"
}

// AddResult reports one add.
type AddResult struct {
	Job     *Job
	Outcome AddOutcome
	// ExistingState is the state of the existing job for AddDuplicate and
	// AddDeduplicated.
	ExistingState JobState
	// PreviousJobID is the removed former owner for AddReAdded.
	PreviousJobID string
}

// BulkJob is one job for AddBulk.
type BulkJob struct {
	Name string
	Data any
	Opts *JobOptions
}

// Add stores a job and makes it ready (or delayed). data is encoded with
// encoding/json; nil is stored as {}.
//
// Adds made at the same time from several goroutines share one script call
// (see addBatcher), so many concurrent producers cost Redis little more than
// one bulk add.
//
// ctx bounds the call even while Redis does not answer (go-redis ignores
// its deadline on the wire): when it ends first, an add that was sent
// returns an error wrapping ErrAddInDoubt and ctx.Err() (the job may be
// stored; adding again with the same JobID stores it once), one still
// queued behind concurrent adds returns ctx.Err() and is not stored, and so
// does one whose ctx has ended before the call.
//
// QueueOptions.AddMiddleware runs around it with a one-job slice.
func (q *Queue) Add(ctx context.Context, name string, data any, opts *JobOptions) (*AddResult, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if q.addOneChain != nil {
		return q.addThrough(ctx, BulkJob{Name: name, Data: data, Opts: opts})
	}
	return q.addOne(ctx, &BulkJob{Name: name, Data: data, Opts: opts})
}

// addOne is Add after the middleware.
func (q *Queue) addOne(ctx context.Context, bj *BulkJob) (*AddResult, error) {
	p, err := q.prepare(-1, bj, q.now(ctx))
	if err != nil {
		return nil, err
	}
	oc, err := q.adds.add(ctx, q, p.rec)
	if err != nil {
		return nil, fmt.Errorf("add job %q to queue %q: %w", bj.Name, q.name, err)
	}
	q.register(ctx)
	return q.addResult(&p, oc, q.existingJobs(ctx, []scripts.AddOutcome{oc})), nil
}

// prepared is a validated job ready to send.
type prepared struct {
	rec  scripts.AddRecord
	opts JobOptions
}

func (q *Queue) prepare(i int, bj *BulkJob, now time.Time) (prepared, error) {
	o := bj.Opts.merged(q.opts.DefaultJobOptions)
	// fail names the job in the error; built only when there is one.
	fail := func(format string, args ...any) (prepared, error) {
		where := fmt.Sprintf("job %q", bj.Name)
		if o.JobID != "" {
			where = fmt.Sprintf("job %q (id %q)", bj.Name, o.JobID)
		}
		if i >= 0 {
			where = fmt.Sprintf("bulk job %d, %s", i, where)
		}
		return prepared{}, fmt.Errorf("add %s to queue %q: "+format, append([]any{where, q.name}, args...)...)
	}
	if err := o.validate(); err != nil {
		return fail("%w", err)
	}
	if err := q.checkBackoffType(o.Backoff); err != nil {
		return fail("%w", err)
	}
	data, err := jobcodec.EncodeData(bj.Data)
	if err != nil {
		return fail("%w: %w", ErrInvalidData, err)
	}
	if o.SizeLimit > 0 && len(data) > o.SizeLimit {
		return fail("%w: data is %d bytes, over SizeLimit %d", ErrInvalidData, len(data), o.SizeLimit)
	}
	ts := now
	if !o.Timestamp.IsZero() {
		ts = o.Timestamp
	}
	o = o.scheduledFrom(ts)
	stored := o.stored()
	rec := scripts.AddRecord{
		ID:        o.JobID,
		Name:      bj.Name,
		Timestamp: ts.UnixMilli(),
		Data:      string(data),
		Opts:      string(stored.AppendJSON(make([]byte, 0, 64))),
		Delay:     o.Delay.Milliseconds(),
		Priority:  o.Priority,
		LIFO:      o.LIFO,
	}
	if d := o.Deduplication; d != nil {
		rec.DedupID, rec.DedupTTL, rec.DedupFlags = d.ID, d.TTL.Milliseconds(), d.flags()
	}
	return prepared{rec: rec, opts: o}, nil
}

// checkBackoffType refuses a Backoff.Type that is neither fixed,
// exponential nor one of QueueOptions.BackoffTypes.
func (q *Queue) checkBackoffType(b *Backoff) error { return backoffTypeKnown(b, q.opts.BackoffTypes) }

// backoffTypeKnown is checkBackoffType for a queue whose custom types are
// types.
func backoffTypeKnown(b *Backoff, types []string) error {
	if b != nil && b.Type != BackoffFixed && b.Type != BackoffExponential && !slices.Contains(types, b.Type) {
		return optionError("unknown JobOptions.Backoff.Type %q (want %q, %q or a name in QueueOptions.BackoffTypes)",
			b.Type, BackoffFixed, BackoffExponential)
	}
	return nil
}

// AddBulk adds many jobs, AddBulkChunk jobs per script call. Every job is
// validated before anything is written: one bad job fails the whole call
// and stores nothing. Each chunk is atomic; chunks are not atomic together:
// when a chunk fails after earlier ones were stored, the error is an
// *AddBulkError that carries the results of the stored jobs and says
// whether the failed chunk is known not to be stored. Like Add, each chunk
// is stored once however often the client resends it. When ctx ends while
// a chunk has no answer, the *AddBulkError counts that chunk as Unknown and
// wraps ErrAddInDoubt and ctx.Err().
//
// QueueOptions.AddMiddleware runs around it once, with a copy of jobs.
func (q *Queue) AddBulk(ctx context.Context, jobs []BulkJob) ([]*AddResult, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if q.addBulkChain != nil {
		return q.addBulkThrough(ctx, append([]BulkJob(nil), jobs...))
	}
	return q.addBulk(ctx, jobs)
}

// addBulk is AddBulk after the middleware.
func (q *Queue) addBulk(ctx context.Context, jobs []BulkJob) ([]*AddResult, error) {
	now := q.now(ctx)
	preps := make([]prepared, len(jobs))
	for i := range jobs {
		idx := i
		if len(jobs) == 1 {
			idx = -1
		}
		p, err := q.prepare(idx, &jobs[i], now)
		if err != nil {
			return nil, err
		}
		preps[i] = p
	}
	out := make([]*AddResult, 0, len(jobs))
	recs := make([]scripts.AddRecord, len(preps))
	for i := range preps {
		recs[i] = preps[i].rec
	}
	for from := 0; from < len(recs); from += q.opts.AddBulkChunk {
		to := min(from+q.opts.AddBulkChunk, len(recs))
		outcomes, err := q.addJobs(ctx, ctx, recs[from:to])
		if err != nil {
			e := &AddBulkError{Queue: q.name, Total: len(jobs), Results: out, Err: err}
			// Unless a send's answer was lost, Redis refused the chunk
			// before it wrote (OOM is checked at a script's first write).
			if errors.Is(err, ErrAddInDoubt) {
				e.Unknown = to - from
			}
			return nil, e
		}
		existing := q.existingJobs(ctx, outcomes)
		for i, oc := range outcomes {
			out = append(out, q.addResult(&preps[from+i], oc, existing))
		}
	}
	if len(out) > 0 {
		q.register(ctx)
	}
	return out, nil
}

// addJobs makes one add call. The call is stored once however often it is
// sent (scripts.Call), so when its answer is lost (a reset connection, a
// timeout, Redis paused), it could not connect, or Redis answers "not now"
// (TRYAGAIN while a slot migrates, LOADING after a restart, CLUSTERDOWN,
// READONLY during a failover), addJobs sends it again with the same token, backing off, up to
// addResends times (about 0.7 s) and within half of AddRetryWindow: a resend
// within the window gets the first run's answer, so after a brief fault the
// caller learns what happened instead of being left in doubt. A longer
// outage still ends in an error. cmdCtx bounds each send, and addJobs
// returns with ErrAddInDoubt as soon as it ends, answered or not; resends
// stop when stop ends.
func (q *Queue) addJobs(cmdCtx, stop context.Context, recs []scripts.AddRecord) ([]scripts.AddOutcome, error) {
	return sendAdd(cmdCtx, stop, q.opts.AddRetryWindow, q.callBudget, q.logger, func(ctx context.Context, call scripts.Call) ([]scripts.AddOutcome, error) {
		return scripts.AddJobs(ctx, q.rdb, q.k, call, recs)
	})
}

// sendAdd runs send, an add script call made exactly once per call token
// (addJobs, addFlow), with addJobs' resend rules; window is the call's
// AddRetryWindow.
func sendAdd(cmdCtx, stop context.Context, window, budget time.Duration, logger *slog.Logger,
	send func(context.Context, scripts.Call) ([]scripts.AddOutcome, error)) ([]scripts.AddOutcome, error) {
	if err := cmdCtx.Err(); err != nil {
		// Ended before the call: nothing is sent, nothing is in doubt.
		return nil, err
	}
	call := scripts.NewCall(window)
	start := time.Now()
	deadline := start.Add(window / 2)
	// The caller stops waiting for a send when cmdCtx ends: go-redis waits
	// out its read timeout whatever ctx says (internal/bounded).
	bound := cmdCtx
	// No send, go-redis's own retries included, may reach Redis after the
	// first run's reply has expired: that would store the jobs again.
	cmdCtx, cancel := context.WithDeadline(cmdCtx, start.Add(window*3/4))
	defer cancel()
	// mayHaveRun: a send's answer was lost. Each send is one write at most
	// (the add scripts run with go-redis' retries off, scripts.sentOnce),
	// so an error names what happened to that send: a dial error or a
	// refusal by Redis (LOADING, TRYAGAIN, ...) means it did not run.
	mayHaveRun := false
	fail := func(err error) ([]scripts.AddOutcome, error) {
		if mayHaveRun {
			return nil, fmt.Errorf("%w: %w", ErrAddInDoubt, err)
		}
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		var out []scripts.AddOutcome
		var err error
		if bounded.Needed(bound, budget) {
			out, err = bounded.Call(bound, func(context.Context) ([]scripts.AddOutcome, error) { return send(cmdCtx, call) })
		} else {
			out, err = send(cmdCtx, call) // the client's timeouts end it before bound does
		}
		if err == nil {
			return out, nil
		}
		// A refusal (addFlow's parent checks) is the script's answer and
		// final: it wrote nothing, and an earlier send whose answer was
		// lost did not store the jobs either (this send would have got
		// that send's answer instead), so nothing is in doubt.
		var refused *scripts.FlowRefusedError
		if errors.As(err, &refused) {
			return nil, err
		}
		if !isRedisReply(err) && !isDialError(err) && !errors.Is(err, redis.ErrClosed) {
			mayHaveRun = true
		}
		d := retryDelay(attempt)
		if attempt > addResends || !resendable(err) || stop.Err() != nil || cmdCtx.Err() != nil || time.Now().Add(d).After(deadline) {
			return fail(err)
		}
		logger.WarnContext(stop, msgAddResent,
			slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		if !sleepCtx(stop, d) {
			return fail(err)
		}
	}
}

// addResends bounds the resends of one add call after go-redis gave up.
const addResends = 3

// resendable reports whether an add call that failed with err may be sent
// again to learn its outcome: its answer was lost, or Redis refused it for
// a passing reason. Other Redis answers (OOM, a script error) are final.
func resendable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	if !isRedisReply(err) {
		return true
	}
	switch outage.ReplyCode(err) {
	case "TRYAGAIN", "LOADING", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "BUSY", "MOVED", "ASK":
		return true
	}
	return false
}

// isDialError reports whether err is a failure to connect.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// isRedisReply reports whether err is an error the Redis server answered
// with, as opposed to a network or context error.
func isRedisReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// existingJobs is the jobs that the duplicate and deduplicated outcomes
// among outcomes name, by id. The add script sends each one's hash with its
// outcome; only those it could not (a re-run of the call answered from its
// stored reply) are read here, all in one round trip. A job that cannot be
// read (removed since, or the read failed) is missing from the map, and
// addResult then reports its id alone: the add itself is done either way.
func (q *Queue) existingJobs(ctx context.Context, outcomes []scripts.AddOutcome) map[string]*Job {
	var byID map[string]*Job
	var unread []string
	for _, oc := range outcomes {
		if oc.Result != scripts.AddDuplicate && oc.Result != scripts.AddDeduplicated {
			continue
		}
		if byID == nil {
			byID = map[string]*Job{}
		}
		if _, done := byID[oc.ID]; done {
			continue
		}
		if oc.Existing == nil {
			byID[oc.ID] = nil
			unread = append(unread, oc.ID)
			continue
		}
		rec, ok, err := jobcodec.Decode(oc.ID, oc.Existing)
		if err == nil && ok {
			byID[oc.ID] = q.fromRecord(&rec)
		} else {
			byID[oc.ID] = nil
		}
	}
	if len(unread) > 0 {
		jobs, err := q.getJobsByID(ctx, unread)
		if err == nil {
			for _, j := range jobs {
				byID[j.ID] = j
			}
		}
	}
	return byID
}

// addResult is the AddResult of the add p with outcome oc; existing holds
// the jobs a duplicate or deduplicated outcome may name (existingJobs).
func (q *Queue) addResult(p *prepared, oc scripts.AddOutcome, existing map[string]*Job) *AddResult {
	switch oc.Result {
	case scripts.AddCreated, scripts.AddReAdded:
		rec := &p.rec
		job := &Job{
			ID:        oc.ID,
			Name:      rec.Name,
			Data:      json.RawMessage(rec.Data),
			Opts:      p.opts,
			RawOpts:   rec.Opts,
			Timestamp: time.UnixMilli(rec.Timestamp),
			Delay:     time.Duration(rec.Delay) * time.Millisecond,
			Priority:  rec.Priority,
			queue:     q,
		}
		if rec.DedupID != "" {
			job.DeduplicationID = rec.DedupID
		}
		if oc.Result == scripts.AddReAdded {
			return &AddResult{Job: job, Outcome: AddReAdded, PreviousJobID: oc.State}
		}
		return &AddResult{Job: job, Outcome: AddCreated}
	case scripts.AddDuplicate, scripts.AddDeduplicated:
		outcome := AddDuplicate
		if oc.Result == scripts.AddDeduplicated {
			outcome = AddDeduplicated
		}
		job := existing[oc.ID]
		if job == nil {
			job = &Job{ID: oc.ID, queue: q}
		}
		return &AddResult{Job: job, Outcome: outcome, ExistingState: JobState(oc.State)}
	}
	// parseAddReply refuses any other result.
	return &AddResult{Job: &Job{ID: oc.ID, queue: q}, Outcome: AddOutcome(0)}
}

// GetJob reads one job. It returns ErrJobNotFound when there is none.
func (q *Queue) GetJob(ctx context.Context, id string) (*Job, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if err := storedIDError(id); err != nil {
		return nil, &JobError{Queue: q.name, JobID: id, Op: "get", Err: err}
	}
	m, err := callWithin(ctx, q, func(ctx context.Context) (map[string]string, error) {
		return q.rdb.HGetAll(ctx, q.k.Job(id)).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("get job %q from queue %q: %w", id, q.name, keytype.Explain(ctx, q.rdb, q.k, err, id))
	}
	rec, ok, err := jobcodec.DecodeMap(id, m)
	if err != nil {
		return nil, fmt.Errorf("get job %q from queue %q: %w", id, q.name, err)
	}
	if !ok {
		return nil, &JobError{Queue: q.name, JobID: id, Op: "get", Err: ErrJobNotFound}
	}
	return q.fromRecord(&rec), nil
}

// GetJobs lists jobs in the given states, a page at a time: start and end
// are inclusive indexes per state (end -1 = to the last), asc orders oldest
// first. Jobs removed between listing and reading are skipped.
func (q *Queue) GetJobs(ctx context.Context, states []JobState, start, end int64, asc bool) ([]*Job, error) {
	ids, err := q.GetJobIDs(ctx, states, start, end, asc)
	if err != nil {
		return nil, err
	}
	return q.getJobsByID(ctx, ids)
}

// GetJobIDs is GetJobs without reading the jobs.
func (q *Queue) GetJobIDs(ctx context.Context, states []JobState, start, end int64, asc bool) ([]string, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	names, err := stateNames(states)
	if err != nil {
		return nil, err
	}
	ranges, err := scripts.GetRanges(ctx, q.reads(), q.k, start, end, asc, names...)
	if err != nil {
		return nil, fmt.Errorf("list jobs of queue %q: %w", q.name, keytype.Explain(ctx, q.rdb, q.k, err))
	}
	var ids []string
	seen := make(map[string]bool)
	for _, r := range ranges {
		for _, id := range r {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

func (q *Queue) getJobsByID(ctx context.Context, ids []string) ([]*Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmds, err := callWithin(ctx, q, func(ctx context.Context) ([]*redis.MapStringStringCmd, error) {
		cmds := make([]*redis.MapStringStringCmd, len(ids))
		_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HGetAll(ctx, q.k.Job(id))
			}
			return nil
		})
		return cmds, err
	})
	if err != nil {
		return nil, fmt.Errorf("read jobs of queue %q: %w", q.name, keytype.Explain(ctx, q.rdb, q.k, err, ids...))
	}
	jobs := make([]*Job, 0, len(ids))
	for i, c := range cmds {
		rec, ok, err := jobcodec.DecodeMap(ids[i], c.Val())
		if err != nil {
			return nil, fmt.Errorf("read jobs of queue %q: %w", q.name, err)
		}
		if ok {
			jobs = append(jobs, q.fromRecord(&rec))
		}
	}
	return jobs, nil
}

func stateNames(states []JobState) ([]string, error) {
	if len(states) == 0 {
		states = DefaultCountStates
	}
	names := make([]string, len(states))
	for i, s := range states {
		if !s.valid() {
			return nil, optionError("unknown job state %q (want one of waiting, active, delayed, prioritized, completed, failed, waiting-children, paused)", s)
		}
		names[i] = string(s)
	}
	return names, nil
}

// GetJobCounts counts jobs per state, atomically. No states = the
// DefaultCountStates.
func (q *Queue) GetJobCounts(ctx context.Context, states ...JobState) (map[JobState]int64, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	names, err := stateNames(states)
	if err != nil {
		return nil, err
	}
	counts, err := scripts.GetCounts(ctx, q.reads(), q.k, names...)
	if err != nil {
		return nil, fmt.Errorf("count jobs of queue %q: %w", q.name, keytype.Explain(ctx, q.rdb, q.k, err))
	}
	out := make(map[JobState]int64, len(names))
	for i, n := range names {
		out[JobState(n)] = counts[i]
	}
	return out, nil
}

// GetCountsPerPriority counts the jobs ready to run at each of the given
// priorities, atomically (BullMQ's getCountsPerPriority). Priority 0 counts
// the whole wait list, which is where a paused queue's jobs stay too; any
// other priority counts the prioritized jobs of that priority. Jobs that
// are delayed or waiting for children are not counted under any priority.
// The result has one entry per distinct priority asked for.
func (q *Queue) GetCountsPerPriority(ctx context.Context, priorities ...int) (map[int]int64, error) {
	unique := make([]int, 0, len(priorities))
	for _, p := range priorities {
		if p < 0 || p > MaxPriority {
			return nil, optionError("priority must be between 0 and %d, got %d", MaxPriority, p)
		}
		if !slices.Contains(unique, p) {
			unique = append(unique, p)
		}
	}
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	out := make(map[int]int64, len(unique))
	if len(unique) == 0 {
		return out, nil
	}
	counts, err := scripts.GetCountsPerPriority(ctx, q.reads(), q.k, unique)
	if err != nil {
		return nil, fmt.Errorf("count jobs per priority of queue %q: %w", q.name, err)
	}
	for i, p := range unique {
		out[p] = counts[i]
	}
	return out, nil
}

// GetJobState reads where job id is: StateUnknown if nowhere.
func (q *Queue) GetJobState(ctx context.Context, id string) (JobState, error) {
	if err := q.check(ctx); err != nil {
		return "", err
	}
	s, err := scripts.GetStates(ctx, q.reads(), q.k, id)
	if err != nil {
		return "", fmt.Errorf("get state of job %q in queue %q: %w", id, q.name, err)
	}
	return JobState(s[0]), nil
}

// Pause stops workers (drover's and Node's) from taking new jobs; running
// jobs finish. Adds still succeed and wait.
func (q *Queue) Pause(ctx context.Context) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if _, err := scripts.Pause(ctx, q.writes(), q.k, q.call(), true); err != nil {
		return fmt.Errorf("pause queue %q: %w", q.name, err)
	}
	return nil
}

// Resume undoes Pause and wakes workers.
func (q *Queue) Resume(ctx context.Context) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if _, err := scripts.Pause(ctx, q.writes(), q.k, q.call(), false); err != nil {
		return fmt.Errorf("resume queue %q: %w", q.name, err)
	}
	return nil
}

// IsPaused reports whether the queue is paused.
func (q *Queue) IsPaused(ctx context.Context) (bool, error) {
	if err := q.check(ctx); err != nil {
		return false, err
	}
	ok, err := callWithin(ctx, q, func(ctx context.Context) (bool, error) {
		return q.rdb.HExists(ctx, q.k.Meta(), "paused").Result()
	})
	if err != nil {
		return false, fmt.Errorf("read pause state of queue %q: %w", q.name, err)
	}
	return ok, nil
}

// Drain deletes every job waiting to run (waiting and prioritized, and
// delayed when delayed is true). Active and finished jobs stay. It returns
// how many jobs it deleted.
func (q *Queue) Drain(ctx context.Context, delayed bool) (int, error) {
	n, _, err := q.drainNamed(ctx, delayed, 0)
	return n, err
}

// drainNamed is Drain that also names the first name jobs it deleted
// (seam.Drain, for an audit entry).
func (q *Queue) drainNamed(ctx context.Context, delayed bool, name int) (int, []string, error) {
	if err := q.check(ctx); err != nil {
		return 0, nil, err
	}
	n, ids, err := scripts.Drain(ctx, q.writes(), q.k, q.call(), delayed, name)
	if err != nil {
		return 0, nil, fmt.Errorf("drain queue %q: %w", q.name, err)
	}
	return int(n), ids, nil
}

// ObliterateOptions configure Obliterate. Nil means defaults.
type ObliterateOptions struct {
	// Force deletes jobs being processed too. Default false: refuse with
	// ErrActiveJobs.
	Force bool
	// Count is how many jobs one script call deletes. Default 1000.
	Count int
}

// Obliterate pauses the queue, then deletes it: every job and every key
// but the rate limiter, which BullMQ's obliterate leaves to expire.
func (q *Queue) Obliterate(ctx context.Context, opts *ObliterateOptions) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	var o ObliterateOptions
	if opts != nil {
		o = *opts
	}
	if o.Count == 0 {
		o.Count = 1000
	}
	if o.Count < 0 {
		return optionError("ObliterateOptions.Count must be positive, got %d", o.Count)
	}
	if err := q.Pause(ctx); err != nil {
		return err
	}
	for {
		more, err := scripts.Obliterate(ctx, q.writes(), q.k, o.Count, o.Force)
		if errors.Is(err, scripts.ErrQueueNotPaused) && q.metaGone(ctx) {
			// This call paused the queue, and its paused flag went with the
			// meta hash: the last call ran, its reply was lost and go-redis
			// sent it again (or another Obliterate finished first). The
			// queue is gone.
			more, err = false, nil
		}
		if err != nil {
			return fmt.Errorf("obliterate queue %q: %w", q.name, err)
		}
		if !more {
			// The name leaves the queue registry (see register); a later
			// add registers it again.
			if err := q.writes().Do(ctx, "srem", keys.Registry(q.k.Prefix()), q.name).Err(); err != nil {
				return fmt.Errorf("obliterate queue %q: remove it from the queue registry: %w", q.name, err)
			}
			q.registered.Store(false)
			return nil
		}
	}
}

// metaGone reports whether the queue's meta hash does not exist (a read
// that fails reports false).
func (q *Queue) metaGone(ctx context.Context) bool {
	n, err := callWithin(ctx, q, func(ctx context.Context) (int64, error) {
		return q.rdb.Exists(ctx, q.k.Meta()).Result()
	})
	return err == nil && n == 0
}

// GetJobLogs reads a job's log lines from start to end (inclusive, -1 = last)
// and the total number of lines.
func (q *Queue) GetJobLogs(ctx context.Context, id string, start, end int64) ([]string, int64, error) {
	return q.jobLogs(ctx, id, start, end, false)
}

// GetJobLogsNewestFirst reads a job's log lines newest first, as BullMQ's
// getJobLogs(id, start, end, false) does: start and end (inclusive) count
// from the newest line, so 0, 9 are the ten lines logged last, the newest
// first, and -1 is the oldest line. It also returns the total number of
// lines. A reader showing the end of a long log asks for it without
// counting the lines first.
func (q *Queue) GetJobLogsNewestFirst(ctx context.Context, id string, start, end int64) ([]string, int64, error) {
	return q.jobLogs(ctx, id, start, end, true)
}

func (q *Queue) jobLogs(ctx context.Context, id string, start, end int64, newestFirst bool) ([]string, int64, error) {
	if err := q.check(ctx); err != nil {
		return nil, 0, err
	}
	if err := storedIDError(id); err != nil {
		return nil, 0, &JobError{Queue: q.name, JobID: id, Op: "read logs of", Err: err}
	}
	if newestFirst {
		// Index i from the newest is -(i+1) from the oldest, which is ^i
		// (no overflow at either end of int64).
		start, end = ^end, ^start
	}
	var lines *redis.StringSliceCmd
	var count *redis.IntCmd
	err := pipelineWithin(ctx, q, false, func(p redis.Pipeliner) error {
		lines = p.LRange(ctx, q.k.Logs(id), start, end)
		count = p.LLen(ctx, q.k.Logs(id))
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read logs of job %q in queue %q: %w", id, q.name, err)
	}
	out := lines.Val()
	if newestFirst {
		slices.Reverse(out)
	}
	return out, count.Val(), nil
}

// register adds the queue's name to the registry of queue names (one SADD
// per Queue handle, after its first successful add or a worker's start), so
// inspect lists queues without scanning the keyspace. Best effort: a
// failure is retried by the next add. The first time, it also warns when
// Redis may evict keys (checkEviction), as a worker's start does.
func (q *Queue) register(ctx context.Context) {
	if !q.evictionChecked.Load() {
		q.checkEviction(ctx, q.logger.With(slog.String(logkey.Queue, q.name)))
	}
	if q.registered.Load() {
		return
	}
	// Bounded: an add that returned its jobs must not then wait out the
	// client's timeouts past the caller's deadline for this extra.
	_, err := callWithin(ctx, q, func(ctx context.Context) (int64, error) {
		return q.rdb.SAdd(ctx, keys.Registry(q.k.Prefix()), q.name).Result()
	})
	if err == nil {
		q.registered.Store(true)
	}
}

// now is the corrected time for a call that stamps or schedules by it,
// measuring the offset first when it is due (see clockKeeper.refresh).
func (q *Queue) now(ctx context.Context) time.Time {
	if q.clocker != nil {
		q.clocker.refresh(ctx)
	}
	return q.clock.Now()
}

// nowMs is the queue clock's now in BullMQ's ms.
func (q *Queue) nowMs() int64 { return q.clock.Now().UnixMilli() }
