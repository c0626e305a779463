package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/topology"
)

// Defaults. Each option's doc names the one it uses.
const (
	// ScanLimitDefault bounds the jobs one list page, stalled view or
	// budget view reads per state.
	ScanLimitDefault = 10000
	// PageSizeDefault is the page size of Jobs.
	PageSizeDefault = 50
	// BudgetScanLimitDefault bounds the jobs the budget view reads per
	// state.
	BudgetScanLimitDefault = 2000
	// BudgetThresholdDefault: a job has used most of its attempt budget when
	// attempts made / attempts allowed is above this.
	BudgetThresholdDefault = 0.8
)

// Options configure an Inspector. Nil means defaults.
type Options struct {
	// Prefix of every key. Defaults to drover.PrefixDefault ("bull").
	Prefix string
	// ScanLimit bounds how many jobs a list page (filtered or not: ids
	// whose hash is gone count), the stalled view and the budget view read
	// per state; a larger ListOptions.Limit gets a truncated page. Defaults
	// to ScanLimitDefault.
	ScanLimit int
	// BudgetScanLimit bounds how many jobs per live state the budget view
	// (NearExhausted, on the dashboard's queue page) reads: the newest, for
	// bounded work per request on big queues; the report says Truncated
	// when a state held more. Defaults to BudgetScanLimitDefault (2000).
	BudgetScanLimit int
	// BudgetThreshold is the share of its attempts a live job must have used
	// to be listed by NearExhausted. Defaults to BudgetThresholdDefault (0.8);
	// must be in (0, 1).
	BudgetThreshold float64
	// Storm tunes the retry-storm alert. Nil means defaults.
	Storm *StormOptions
	// DiscoveryInterval is how often a background loop refreshes the queue
	// list once Queues was called (see Queues; full scans of the keyspace
	// are spaced by their own cost); Close stops it. The
	// loop rests while Queues goes uncalled for 10 intervals; the next call
	// answers from the cache and wakes it. Defaults to
	// DiscoveryIntervalDefault (3s). Negative: no loop and no published
	// list; every Queues call scans.
	DiscoveryInterval time.Duration
	// Logger receives warnings. Defaults to discarding.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	r.Prefix = cmp.Or(r.Prefix, drover.PrefixDefault)
	r.ScanLimit = cmp.Or(r.ScanLimit, ScanLimitDefault)
	r.BudgetScanLimit = cmp.Or(r.BudgetScanLimit, BudgetScanLimitDefault)
	r.BudgetThreshold = cmp.Or(r.BudgetThreshold, BudgetThresholdDefault)
	s := r.Storm.withDefaults()
	r.Storm = &s
	r.DiscoveryInterval = cmp.Or(r.DiscoveryInterval, DiscoveryIntervalDefault)
	r.Logger = cmp.Or(r.Logger, slog.New(slog.DiscardHandler))
	return r
}

func (o *Options) validate() error {
	switch {
	case o.ScanLimit < 1:
		return fmt.Errorf("%w: inspect.Options.ScanLimit must be at least 1, got %d", drover.ErrInvalidOption, o.ScanLimit)
	case o.BudgetScanLimit < 1:
		return fmt.Errorf("%w: inspect.Options.BudgetScanLimit must be at least 1, got %d", drover.ErrInvalidOption, o.BudgetScanLimit)
	case o.BudgetThreshold <= 0 || o.BudgetThreshold >= 1 || math.IsNaN(o.BudgetThreshold):
		return fmt.Errorf("%w: inspect.Options.BudgetThreshold must be in (0, 1), got %v", drover.ErrInvalidOption, o.BudgetThreshold)
	}
	return o.Storm.validate()
}

// Inspector reads and administers every queue under one prefix. It is safe
// for concurrent use.
type Inspector struct {
	rdb  redis.UniversalClient
	opts Options

	mu      sync.Mutex
	queues  map[string]*drover.Queue // at most queueHandlesMax
	samples map[string][]sample      // delayed-set sizes per queue, for growth
	// conflicts are the newest retries refused because a worker held the
	// job's lock, oldest first (at most conflictsKept).
	conflicts []Conflict
	// now is Redis's time (serverClock), or a test's clock.
	now   func(ctx context.Context) time.Time
	clock *serverClock
	// paused remembers, per paused queue, what pausedSince found and the
	// newest event it had read, so the next QueueInfo reads only newer
	// events (at most queueHandlesMax queues).
	paused map[string]pausedMemo

	disc discovery
}

