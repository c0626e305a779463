package drover

// The fetch side of the worker: taking jobs while slots are free, and
// waiting on the marker (no polling) when there are none.

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

func (w *Worker) fetchArgs(count int) scripts.FetchArgs {
	a := scripts.FetchArgs{
		Now:          w.q.nowMs(),
		Count:        count,
		Token:        w.id + ":" + strconv.FormatUint(w.callSeq.Add(1), 36),
		LockDuration: w.opts.LockDuration.Milliseconds(),
		WorkerName:   w.opts.Name,
	}
	if l := w.opts.Limiter; l != nil {
		a.LimitMax, a.LimitWindow = l.Max, l.Duration.Milliseconds()
	}
	return a
}

// rateLimitWait is how long the worker must still not fetch because of the
// limiter (0: it may fetch), at most WorkerOptions.MaxRateLimitWait, so a
// key removed early costs at most that.
func (w *Worker) rateLimitWait() time.Duration {
	until := w.limitedUntil.Load()
	if until == 0 {
		return 0
	}
	return min(max(time.Duration(until-w.q.nowMs())*time.Millisecond, 0), w.opts.MaxRateLimitWait)
}

// noteRateLimit remembers until when the rate limiter refuses activations.
func (w *Worker) noteRateLimit(ttlMs int64) {
	if ttlMs > 0 {
		w.limitedUntil.Store(w.q.nowMs() + ttlMs)
	}
}

func (w *Worker) fetchBatch() int { return min(w.opts.Concurrency, maxFetch) }

// fetchLoop takes jobs while slots are free; when the queue has nothing
// ready it blocks on the marker until a producer, a resume, a stalled
// recovery or the earliest delayed job wakes it.
func (w *Worker) fetchLoop() {
	defer close(w.fetchDone)
	ctx := w.fetchCtx
	failures := 0
	for {
		if held := w.gate.held(); held != nil {
			select {
			case <-held:
			case <-ctx.Done():
				return
			}
		}
		if w.clocker != nil && !w.clocker.measured.Load() && !w.clocker.measure(ctx) {
			// Started while Redis was down: no fetch by an unmeasured clock.
			if ctx.Err() != nil {
				return
			}
			failures++
			if !sleepCtx(ctx, retryDelay(failures)) {
				return
			}
			continue
		}
		if !w.parkWhilePaused(ctx) {
			return
		}
		n := w.jobs.takeWait(ctx, w.fetchBatch())
		if n == 0 {
			return
		}
		if w.closing.Load() {
			// Close has begun but not stopped the fetcher yet: a slot a
			// finished job freed since must stay empty (Close's promise:
			// no job is taken once it began).
			w.jobs.giveBack(n)
			return
		}
		if !w.pauser.enter() {
			// Paused since the check above: park at the top.
			w.jobs.giveBack(n)
			continue
		}
		// The fetch holds the gate a write that moves a job back for
		// ErrRateLimited takes alone (see writeBatch): it sees that
		// write's limit, or reaches Redis before its move back.
		w.limitGate.RLock()
		if until := w.limitedUntil.Load(); until != 0 {
			if d := w.rateLimitWait(); d > 0 {
				w.limitGate.RUnlock()
				// A limiter window (or a processor's ErrRateLimited) is on:
				// no fetch before it ends or MaxRateLimitWait passed, as
				// BullMQ's waitForRateLimit. Then the next fetch asks Redis
				// again, which notes a limit that still stands.
				w.jobs.giveBack(n)
				w.pauser.leave()
				if !sleepCtx(ctx, d) {
					return
				}
				w.limitedUntil.CompareAndSwap(until, 0)
				continue
			}
		}
		args := w.fetchArgs(n)
		f, err := loopCall(w, ctx, func(ctx context.Context) (scripts.Fetch, error) {
			return scripts.MoveToActive(ctx, w.q.rdb, w.q.k, args)
		})
		settled := false
		if err != nil && ctx.Err() == nil {
			w.log.WarnContext(ctx, msgFetchFailed, slog.Any(logkey.Error, err))
			if mayHaveRun(err) {
				// The call may have taken jobs: learn which instead of
				// leaving them in active for the stalled checker.
				var st scripts.Settled
				if st, err = w.settleFetch(ctx, args.Token); err == nil {
					f, settled = scripts.Fetch{Jobs: st.Jobs}, true
				}
			}
		}
		w.limitGate.RUnlock()
		if err != nil {
			w.jobs.giveBack(n)
			w.pauser.leave()
			if ctx.Err() != nil {
				return
			}
			failures++
			if !sleepCtx(ctx, retryDelay(failures)) {
				return
			}
			continue
		}
		failures = 0
		next := w.prepare(f.Jobs, args.Token)
		w.jobs.start(n, next)
		w.keeper.arrived(next)
		w.pauser.leave() // the jobs are in flight: a Pause waits for them
		w.launch(next)
		w.noteRateLimit(f.RateLimitTTL)
		if len(f.Jobs) == n || settled {
			continue // a settled call says nothing of what else is ready
		}
		w.noteDelayed(f.NextDelayed)
		// The queue is drained: let the jobs just handed over start before
		// this goroutine prepares its wait. Otherwise a job handed to an
		// idle runner waits for this goroutine to park (the wait's write to
		// Redis included), or for an idle thread to wake and steal it: tens
		// of microseconds on an idle worker's pickup latency.
		if len(f.Jobs) > 0 {
			runtime.Gosched()
		}
		w.runners.reap()
		w.waitForWork(ctx)
	}
}

