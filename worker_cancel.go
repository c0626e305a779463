package drover

// The worker's side of Queue.CancelJob and of timeouts: hearing cancel
// requests, and ending an attempt early exactly once.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// attemptReturned marks a runningJob whose processor returned before anyone
// stopped it; a later stop is ignored.
var attemptReturned = &stopError{}

// stop ends the attempt early with e: it cancels the processor's context
// with cause e, unless the processor has returned or the attempt was
// already stopped. It reports whether e ended the attempt.
func (rj *runningJob) stop(e *stopError) bool {
	if !rj.stopped.CompareAndSwap(nil, e) {
		return false
	}
	rj.cancel(e)
	return true
}

// returned records that the processor returned, and reports the stop that
// came first, if any (then the attempt ends with it, whatever the
// processor returned).
func (rj *runningJob) returned() *stopError {
	if rj.stopped.CompareAndSwap(nil, attemptReturned) {
		return nil
	}
	return rj.stopped.Load()
}

// kindOptions are the options job's kind was registered with in the
// worker's Kinds, nil for none.
func (w *Worker) kindOptions(job *Job) *KindOptions {
	if w.kinds == nil {
		return nil
	}
	return w.kinds.kindOptions(job.Name)
}

// timeout is the attempt's time limit and where it comes from; 0 = none.
func (w *Worker) timeout(rj *runningJob) (time.Duration, string) {
	if ms := rj.stored.timeoutMs; ms > 0 {
		return time.Duration(ms) * time.Millisecond, "job timeout"
	}
	if ko := w.kindOptions(rj.job); ko != nil && ko.Timeout > 0 {
		return ko.Timeout, "KindOptions.Timeout"
	}
	if d := w.opts.JobTimeout; d > 0 {
		return d, "WorkerOptions.JobTimeout"
	}
	return 0, ""
}

// canceller hears the cancel requests for this worker's jobs on its own
// channel (keys.Queue.CancelChannel; cancelJob.lua publishes there) and
// stops the attempt whose lock token a request names. Subscribed by Start,
// run by one goroutine the Worker owns until Close stops the background
// goroutines. go-redis resubscribes after a reconnect; a request published
// while the connection is down is lost, and CancelJob says so
// (ErrCancelNotDelivered). A connection that went half-open is found by
// run's probes and replaced; the requests Redis counted it for are read
// from the request hash (kept), which run reads at every probe.
type canceller struct {
	rdb     redis.UniversalClient
	channel string
	kept    string // keys.Queue.CancelRequests: the requests cancelJob.lua published, for a minute
	jobs    *inflight
	log     *slog.Logger
	ps      *redis.PubSub // nil when the subscription failed at Start
}

// subscribe subscribes and waits for Redis to confirm, so a CancelJob made
// once Start has returned is heard. When Redis does not answer, the
// subscription is kept: go-redis makes it as soon as Redis answers. When
// Redis refuses it (an ACL without @pubsub or this channel), that is
// logged and the worker reads its cancel requests from their hash every
// cancelProbeEvery instead (run).
func (c *canceller) subscribe(ctx context.Context) {
	ps := c.rdb.Subscribe(ctx, c.channel)
	if _, err := ps.Receive(ctx); err != nil {
		var refused redis.Error
		if errors.As(err, &refused) {
			c.log.WarnContext(ctx, "Redis refused the subscription to cancel requests: the worker reads them from Redis every 5 s instead",
				slog.String(logkey.Channel, c.channel), slog.Any(logkey.Error, err))
			_ = ps.Close()
			return
		}
		c.log.WarnContext(ctx, "cannot subscribe to cancel requests yet; retrying in the background",
			slog.String(logkey.Channel, c.channel), slog.Any(logkey.Error, err))
	}
	c.ps = ps
}

// cancelProbeEvery is how often the canceller checks that its subscription
// still hears its channel (see run).
const cancelProbeEvery = 5 * time.Second

// cancelProbe is the payload of the canceller's own probe messages; no
// cancel request looks like it (a request starts with a lock token).
const cancelProbe = "drover-probe"