// New returns an Inspector over rdb. It does no I/O. On a Redis Cluster
// client it adds drover's failover hook, as drover.NewQueue does.
func New(rdb redis.UniversalClient, opts *Options) (*Inspector, error) {
	if rdb == nil {
		return nil, errors.New("inspect: New needs a Redis client, got nil")
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	topology.Watch(rdb)
	i := &Inspector{
		rdb:     rdb,
		opts:    o,
		queues:  make(map[string]*drover.Queue),
		samples: make(map[string][]sample),
		clock:   newServerClock(rdb, time.Now),
	}
	i.now = func(ctx context.Context) time.Time { return i.clock.now(ctx) }
	return i, nil
}

// Client is the Redis client the Inspector reads, for tools built over it
// that keep state of their own next to the queues (the dashboard's
// sessions and audit log).
func (i *Inspector) Client() redis.UniversalClient { return i.rdb }

// Prefix is the key prefix the Inspector works under.
func (i *Inspector) Prefix() string { return i.opts.Prefix }

// StormOptions are the storm thresholds in force, defaults filled in.
func (i *Inspector) StormOptions() StormOptions { return *i.opts.Storm }

// BudgetThreshold is the budget share in force (see Options.BudgetThreshold).
func (i *Inspector) BudgetThreshold() float64 { return i.opts.BudgetThreshold }

// Ping checks that Redis answers.
func (i *Inspector) Ping(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	if err := i.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

// Queue returns a drover.Queue handle for name, for calls this package does
// not wrap. It does no I/O and does not check that the queue exists
// (Exists does). Handles are cached, at most queueHandlesMax of them.
func (i *Inspector) Queue(name string) (*drover.Queue, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if q, ok := i.queues[name]; ok {
		return q, nil
	}
	q, err := drover.NewQueue(i.rdb, name, &drover.QueueOptions{Prefix: i.opts.Prefix, Logger: i.opts.Logger})
	if err != nil {
		return nil, err
	}
	if len(i.queues) >= queueHandlesMax {
		for n := range i.queues { // evict one, any
			delete(i.queues, n)
			delete(i.samples, n)
			break
		}
	}
	i.queues[name] = q
	return q, nil
}

func (i *Inspector) keys(queue string) keys.Queue { return keys.New(i.opts.Prefix, queue) }

// Counts are a queue's jobs per state.
type Counts struct {
	Waiting         int64 `json:"waiting"`
	Active          int64 `json:"active"`
	Delayed         int64 `json:"delayed"`
	Prioritized     int64 `json:"prioritized"`
	Completed       int64 `json:"completed"`
	Failed          int64 `json:"failed"`
	WaitingChildren int64 `json:"waitingChildren"`
	Paused          int64 `json:"paused"`
}

// Total is how many jobs the counts hold, in every state.
func (c Counts) Total() int64 {
	return c.Waiting + c.Active + c.Delayed + c.Prioritized + c.Completed + c.Failed + c.WaitingChildren + c.Paused
}

// Get returns the count of state (0 for a state Counts does not report).
func (c Counts) Get(state drover.JobState) int64 {
	if p := c.field(state); p != nil {
		return *p
	}
	return 0
}

// field is where Counts keeps state's count, or nil: the one mapping from
// states to fields.
func (c *Counts) field(state drover.JobState) *int64 {
	switch state {
	case drover.StateWaiting:
		return &c.Waiting
	case drover.StateActive:
		return &c.Active
	case drover.StateDelayed:
		return &c.Delayed
	case drover.StatePrioritized:
		return &c.Prioritized
	case drover.StateCompleted:
		return &c.Completed
	case drover.StateFailed:
		return &c.Failed
	case drover.StateWaitingChildren:
		return &c.WaitingChildren
	case drover.StatePaused:
		return &c.Paused
	}
	return nil
}

// States are the states Counts reports, in the order tools show them.
var States = []drover.JobState{
	drover.StateWaiting, drover.StatePrioritized, drover.StateActive, drover.StateDelayed,
	drover.StateCompleted, drover.StateFailed, drover.StateWaitingChildren, drover.StatePaused,
}

// QueueInfo is one queue's summary.
type QueueInfo struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
	// PausedSince is when the queue was paused: the time of the first
	// "paused" event after the last "resumed" one in its events stream (a
	// pause of a paused queue writes the event again). Zero when it is not
	// paused or no such event was among the newest pausedEventsWindow
	// events when the Inspector first looked (the stream is capped); when
	// the last "resumed" is older than that window, the oldest "paused" in
	// it (the pause is at least that old). The Inspector remembers the
	// answer while the queue stays paused and then reads only newer events.
	PausedSince Instant `json:"pausedSince,omitzero"`
	Counts      Counts  `json:"counts"`
	// Limits are the queue-wide limits on taking jobs, which say why
	// waiting jobs may not move although workers run.
	Limits Limits `json:"limits"`
}

// Limits are what stops workers from taking a queue's jobs besides a pause:
// the global concurrency and rate limit (Queue.SetGlobalConcurrency,
// Queue.SetGlobalRateLimit, or Node's equivalents) and the limiter key's
// current window.
type Limits struct {
	// Concurrency is the global concurrency; nil when none is set.
	Concurrency *int `json:"concurrency"`
	// Maxed: the active jobs reached Concurrency, so no worker takes a job
	// until one finishes (BullMQ's isMaxed).
	Maxed bool `json:"maxed"`
	// RateLimit is the global rate limit; nil when none is set.
	RateLimit *RateLimit `json:"rateLimit"`
	// RateLimitedFor is how long the limiter still refuses activations to
	// workers that apply a limit: the global limit's window is used up,
	// or Queue.RateLimit (BullMQ's queue.rateLimit) blocked the queue. 0
	// when it refuses none (a worker's own Limiter may still count in the
	// same key: its max is the worker's, unknown here). JSON:
	// rateLimitedForMs.
	RateLimitedFor time.Duration `json:"-"`
}

// RateLimit is at most Max job activations per Duration.
type RateLimit struct {
	Max int `json:"max"`
	// Duration is the window (JSON: durationMs).
	Duration time.Duration `json:"-"`
}

// MarshalJSON writes RateLimitedFor in ms.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits
	return marshalMs(plain(l), msField{name: "rateLimitedForMs", d: &l.RateLimitedFor})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Limits) UnmarshalJSON(data []byte) error {
	type plain Limits
	return unmarshalMs(data, (*plain)(l), msField{name: "rateLimitedForMs", d: &l.RateLimitedFor})
}

