package drover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/outage"
)

// JobFailedError is the error WaitUntilFinished returns when the job failed
// for good: it is in the failed set, or a "failed" event for it was read.
// Match it with errors.As.
type JobFailedError struct {
	Queue string
	JobID string
	// Reason is the job's failedReason, the message of the error that
	// failed its last attempt.
	Reason string
}

func (e *JobFailedError) Error() string {
	return fmt.Sprintf("job %q in queue %q failed: %s", e.JobID, e.Queue, e.Reason)
}

// waitBlock bounds one blocking read of a queue's wait reader (waitHub), so
// how long it outlives its last waiter or its Queue's Close. waitRecheck is
// how often a waiting call looks at its job: that finds a job whose event
// the stream's cap trimmed away before it was read, and a closed Queue.
const (
	waitBlock   = 250 * time.Millisecond
	waitRecheck = time.Second
)

// waitHub is the one reader of a queue's events stream that the
// WaitUntilFinished calls on a Queue share, so many waiting calls hold one
// connection, not one each. It runs while calls wait: the first call starts
// it, and it stops within waitBlock (while Redis answers) once no call
// waits or the Queue is closed (Close waits for that). It hands each "completed" and "failed"
// event to the calls waiting for that job.
type waitHub struct {
	mu      sync.Mutex
	waiters map[string]map[chan Event]struct{} // by job id
	running bool
	pos     string        // the reader reads after this stream id
	stopped chan struct{} // closed when the running reader has stopped
	cancel  func()        // ends the running reader's read (Close)
}

// add registers a call waiting for job id, whose stream position is pos,
// and starts the reader if none runs. A running reader is at or before the
// stream's end, so it will hand over every event written from now on; a
// new one starts at pos.
func (q *Queue) addWaiter(ctx context.Context, id, pos string) chan Event {
	h := &q.waits
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = make(map[string]map[chan Event]struct{})
	}
	ch := make(chan Event, 1)
	if h.waiters[id] == nil {
		h.waiters[id] = make(map[chan Event]struct{})
	}
	h.waiters[id][ch] = struct{}{}
	if !h.running {
		h.running, h.pos, h.stopped = true, pos, make(chan struct{})
		// The reader serves later calls too: the starting call's ending
		// must not stop it; Close does.
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.cancel = cancel
		go q.readWaits(rctx, h.stopped)
	}
	return ch
}

func (q *Queue) removeWaiter(id string, ch chan Event) {
	h := &q.waits
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters[id], ch)
	if len(h.waiters[id]) == 0 {
		delete(h.waiters, id)
	}
}

// stopWaits waits until the reader, if one runs, has stopped (Close).
func (q *Queue) stopWaits() {
	h := &q.waits
	h.mu.Lock()
	running, stopped, cancel := h.running, h.stopped, h.cancel
	h.mu.Unlock()
	if running {
		cancel() // a read Redis does not answer (paused) ends now
		<-stopped
	}
}

// readWaits is the reader of the queue's waitHub; it closes stopped when it
// stops. A failed read is retried after a pause: the waiting calls see Redis
// errors in their own looks at their jobs.
func (q *Queue) readWaits(ctx context.Context, stopped chan struct{}) {
	h := &q.waits
	events := q.k.Events()
	for {
		h.mu.Lock()
		if len(h.waiters) == 0 || q.closed.Load() || ctx.Err() != nil {
			h.running = false
			h.cancel()
			h.mu.Unlock()
			close(stopped)
			return
		}
		pos := h.pos
		h.mu.Unlock()
		q.waitHook("read")
		// bounded, so that Close ends a read Redis does not answer (the
		// client may ignore ctx, see internal/bounded); an abandoned read's
		// events are dropped with the reader.
		streams, err := bounded.Call(ctx, func(ctx context.Context) ([]redis.XStream, error) {
			return q.rdb.XRead(ctx, &redis.XReadArgs{
				Streams: []string{events, pos}, Count: 1000, Block: waitBlock,
			}).Result()
		})
		if err != nil {
			if !errors.Is(err, redis.Nil) && !isUnblocked(err) {
				sleepCtx(ctx, waitBlock)
			}
			continue
		}
		h.mu.Lock()
		for _, s := range streams {
			for _, m := range s.Messages {
				h.pos = m.ID
				ev := parseEvent(m)
				if ev.Name != EventCompleted && ev.Name != EventFailed {
					continue
				}
				for ch := range h.waiters[ev.JobID] {
					select {
					case ch <- ev:
					default: // it has one already
					}
				}
			}
		}
		h.mu.Unlock()
	}
}

