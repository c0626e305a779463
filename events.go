package drover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/outage"
)

// EventName is the name of a queue event, as BullMQ writes it.
type EventName string

// The events drover and BullMQ write to a queue's events stream.
const (
	EventAdded            EventName = "added"
	EventWaiting          EventName = "waiting"
	EventActive           EventName = "active"
	EventProgress         EventName = "progress"
	EventCompleted        EventName = "completed"
	EventFailed           EventName = "failed"
	EventDelayed          EventName = "delayed"
	EventDuplicated       EventName = "duplicated"
	EventDeduplicated     EventName = "deduplicated"
	EventPaused           EventName = "paused"
	EventResumed          EventName = "resumed"
	EventDrained          EventName = "drained"
	EventRemoved          EventName = "removed"
	EventStalled          EventName = "stalled"
	EventRetriesExhausted EventName = "retries-exhausted"
	EventCleaned          EventName = "cleaned"
	EventWaitingChildren  EventName = "waiting-children"
)

// Event is one entry of a queue's events stream. Only the fields that its
// Name carries are set; Fields holds every raw field.
type Event struct {
	// ID is the stream entry id; pass it as LastEventID to resume after it.
	ID    string
	Name  EventName
	JobID string
	// Prev is the state the job left (waiting, active, delayed, ...).
	Prev string
	// JobName is set on added.
	JobName string
	// ReturnValue (JSON) is set on completed.
	ReturnValue json.RawMessage
	// FailedReason is set on failed.
	FailedReason string
	// Data (JSON) is set on progress.
	Data json.RawMessage
	// DelayUntil is when a delayed job is due (delayed).
	DelayUntil time.Time
	// AttemptsMade is set on retries-exhausted.
	AttemptsMade int
	// Count is set on cleaned.
	Count int
	// DeduplicationID and DeduplicatedJobID are set on deduplicated.
	DeduplicationID   string
	DeduplicatedJobID string
	Fields            map[string]string
}

// Time is when Redis recorded the event (from the stream id).
func (e Event) Time() time.Time {
	msPart, _, _ := strings.Cut(e.ID, "-")
	ms, err := strconv.ParseInt(msPart, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// parseEvent turns a stream entry into an Event.
func parseEvent(m redis.XMessage) Event {
	ev := Event{ID: m.ID, Fields: make(map[string]string, len(m.Values))}
	for k, v := range m.Values {
		s, _ := v.(string)
		ev.Fields[k] = s
	}
	f := ev.Fields
	ev.Name = EventName(f["event"])
	ev.JobID = f["jobId"]
	ev.Prev = f["prev"]
	ev.JobName = f["name"]
	ev.FailedReason = f["failedReason"]
	ev.DeduplicationID = f["deduplicationId"]
	ev.DeduplicatedJobID = f["deduplicatedJobId"]
	if rv, ok := f["returnvalue"]; ok {
		ev.ReturnValue, _ = jobcodec.RawJSON(rv)
	}
	if d, ok := f["data"]; ok {
		ev.Data, _ = jobcodec.RawJSON(d)
	}
	if d, ok := f["delay"]; ok {
		if ms, err := strconv.ParseFloat(d, 64); err == nil {
			ev.DelayUntil = time.UnixMilli(int64(ms))
		}
	}
	if a, ok := f["attemptsMade"]; ok {
		ev.AttemptsMade, _ = strconv.Atoi(a)
	}
	if c, ok := f["count"]; ok {
		ev.Count, _ = strconv.Atoi(c)
	}
	return ev
}

// QueueEventsOptions configure a QueueEvents. Nil means defaults.
type QueueEventsOptions struct {
	// Prefix of every key. Defaults to PrefixDefault ("bull").
	Prefix string
	// LastEventID is the stream id to read after: "<ms>-<seq>" (an
	// Event's ID) or "<ms>". Defaults to "$": only events written after
	// the first read. "0" reads the whole stream. Anything else is refused
	// with ErrInvalidOption.
	LastEventID string
	// BlockTimeout is how long one read blocks; it bounds how late Next
	// notices a cancelled ctx. Defaults to 1s.
	BlockTimeout time.Duration
	// Logger receives a warning when Run's reads fail for a Redis outage
	// (and a line when they work again). Defaults to warnings and errors, as
	// text, on stderr; slog.New(slog.DiscardHandler) silences it.
	Logger *slog.Logger
}

// QueueEvents reads a queue's events stream (XREAD BLOCK), in order.
// It is not safe for concurrent use: one reader per QueueEvents.
type QueueEvents struct {
	rdb    redis.UniversalClient
	name   string
	key    string
	lastID string
	block  time.Duration
	buf    []Event
	log    *slog.Logger
}

// NewQueueEvents returns a reader of queue name's events. It does no I/O.
func NewQueueEvents(rdb redis.UniversalClient, name string, opts *QueueEventsOptions) (*QueueEvents, error) {
	var o QueueEventsOptions
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = PrefixDefault
	}
	if o.LastEventID == "" {
		o.LastEventID = "$"
	}
	if o.BlockTimeout == 0 {
		o.BlockTimeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = defaultLogger()
	}
	if o.BlockTimeout < time.Millisecond {
		return nil, optionError("QueueEventsOptions.BlockTimeout must be at least 1ms, got %s", o.BlockTimeout)
	}
	if !keys.StreamReadID(o.LastEventID) {
		// Else every read failed with Redis's "ERR Invalid stream ID".
		return nil, optionError("QueueEventsOptions.LastEventID must be \"$\", <ms> or <ms>-<seq>, got %q", o.LastEventID)
	}
	if rdb == nil {
		return nil, errors.New("drover: NewQueueEvents needs a Redis client, got nil")
	}
	if err := checkNames(rdb, o.Prefix, name); err != nil {
		return nil, err
	}
	return &QueueEvents{rdb: rdb, name: name, key: keys.New(o.Prefix, name).Events(), lastID: o.LastEventID,
		block: o.BlockTimeout, log: o.Logger}, nil
}

// LastID is the id of the last event returned ("$" before the first).
func (qe *QueueEvents) LastID() string {
	if qe == nil {
		return ""
	}
	return qe.lastID
}

// Next returns the next event, blocking until one arrives or ctx is done.
func (qe *QueueEvents) Next(ctx context.Context) (Event, error) {
	if qe == nil || qe.rdb == nil {
		return Event{}, errZeroValue("QueueEvents", "NewQueueEvents")
	}
	if ctx == nil {
		return Event{}, errNilContext
	}
	for len(qe.buf) == 0 {
		if err := ctx.Err(); err != nil {
			return Event{}, err
		}
		if qe.lastID == "$" {
			// Pin "$" to a concrete id so no event slips between reads.
			last, err := bounded.Call(ctx, func(ctx context.Context) ([]redis.XMessage, error) {
				return qe.rdb.XRevRangeN(ctx, qe.key, "+", "-", 1).Result()
			})
			if err != nil {
				return Event{}, fmt.Errorf("read events %s: %w", qe.key, err)
			}
			qe.lastID = "0-0"
			if len(last) > 0 {
				qe.lastID = last[0].ID
			}
		}
		// bounded: a client without ContextTimeoutEnabled ends a blocking
		// read only when the block or its read timeout runs out (10 s and
		// more when Redis is paused), not when ctx ends. An abandoned read's
		// events are dropped; lastID has not moved, so none is lost.
		lastID := qe.lastID
		streams, err := bounded.Call(ctx, func(ctx context.Context) ([]redis.XStream, error) {
			return qe.rdb.XRead(ctx, &redis.XReadArgs{
				Streams: []string{qe.key, lastID}, Count: 500, Block: qe.block,
			}).Result()
		})
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return Event{}, ctx.Err()
			}
			if isUnblocked(err) {
				continue // a failover ended the block: read again from the new master
			}
			return Event{}, fmt.Errorf("read events %s: %w", qe.key, err)
		}
		for _, s := range streams {
			for _, m := range s.Messages {
				qe.buf = append(qe.buf, parseEvent(m))
			}
		}
	}
	ev := qe.buf[0]
	qe.buf = qe.buf[1:]
	qe.lastID = ev.ID
	return ev, nil
}