// settleFetch learns which jobs the moveToActive call with lock token base
// token took, whose reply was lost (scripts.SettleCall), retrying until
// Redis answers or ctx ends.
func (w *Worker) settleFetch(ctx context.Context, token string) (scripts.Settled, error) {
	for attempt := 1; ; attempt++ {
		st, err := loopCall(w, ctx, func(ctx context.Context) (scripts.Settled, error) {
			return scripts.SettleCall(ctx, w.q.rdb, w.q.k, token, settledCallTTL, nil)
		})
		if err == nil {
			w.log.InfoContext(ctx, "settled a call whose reply was lost", slog.Int(logkey.Jobs, len(st.Jobs)), slog.String(logkey.Token, token))
			return st, nil
		}
		if ctx.Err() != nil {
			return st, err
		}
		w.log.WarnContext(ctx, msgSettleFailed, slog.Int(logkey.Attempt, attempt), slog.Any(logkey.Error, err))
		if !sleepCtx(ctx, retryDelay(attempt)) {
			return st, ctx.Err()
		}
	}
}

// noteDelayed remembers the earliest delayed job's due time from a score.
func (w *Worker) noteDelayed(score string) {
	if due, ok := keys.ParseDueOfScore(score); ok {
		w.setNextDelayed(due)
	}
}

func (w *Worker) setNextDelayed(ms int64) {
	for {
		cur := w.nextDelayed.Load()
		if cur != 0 && cur <= ms {
			return
		}
		if w.nextDelayed.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// waitForWork blocks on the marker (and the worker's wake key) for at most
// DrainDelay, or until the earliest known delayed job is due. Redis checks
// blocking timeouts only every 100 ms, so a local timer wakes the call at
// the due time precisely.
func (w *Worker) waitForWork(ctx context.Context) {
	wait := w.opts.DrainDelay
	if until := w.limitedUntil.Load(); until != 0 {
		// Rate limited: markers do not help before the window ends. At
		// most MaxRateLimitWait, as at the top of fetchLoop (BullMQ's
		// maximumRateLimitDelay): a limit lifted early must not hold the
		// worker for the rest of it.
		w.limitedUntil.Store(0)
		if d := time.Duration(until-w.q.nowMs()) * time.Millisecond; d > 0 {
			sleepCtx(ctx, min(d, w.opts.MaxRateLimitWait))
		}
		return
	}
	if due := w.nextDelayed.Load(); due != 0 {
		d := time.Duration(due-w.q.nowMs()) * time.Millisecond
		if d <= 0 {
			w.nextDelayed.Store(0)
			return
		}
		if d < wait {
			wait = d
			w.armWake(d)
		}
	}
	// Marked before the pause check, which Pause reads the other way round
	// (interruptWait): either Pause ends this wait, or the wait does not
	// begin.
	w.waiting.Store(true)
	defer w.waiting.Store(false)
	if w.IsPaused() {
		w.disarmWake()
		return
	}
	// BZPOPMIN through go-redis takes whole seconds; sub-second waits are
	// ended by the wake timer armed above.
	block := max(time.Second, (wait+time.Second-1)/time.Second*time.Second)
	// On the named connection when it is open, so the worker is seen
	// blocked (idle) exactly while it waits, as a Node worker is.
	var res *redis.ZWithKey
	used, err := w.presence.block(ctx, func(c *redis.Client) error {
		var err error
		res, err = c.BZPopMin(ctx, block, w.q.k.Marker(), w.q.k.WorkerWake(w.id)).Result()
		return err
	})
	if !used {
		res, err = w.q.rdb.BZPopMin(ctx, block, w.q.k.Marker(), w.q.k.WorkerWake(w.id)).Result()
	}
	w.disarmWake()
	if err != nil {
		if errors.Is(err, redis.Nil) || errors.Is(err, errWaitInterrupted) || ctx.Err() != nil {
			// Timed out, or ended by Pause or Close.
			w.expireDelayedHint()
			return
		}
		if isUnblocked(err) {
			// A failover made the node a replica and Redis ended the block:
			// fetch again now; the client follows the new master.
			w.log.InfoContext(ctx, "wait for jobs ended by a failover", slog.Any(logkey.Error, err))
			return
		}
		w.log.WarnContext(ctx, msgWaitFailed, slog.Any(logkey.Error, err))
		sleepCtx(ctx, time.Second)
		return
	}
	if res.Member == "1" && res.Key == w.q.k.Marker() {
		w.setNextDelayed(int64(res.Score))
	}
	w.expireDelayedHint()
}

// expireDelayedHint forgets the delayed due time once it has passed: the
// next fetch promotes that job and reports the next one.
func (w *Worker) expireDelayedHint() {
	if due := w.nextDelayed.Load(); due != 0 && due <= w.q.nowMs() {
		w.nextDelayed.CompareAndSwap(due, 0)
	}
}

func (w *Worker) armWake(d time.Duration) {
	w.wakeMu.Lock()
	defer w.wakeMu.Unlock()
	if w.wakeTimer != nil {
		w.wakeTimer.Stop()
	}
	w.wakeTimer = time.AfterFunc(d, w.wake)
}

func (w *Worker) disarmWake() {
	w.wakeMu.Lock()
	defer w.wakeMu.Unlock()
	if w.wakeTimer != nil {
		w.wakeTimer.Stop()
		w.wakeTimer = nil
	}
}

// wakeTimeout bounds the write that wakes the fetcher.
const wakeTimeout = 2 * time.Second

// wake makes the fetcher's blocking call return now.
func (w *Worker) wake() { w.wakeWithin(context.Background()) }

// wakeWithin is wake bounded by ctx as well as wakeTimeout. It writes
// nothing once Close shut wake-ups (see wakeGate).
func (w *Worker) wakeWithin(ctx context.Context) {
	w.wakeGate.RLock()
	defer w.wakeGate.RUnlock()
	if w.wakeShut {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, wakeTimeout)
	defer cancel()
	// bounded: the client may ignore ctx (see internal/bounded), and Close
	// must not wait 15 s for a Redis that does not answer.
	_, _ = bounded.Call(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, writeWake(ctx, w.q.rdb, w.q.k.WorkerWake(w.id), w.keeper.wakeLife)
	})
}

// wakeLifetime is how long a worker's wake key lives after a wake-up or a
// lock renewal (2 × LockDuration, at least wakeLifetimeMin). The key is
// popped as soon as the fetcher waits, so only a wake-up written while the
// worker is busy stays: the lock renewals (every LockDuration/4, in the
// same script call) keep it alive then. A worker killed without Close
// leaves its key for this long, not forever.
func wakeLifetime(lockDuration time.Duration) time.Duration {
	return max(2*lockDuration, wakeLifetimeMin)
}

// wakeLifetimeMin: an idle or paused worker renews nothing, and a wake-up
// its fetcher reads late (under load) must still be there.
const wakeLifetimeMin = 5 * time.Second

// writeWake writes a wake-up to key, with its lifetime, in one round trip.
func writeWake(ctx context.Context, rdb redis.Cmdable, key string, life time.Duration) error {
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, key, redis.Z{Score: 0, Member: "w"})
		p.PExpire(ctx, key, life)
		return nil
	})
	return err
}