// WaitUntilFinished waits until the job finishes for good and returns its
// return value (JSON), or, when it failed, a *JobFailedError with its
// failedReason. It is Queue.WaitUntilFinished for j's id; see there.
func (j *Job) WaitUntilFinished(ctx context.Context) (json.RawMessage, error) {
	if j == nil {
		return nil, errNilJob
	}
	if j.queue == nil {
		return nil, ErrNoQueue
	}
	return j.queue.WaitUntilFinished(ctx, j.ID)
}

// WaitUntilFinished waits until job id finishes for good, as BullMQ's
// job.waitUntilFinished does, and returns its return value (the JSON a
// drover or Node worker stored; nil if the job has none). When the job
// failed it returns a *JobFailedError carrying the failedReason.
//
// "For good" is BullMQ 6.7.0's meaning: a failed attempt that will be
// retried writes a "waiting" or "delayed" event, not "failed", so the wait
// goes on through retries and ends at the completion or at the last
// attempt's failure. A job that is already completed or failed answers at
// once, from its hash.
//
// No finish is missed: the call takes the events stream's last id and
// registers with the Queue's events reader before it looks at the job, and
// the reader hands it the job's "completed" or "failed" event from any
// point after that id. The stream is capped (maxLenEvents), so the event can
// be trimmed away before it is read; the call therefore looks at the job
// again every second.
//
// A job removed on completion (RemoveOnComplete, RemoveOnFail) still
// yields its value or reason, which its event carries: when the job hash is
// gone, the call looks for the job's last finish event in the stream, newest
// first (at most the whole stream), even when the job finished before the
// call; BullMQ's waitUntilFinished rejects that case with "Missing key for
// job". A job that does not exist and has no finish event left in the stream
// is an error matching ErrJobNotFound.
//
// ctx bounds the wait: when it is done the call returns ctx.Err() at once.
// Closing the Queue ends waiting calls with ErrClosed within a second, as
// closing a BullMQ Queue rejects its waits. Unlike BullMQ's, the call needs
// no QueueEvents.
//
// Redis failing during the wait (an outage, a restart, a network blip, a
// failover, LOADING) does not end it: the call keeps looking at the job
// every second and the reader keeps reading, so a job that finishes during
// or after the outage still answers, as a BullMQ wait does once its
// connection is back. When ctx ends while Redis is failing, the error
// matches ctx.Err() and carries the last Redis error. A refusal that asking
// again would not change (NOAUTH or WRONGPASS after a password change,
// NOPERM from an ACL, WRONGTYPE) ends the call at once, wrapped in a
// *JobError, as does any Redis error of the first read, before the call
// waits.
//
// Cost: the calls waiting on one Queue share one reader of its events
// stream, a goroutine whose blocking read holds one connection of the
// client's pool while any call waits (and up to a quarter second after).
// Each call adds one short MULTI a second, to look at its job, and a read
// of the stream's last id when it starts. Calls on different Queue values
// have readers of their own, even for the same queue.
func (q *Queue) WaitUntilFinished(ctx context.Context, id string) (json.RawMessage, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, q.waitErr(id, fmt.Errorf("%w: empty job id", ErrJobNotFound))
	}
	if err := storedIDError(id); err != nil {
		return nil, q.waitErr(id, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	events := q.k.Events()
	// The position comes first: whatever finishes the job after it writes
	// its event after it.
	lookCtx, endLook := q.lookCtx(ctx)
	last, err := bounded.Call(lookCtx, func(ctx context.Context) ([]redis.XMessage, error) {
		return q.rdb.XRevRangeN(ctx, events, "+", "-", 1).Result()
	})
	endLook()
	if cerr := q.check(ctx); cerr != nil {
		return nil, cerr // closed while reading
	}
	if err != nil {
		return nil, q.waitErr(id, fmt.Errorf("read events: %w", err))
	}
	pos := "0-0"
	if len(last) > 0 {
		pos = last[0].ID
	}
	ch := q.addWaiter(ctx, id, pos)
	defer q.removeWaiter(id, ch)
	q.waitHook("position")
	recheck := time.NewTimer(0)
	defer recheck.Stop()
	// failing is the error of the last look at the job, while Redis fails
	// to answer it; nil once a look succeeds.
	var failing error
	for {
		select {
		case ev := <-ch:
			_, v, err := finishedByEvent(q, ev)
			return v, err
		case <-ctx.Done():
			return nil, waitEnded(ctx, failing)
		case <-recheck.C:
		}
		if err := q.check(ctx); err != nil {
			return nil, err // closed while waiting
		}
		// bounded: the client may ignore ctx's deadline while Redis does
		// not answer (see internal/bounded); ctx still ends the call.
		lookCtx, endLook := q.lookCtx(ctx)
		checked, err := bounded.Call(lookCtx, func(ctx context.Context) (jobCheck, error) { return q.finishedJob(ctx, id) })
		endLook()
		if cerr := q.check(ctx); cerr != nil {
			return nil, cerr // closed while looking
		}
		if ctx.Err() != nil {
			return nil, waitEnded(ctx, failing)
		}
		if err != nil && !outage.Is(err) {
			// Redis answered, and will answer the same to every look: a
			// refusal (NOAUTH or WRONGPASS after a password change, NOPERM
			// from an ACL, WRONGTYPE), not an outage to ride out.
			return nil, q.waitErr(id, err)
		}
		if err != nil {
			// Redis did not answer (an outage, a restart, a network
			// blip) or cannot serve for now (LOADING, a failover): the
			// job is untouched and the reader retries too, so the wait
			// rides it out and looks again, until ctx ends.
			failing = q.waitErr(id, err)
			q.waitHook("outage")
			recheck.Reset(waitRecheck)
			continue
		}
		failing = nil
		if done, v, err := checked.result(q, id); done {
			return v, err
		}
		q.waitHook("checked")
		recheck.Reset(waitRecheck)
	}
}

// lookCtx is ctx, also ended by Close, for a wait's reads: bounded.Call
// abandons them when either ends, even when Redis does not answer.
func (q *Queue) lookCtx(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(q.life, cancel)
	return c, func() { stop(); cancel() }
}

// waitEnded is a wait's error when its ctx ended: ctx's own error, joined
// with the Redis error that kept it from looking at the job, if Redis was
// failing then.
func waitEnded(ctx context.Context, failing error) error {
	if failing == nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w (Redis was failing: %w)", ctx.Err(), failing)
}

// jobCheck is what finishedJob saw of a job.
type jobCheck struct {
	missing    bool
	completed  bool
	failed     bool
	value      string
	reason     string
	foundEvent *Event // for a missing job: its last finish event
}

// result turns a check into the call's answer; done is false while the job
// is unfinished.
func (c jobCheck) result(q *Queue, id string) (done bool, v json.RawMessage, _ error) {
	switch {
	case c.foundEvent != nil:
		return finishedByEvent(q, *c.foundEvent)
	case c.missing:
		return true, nil, q.waitErr(id, ErrJobNotFound)
	case c.completed:
		return true, rawValue(c.value), nil
	case c.failed:
		return true, nil, &JobFailedError{Queue: q.name, JobID: id, Reason: c.reason}
	}
	return false, nil, nil
}

// finishedJob reads, in one transaction, whether job id exists and is
// completed or failed (BullMQ's isFinished), with its returnvalue and
// failedReason. When it does not exist, the job may have finished and been
// removed (before the call, or since): the stream is searched for its event.
func (q *Queue) finishedJob(ctx context.Context, id string) (jobCheck, error) {
	var exists *redis.IntCmd
	var inCompleted, inFailed *redis.FloatCmd
	var fields *redis.SliceCmd
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, q.k.Job(id))
		inCompleted = p.ZScore(ctx, q.k.Completed(), id)
		inFailed = p.ZScore(ctx, q.k.Failed(), id)
		fields = p.HMGet(ctx, q.k.Job(id), "returnvalue", "failedReason")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return jobCheck{}, fmt.Errorf("read job: %w", err)
	}
	// Exec reports the first failed command only, and a member missing from
	// a set is one (redis.Nil): look at each.
	for _, e := range []error{exists.Err(), inCompleted.Err(), inFailed.Err(), fields.Err()} {
		if e != nil && !errors.Is(e, redis.Nil) {
			return jobCheck{}, fmt.Errorf("read job: %w", e)
		}
	}
	var c jobCheck
	if exists.Val() == 0 {
		c.missing = true
		c.foundEvent, err = q.lastFinishEvent(ctx, id)
		return c, err
	}
	vals := fields.Val()
	if len(vals) == 2 {
		c.value, _ = vals[0].(string)
		c.reason, _ = vals[1].(string)
	}
	c.completed = inCompleted.Err() == nil
	c.failed = !c.completed && inFailed.Err() == nil
	return c, nil
}