// Run calls fn for every event until ctx is done or fn returns an error.
// It returns nil when ctx ends. A Redis outage (a lost connection, a
// restart, a failover) does not end it, as it does not end a BullMQ
// QueueEvents: Run reads again, after a pause growing from 100 ms to 3 s,
// from after the last event it handed to fn, so no event is skipped or
// repeated (unless the stream was trimmed past it meanwhile). Other errors
// (say the key is not a stream) end it.
func (qe *QueueEvents) Run(ctx context.Context, fn func(Event) error) error {
	if qe == nil || qe.rdb == nil {
		return errZeroValue("QueueEvents", "NewQueueEvents")
	}
	if ctx == nil {
		return errNilContext
	}
	if fn == nil {
		// Refused before reading: the first event would be read past,
		// then lost to a nil call.
		return optionError("QueueEvents.Run needs a function to call, got nil")
	}
	failures := 0
	for {
		ev, err := qe.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !outage.Is(err) {
				return err
			}
			failures++
			if failures == 1 {
				qe.log.WarnContext(ctx, "reading queue events failed; retrying until Redis answers",
					slog.String(logkey.Queue, qe.name), slog.Any(logkey.Error, err))
			}
			if !sleepCtx(ctx, retryDelay(failures)) {
				return nil
			}
			continue
		}
		if failures > 0 {
			qe.log.InfoContext(ctx, "reading queue events again", slog.String(logkey.Queue, qe.name),
				slog.Int(logkey.Attempt, failures+1))
			failures = 0
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}

// TrimEvents trims the queue's events stream to about maxLen entries, once,
// as BullMQ's queue.trimEvents does (Redis's approximate trim: it removes
// whole stream nodes only, so a short stream may keep more). The cap later
// events are trimmed to stays the queue's opts.maxLenEvents (written by a
// Node Queue from streams.events.maxLen, 10,000 by default, and by
// SetEventsMaxLen); TrimEvents does not change it.
func (q *Queue) TrimEvents(ctx context.Context, maxLen int64) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if maxLen < 0 {
		return optionError("TrimEvents maxLen must not be negative, got %d", maxLen)
	}
	if err := q.writes().Do(ctx, "xtrim", q.k.Events(), "maxlen", "~", maxLen).Err(); err != nil {
		return fmt.Errorf("trim events of queue %q: %w", q.name, err)
	}
	return nil
}

// SetEventsMaxLen sets the cap the queue's events stream is trimmed to as
// events are written (about maxLen entries, Redis's approximate trim), for
// every producer and worker, Node's included: the meta field
// opts.maxLenEvents that a Node Queue writes from its streams.events.maxLen
// option when it starts. It applies to events written from now on; call
// TrimEvents to trim the stream now. maxLen must be positive.
func (q *Queue) SetEventsMaxLen(ctx context.Context, maxLen int64) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	if maxLen <= 0 {
		return optionError("SetEventsMaxLen maxLen must be positive, got %d", maxLen)
	}
	if err := q.writes().Do(ctx, "hset", q.k.Meta(), "opts.maxLenEvents", maxLen).Err(); err != nil {
		return fmt.Errorf("set the events cap of queue %q: %w", q.name, err)
	}
	return nil
}