// MarshalJSON writes Duration in ms.
func (r RateLimit) MarshalJSON() ([]byte, error) {
	type plain RateLimit
	return marshalMs(plain(r), msField{name: "durationMs", d: &r.Duration})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *RateLimit) UnmarshalJSON(data []byte) error {
	type plain RateLimit
	return unmarshalMs(data, (*plain)(r), msField{name: "durationMs", d: &r.Duration})
}

// QueueInfo counts queue's jobs per state, atomically, and reads whether it
// is paused.
// It returns an error wrapping ErrQueueNotFound for a queue that does not
// exist.
func (i *Inspector) QueueInfo(ctx context.Context, queue string) (*QueueInfo, error) {
	q, err := i.existing(ctx, queue)
	if err != nil {
		return nil, err
	}
	return i.queueInfo(ctx, q)
}

func (i *Inspector) queueInfo(ctx context.Context, q *drover.Queue) (*QueueInfo, error) {
	queue := q.Name()
	m, err := q.GetJobCounts(ctx, States...)
	if err != nil {
		return nil, err
	}
	info := &QueueInfo{Name: queue}
	for _, st := range States {
		*info.Counts.field(st) = m[st]
	}
	if err := i.readLimits(ctx, queue, info); err != nil {
		return nil, err
	}
	return info, nil
}

// readLimits reads, in one round trip, whether the queue is paused and its
// limits (Limits); Maxed compares with the active count already read.
func (i *Inspector) readLimits(ctx context.Context, queue string, info *QueueInfo) error {
	k := i.keys(queue)
	var meta *redis.SliceCmd
	var used *redis.StringCmd
	var ttl *redis.DurationCmd
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HMGet(ctx, k.Meta(), "paused", "concurrency", "max", "duration")
		used = p.Get(ctx, k.Limiter())
		ttl = p.PTTL(ctx, k.Limiter())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		// Name the key that failed: a WRONGTYPE answer alone does not say
		// which of the queue's keys holds the wrong kind of value.
		key := k.Meta()
		if meta.Err() == nil {
			key = k.Limiter()
		}
		return fmt.Errorf("read limits of queue %q (key %s): %w", queue, key, err)
	}
	v := meta.Val()
	if len(v) != 4 {
		return fmt.Errorf("read limits of queue %q: meta answered %d fields", queue, len(v))
	}
	info.Paused = v[0] != nil
	if info.Paused {
		info.PausedSince = i.pausedSince(ctx, queue)
	} else {
		i.mu.Lock()
		delete(i.paused, queue)
		i.mu.Unlock()
	}
	l := &info.Limits
	if n, ok := metaInt(v[1]); ok {
		l.Concurrency = &n
		l.Maxed = info.Counts.Active >= int64(n)
	}
	maxJobs, okMax := metaInt(v[2])
	if dur, ok := metaInt(v[3]); okMax && ok {
		l.RateLimit = &RateLimit{Max: maxJobs, Duration: time.Duration(dur) * time.Millisecond}
	}
	// No limiter key (or not a count): nothing refused.
	if n, err := used.Int64(); err == nil && ((l.RateLimit != nil && n >= int64(l.RateLimit.Max)) || n >= keys.LimiterFull) {
		l.RateLimitedFor = max(ttl.Val(), 0)
	}
	return nil
}