// shutWakes waits for the wake-ups being written (each within
// wakeTimeout) and makes later ones write nothing, so that Close's delete
// of the wake key comes after every write of it.
func (w *Worker) shutWakes() {
	w.wakeGate.Lock()
	w.wakeShut = true
	w.wakeGate.Unlock()
}

// fetchedAt sets rec's processedOn to the one the take stored (the hash
// was read before the take wrote it), so the processor's Job and Node's read
// of the job agree, and returns it: the attempt's start. A hash read after
// the take holds it; without one there (undecodable), the queue's clock.
func (w *Worker) fetchedAt(rec *jobcodec.Record, f scripts.Fetched) time.Time {
	switch {
	case f.ProcessedOn != 0:
		rec.ProcessedOn = f.ProcessedOn
	case rec.ProcessedOn == 0:
		rec.ProcessedOn = w.q.clock.Now().UnixMilli()
	}
	return time.UnixMilli(rec.ProcessedOn)
}

// prepare turns the jobs a script call fetched into running jobs, not yet
// started. token is the fetch call's lock token base.
func (w *Worker) prepare(jobs []scripts.Fetched, token string) []*runningJob {
	if len(jobs) == 0 {
		return nil
	}
	out := make([]*runningJob, 0, len(jobs))
	for _, f := range jobs {
		rec, _, err := jobcodec.Decode(f.ID, f.Hash)
		now := w.fetchedAt(&rec, f)
		rec.AttemptsStarted++
		job := w.q.fromRecord(&rec)
		// The fetch wrote pb when the worker has a name (the hash was read
		// before): a job another worker ran before names this one.
		if w.opts.Name != "" {
			job.ProcessedBy = w.opts.Name
		}
		rj := &runningJob{job: job, stored: storedOfFetched(&rec, f, err), started: now, w: w, began: time.Now(), decodeErr: err}
		rj.token = token + ":" + job.ID
		job.token, job.run = rj.token, rj
		rj.lastRenew.Store(now.UnixMilli())
		rj.ctx, rj.cancel = context.WithCancelCause(w.jobsCtx)
		out = append(out, rj)
	}
	w.giveSlots(out)
	return out
}