// lastFinishEvent looks through the events stream, newest first, for job
// id's last "completed" or "failed" event. It stops at the job's "added"
// event: what comes before it belongs to an earlier job with the same id.
// It reads at most the whole stream, which maxLenEvents caps (10000 by
// default), in pages.
func (q *Queue) lastFinishEvent(ctx context.Context, id string) (*Event, error) {
	const page = 500
	end := "+"
	for {
		ms, err := q.rdb.XRevRangeN(ctx, q.k.Events(), end, "-", page).Result()
		if err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		for _, m := range ms {
			if m.Values["jobId"] != id {
				continue
			}
			switch ev := parseEvent(m); ev.Name {
			case EventCompleted, EventFailed:
				return &ev, nil
			case EventAdded:
				return nil, nil
			}
		}
		if len(ms) < page {
			return nil, nil
		}
		end = "(" + ms[len(ms)-1].ID
	}
}

// finishedByEvent answers from a "completed" or "failed" event; done is
// false for other events.
func finishedByEvent(q *Queue, ev Event) (done bool, v json.RawMessage, _ error) {
	switch ev.Name {
	case EventCompleted:
		return true, rawValue(ev.Fields["returnvalue"]), nil
	case EventFailed:
		return true, nil, &JobFailedError{Queue: q.name, JobID: ev.JobID, Reason: ev.FailedReason}
	}
	return false, nil, nil
}

// rawValue is a stored returnvalue as JSON; nil when there is none or it is
// not JSON (BullMQ's getReturnValue then gives undefined too).
func rawValue(s string) json.RawMessage {
	v, _ := jobcodec.RawJSON(s)
	return v
}

// waitHook runs the test hook, if any, at a stage of WaitUntilFinished:
// "position" once the stream position is taken and the call registered,
// "checked" after each look at the job that found it unfinished, "outage"
// after each look Redis did not answer, and in the
// reader, "read" before each read of the stream.
func (q *Queue) waitHook(stage string) {
	if q.onWait != nil {
		q.onWait(stage)
	}
}

func (q *Queue) waitErr(id string, err error) error {
	return &JobError{Queue: q.name, JobID: id, Op: "wait for", Err: err}
}