// run handles requests until ctx ends, then unsubscribes.
//
// Every cancelProbeEvery it publishes a probe to its own channel (on a
// connection of the client's pool, not the subscription's) and checks,
// the next time, that it heard the previous one. A subscription whose
// connection went half-open (a firewall or NAT forgot it: no reset reached
// either side) hears nothing more, while Redis still counts it as a
// subscriber, so CancelJob would report requests delivered that no one
// hears, and go-redis never notices (its pings only write). When a probe
// that Redis took went unheard, run drops that connection and subscribes
// anew. Requests published to the dead connection are not lost: the script
// keeps each in the worker's request hash for a minute, and run reads it at
// every probe (catchUp), so such a request stops its attempt within about a
// probe interval of the worker's next good read.
func (c *canceller) run(ctx context.Context) {
	if c.ps == nil {
		c.poll(ctx)
		return
	}
	defer func() { _ = c.ps.Close() }()
	msgs := c.ps.Channel()
	tick := time.NewTicker(cancelProbeEvery)
	defer tick.Stop()
	var sent, heard bool // a probe Redis took is outstanding; it arrived
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if sent && !heard {
				c.log.WarnContext(ctx, "cancel requests are not heard (the subscription's connection is dead); subscribing again",
					slog.String(logkey.Channel, c.channel))
				_ = c.ps.Close()
				c.ps = c.rdb.Subscribe(ctx, c.channel)
				msgs = c.ps.Channel()
			}
			sent, heard = c.probe(ctx), false
			c.catchUp(ctx)
		case msg, ok := <-msgs:
			if !ok {
				return
			}
			if msg.Payload == cancelProbe {
				heard = true
				continue
			}
			c.handle(ctx, msg.Payload)
		}
	}
}

// poll reads the kept cancel requests every cancelProbeEvery until ctx
// ends: the worker's only way to hear them when Redis refused its
// subscription.
func (c *canceller) poll(ctx context.Context) {
	tick := time.NewTicker(cancelProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.catchUp(ctx)
		}
	}
}

// probe publishes a probe to the canceller's channel and reports whether
// Redis took it with a subscriber listening (with none, go-redis has not
// subscribed again yet after a reconnect: nothing to judge).
func (c *canceller) probe(ctx context.Context) bool {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	n, err := bounded.Call(pctx, func(ctx context.Context) (int64, error) {
		return c.rdb.Publish(ctx, c.channel, cancelProbe).Result()
	})
	return err == nil && n > 0
}

// catchUp reads the cancel requests kept for this worker (one HGETALL; the
// hash is absent but for a minute after a request) and stops the attempts
// they name that are still running: those whose message the subscription
// missed. It then deletes what it read. A request the subscription
// delivered is found again here and ignored (its attempt is stopped or
// ended); one for an attempt not started yet is left to its message.
func (c *canceller) catchUp(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	kept, err := bounded.Call(rctx, func(ctx context.Context) (map[string]string, error) {
		return c.rdb.HGetAll(ctx, c.kept).Result()
	})
	if err != nil || len(kept) == 0 {
		return
	}
	fields := make([]string, 0, len(kept))
	for token, payload := range kept {
		fields = append(fields, token)
		m, ok := scripts.ParseCancelMessage(payload)
		if !ok || m.Token != token {
			continue
		}
		if job, stopped := c.jobs.stopRunning(m.Token, cancelledError(m)); stopped {
			c.log.InfoContext(ctx, "job cancelled (a request the subscription missed)",
				slog.String(logkey.JobID, job.ID), slog.String(logkey.Reason, m.Reason))
		}
	}
	_, _ = bounded.Call(rctx, func(ctx context.Context) (int64, error) {
		return c.rdb.HDel(ctx, c.kept, fields...).Result()
	})
}

func (c *canceller) handle(ctx context.Context, payload string) {
	m, ok := scripts.ParseCancelMessage(payload)
	if !ok {
		c.log.WarnContext(ctx, "malformed cancel request ignored", slog.String(logkey.Channel, c.channel))
		return
	}
	job, stopped := c.jobs.stopByToken(m.Token, cancelledError(m), time.Now())
	switch {
	case stopped:
		c.log.InfoContext(ctx, "job cancelled", slog.String(logkey.JobID, job.ID), slog.String(logkey.Reason, m.Reason))
	case job != nil:
		c.log.DebugContext(ctx, "cancel request came after the attempt ended", slog.String(logkey.JobID, job.ID))
	default:
		c.log.DebugContext(ctx, "cancel request kept for an attempt not started yet (or already ended)", slog.String(logkey.Token, m.Token))
	}
}