// pausedEventsWindow is how many of the newest events pausedSince looks
// at, at most, to find the pause.
const pausedEventsWindow = 1000

// pausedEventsPage is how many events one read of pausedSince takes: it
// stops at the first "resumed", so a queue paused after a resume pays for
// the events since the pause, not for the whole window.
const pausedEventsPage = 100

// pausedMemo is what pausedSince found for a queue, as of event last.
type pausedMemo struct {
	last  string
	since Instant
}

// pausedSince finds when a paused queue was paused (QueueInfo.PausedSince).
// The first time, it walks back from the newest event, a page at a time,
// to the last "resumed"; later, it reads only the events added since, and
// those of them that resume or pause the queue move the answer. A queue
// that keeps being paused thus costs each QueueInfo (every refresh of the
// dashboard's overview) the events written since the one before. Best
// effort: zero when not found or Redis does not answer.
func (i *Inspector) pausedSince(ctx context.Context, queue string) Instant {
	key := i.keys(queue).Events()
	i.mu.Lock()
	m, ok := i.paused[queue]
	i.mu.Unlock()
	if ok {
		m, ok = i.pausedForward(ctx, key, m)
	}
	if !ok {
		var err error
		if m, err = i.pausedBack(ctx, key); err != nil {
			return Instant{}
		}
	}
	i.mu.Lock()
	if i.paused == nil || len(i.paused) >= queueHandlesMax {
		i.paused = make(map[string]pausedMemo)
	}
	i.paused[queue] = m
	i.mu.Unlock()
	return m.since
}

// pausedBack walks back from the newest event to the last "resumed" (or
// pausedEventsWindow events, or the stream's start): the answer is the
// oldest "paused" it met after that.
func (i *Inspector) pausedBack(ctx context.Context, key string) (pausedMemo, error) {
	m := pausedMemo{last: "0-0"}
	end := "+"
	for read := 0; read < pausedEventsWindow; {
		evs, err := i.rdb.XRevRangeN(ctx, key, end, "-", int64(min(pausedEventsPage, pausedEventsWindow-read))).Result()
		if err != nil {
			return m, err
		}
		if len(evs) == 0 {
			break
		}
		if read == 0 {
			m.last = evs[0].ID
		}
		read += len(evs)
		for _, e := range evs {
			switch e.Values["event"] {
			case "resumed":
				return m, nil
			case "paused":
				if t, ok := eventTime(e.ID); ok {
					m.since = t
				}
			}
		}
		end = "(" + evs[len(evs)-1].ID
	}
	return m, nil
}

// pausedForward reads the events after m.last, oldest first, and moves the
// answer by them: a "resumed" clears it, the first "paused" after that
// sets it. Not ok when Redis does not answer or more than
// pausedEventsWindow events came since: walking back costs less then.
func (i *Inspector) pausedForward(ctx context.Context, key string, m pausedMemo) (pausedMemo, bool) {
	for read := 0; read <= pausedEventsWindow; {
		evs, err := i.rdb.XRangeN(ctx, key, "("+m.last, "+", pausedEventsPage).Result()
		if err != nil {
			return m, false
		}
		read += len(evs)
		for _, e := range evs {
			switch e.Values["event"] {
			case "resumed":
				m.since = Instant{}
			case "paused":
				if t, ok := eventTime(e.ID); ok && m.since.IsZero() {
					m.since = t
				}
			}
			m.last = e.ID
		}
		if len(evs) < pausedEventsPage {
			return m, true
		}
	}
	return m, false
}

// eventTime is the time in a stream entry's id.
func eventTime(id string) (Instant, bool) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return Instant{}, false
	}
	return Instant{time.UnixMilli(n)}, true
}

// metaInt reads an integer field of the meta hash (HMGET's answer).
func metaInt(v any) (int, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// Overview is QueueInfo for every queue under the prefix, sorted by name.
func (i *Inspector) Overview(ctx context.Context) ([]QueueInfo, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	names, err := i.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]QueueInfo, 0, len(names))
	for _, n := range names {
		q, err := i.Queue(n)
		if err != nil {
			return nil, err
		}
		info, err := i.queueInfo(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, *info)
	}
	return out, nil
}
