package drover

// The worker's background keepers: lock renewal for running jobs, and the
// stalled-job checker that recovers jobs whose worker died.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// lockKeeper renews the locks of a worker's in-flight jobs every
// duration/4, all in one script call, and cancels the jobs whose lock is
// gone with cause ErrLockLost (BullMQ's LockManager). A lock Redis cannot
// be reached to renew is gone too once its lifetime since the last
// renewal that reached Redis has run out: the keeper cancels that job then,
// without waiting for Redis to say so, since another worker may already
// have recovered it as stalled and run it (BullMQ's worker goes on
// unaware until Redis answers again). It runs in one goroutine, started and
// stopped by the Worker.
type lockKeeper struct {
	q        *Queue
	jobs     *inflight
	duration time.Duration
	log      *slog.Logger
	lost     func(job *Job, why string) // WorkerHooks.LockLost; may be nil
	gate     *fetchGate                 // held while renewals fail
	wakeKey  string                     // the worker's wake key, written by probe
	workerID string                     // whose wake key each renewal keeps alive
	wakeLife time.Duration              // the wake key's lifetime (wakeLifetime)

	// nextAt is when (ms on the queue's clock) run renews next; dueAt is
	// the earliest renewal a job that arrived since asks for (math.MaxInt64:
	// none), and kick tells run of it (arrived).
	nextAt atomic.Int64
	dueAt  atomic.Int64
	kick   chan struct{}
}

// arrived tells the keeper of jobs just put in flight. A job's lock runs
// from when the call that took it ran in Redis (its lastRenew), which may
// be well before its reply arrived (slow replies): when its first renewal
// is due, duration/4 after that, before run's next renewal, run renews
// then instead, or the renewal's answer might come back past the lock's
// end and cancel a healthy job (BullMQ's LockManager renews by each job's
// age likewise). In the usual case (the reply came at once) the next
// renewal comes first and this costs a comparison.
func (k *lockKeeper) arrived(rjs []*runningJob) {
	if len(rjs) == 0 {
		return
	}
	due := int64(math.MaxInt64)
	for _, rj := range rjs {
		due = min(due, rj.lastRenew.Load()+(k.duration/4).Milliseconds())
	}
	if due >= k.nextAt.Load() {
		return
	}
	for {
		cur := k.dueAt.Load()
		if due >= cur || k.dueAt.CompareAndSwap(cur, due) {
			break
		}
	}
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// newLockKeeper returns a keeper for q's jobs in flight in jobs; the other
// fields are the caller's to set.
func newLockKeeper(q *Queue, jobs *inflight, duration time.Duration) *lockKeeper {
	k := &lockKeeper{q: q, jobs: jobs, duration: duration, kick: make(chan struct{}, 1)}
	k.dueAt.Store(math.MaxInt64)
	k.nextAt.Store(math.MaxInt64)
	return k
}

// run renews every duration/4, and sooner when a lock would expire
// unrenewed before that (renewals fail): the job is then cancelled as its
// lock runs out, not up to duration/4 later. A job that arrives with its
// first renewal due before the next round (arrived) brings the round
// forward to then.
func (k *lockKeeper) run(ctx context.Context) {
	interval := k.duration / 4
	t := time.NewTimer(interval)
	defer t.Stop()
	k.nextAt.Store(k.q.nowMs() + interval.Milliseconds())
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
			// A job arrived whose first renewal is due before the timer's.
			if due := k.dueAt.Swap(math.MaxInt64); due < k.nextAt.Load() {
				k.nextAt.Store(due)
				t.Reset(max(time.Duration(due-k.q.nowMs())*time.Millisecond, time.Millisecond))
			}
			continue
		case <-t.C:
		}
		began := time.Now()
		// Jobs arriving while this renewal is under way may not be in it:
		// each tells run its due time, weighed once the next one is known.
		k.nextAt.Store(math.MaxInt64)
		left, ok := k.renew(ctx)
		next := interval - time.Since(began)
		if ok {
			next = min(next, left)
		}
		next = max(next, time.Millisecond)
		k.nextAt.Store(k.q.nowMs() + next.Milliseconds())
		t.Reset(next)
	}
}

// renew extends every in-flight job's lock once. It returns how long the
// earliest of the locks it looked after lasts unless renewed again (ok
// false when it looked after none).
func (k *lockKeeper) renew(ctx context.Context) (left time.Duration, ok bool) {
	// A job whose lock is lost stays in flight until its processor
	// returns; renewing it would fail again and report the same loss
	// (the LockLost hook, a lock-lost metric) every renewal.
	rjs := slices.DeleteFunc(k.jobs.snapshot(), func(rj *runningJob) bool { return rj.lostWhy.Load() != nil })
	if len(rjs) == 0 {
		k.probe(ctx)
		return 0, false
	}
	ids := make([]string, len(rjs))
	tokens := make([]string, len(rjs))
	for i, rj := range rjs {
		ids[i], tokens[i] = rj.job.ID, rj.token
	}
	// The locks the call writes run from when Redis runs it, which is
	// after now: their lifetime is counted from here.
	sent := k.q.nowMs()
	// bounded: Close (ctx) must not wait out a call Redis does not answer
	// (the client may ignore ctx, see internal/bounded); the next renewal
	// is another call. Nor may the call outlast the first lock it would
	// renew: past that, the job is cancelled (expire).
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := k.expiresIn(rjs, sent); ok {
		callCtx, cancel = context.WithTimeout(ctx, max(d, time.Millisecond))
	}
	lost, err := bounded.Call(callCtx, func(ctx context.Context) ([]scripts.LostLock, error) {
		return scripts.ExtendLocks(ctx, k.q.rdb, k.q.k, k.duration.Milliseconds(), k.workerID, k.wakeLife.Milliseconds(), ids, tokens)
	})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			k.log.WarnContext(ctx, msgRenewFailed, slog.Int(logkey.Count, len(ids)), slog.Any(logkey.Error, err))
			k.gate.hold(ctx, err)
			k.expire(rjs)
		}
		return k.expiresIn(rjs, k.q.nowMs())
	}
	if len(lost) < len(ids) {
		k.gate.resume(ctx) // a lock was written: Redis takes writes again
	} else {
		k.probe(ctx) // every lock had expired: the call wrote nothing and proves nothing
	}
	// The script reports lost locks in the order it was given them, so a
	// job id that is in flight twice (an old attempt that lost its lock
	// and a new one) is matched to the right attempt.
	lostOf := make(map[*runningJob]scripts.LostLock, len(lost))
	for i, j := 0, 0; i < len(rjs) && j < len(lost); i++ {
		if lost[j].ID == ids[i] {
			lostOf[rjs[i]] = lost[j]
			j++
		}
	}
	now := k.q.nowMs()
	k.jobs.whileInFlight(rjs, func(rj *runningJob) {
		if rj.written.Load() {
			return // its result is written: the lock went with it
		}
		l, isLost := lostOf[rj]
		if !isLost {
			rj.lastRenew.Store(sent)
			return
		}
		k.loseLock(rj, k.explain(rj, l, now))
	})
	return k.expiresIn(rjs, k.q.nowMs())
}

// expiresIn is how long, from now (ms on the queue's clock), the earliest
// lock of rjs that the keeper still looks after lasts unless renewed; ok
// is false when there is none.
func (k *lockKeeper) expiresIn(rjs []*runningJob, now int64) (left time.Duration, ok bool) {
	for _, rj := range rjs {
		if rj.written.Load() || rj.settled.Load() || rj.lostWhy.Load() != nil {
			continue
		}
		d := time.Duration(rj.lastRenew.Load()+k.duration.Milliseconds()-now) * time.Millisecond
		if !ok || d < left {
			left, ok = d, true
		}
	}
	return left, ok
}

// expire cancels the running jobs of rjs whose lock has run out since the
// last renewal that reached Redis: it is gone, whether or not Redis can be
// asked.
func (k *lockKeeper) expire(rjs []*runningJob) {
	now := k.q.nowMs()
	k.jobs.whileInFlight(rjs, func(rj *runningJob) {
		if rj.written.Load() || rj.settled.Load() || rj.lostWhy.Load() != nil {
			return
		}
		last := rj.lastRenew.Load()
		if now < last+k.duration.Milliseconds() {
			return
		}
		k.loseLock(rj, fmt.Sprintf("lock expired unrenewed: no renewal reached Redis in the %dms since the last one, past the lock's %s (is Redis unreachable?)",
			now-last, k.duration))
	})
}

// loseLock tells rj's processor that its lock is gone, and why.
func (k *lockKeeper) loseLock(rj *runningJob, why string) {
	rj.lostWhy.Store(why)
	if k.lost != nil {
		k.lost(rj.job, why)
	}
	rj.cancel(ErrLockLost)
}

// probe, while fetching is held and there is no lock to renew, tries a
// write that Redis refuses exactly when it refuses lock renewals (ZADD to
// the worker's wake key, which also wakes the fetcher) and resumes fetching
// when it is accepted.
func (k *lockKeeper) probe(ctx context.Context) {
	if k.gate.held() == nil {
		return
	}
	if _, err := bounded.Call(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, writeWake(ctx, k.q.rdb, k.wakeKey, k.wakeLife)
	}); err == nil {
		k.gate.resume(ctx)
	}
}

// fetchGate stops a worker from taking new jobs while its lock renewals
// fail. Under OOM (noeviction) Redis refuses extendLocks, whose first write
// is a SET, but still runs moveToActive, whose first write is allowed (a
// script that has written may go on): a job taken then would sit in active
// without a lock until the stalled checker found it.
type fetchGate struct {
	log  *slog.Logger
	hook func(held bool, err error) // WorkerHooks.FetchHeld; may be nil

	mu      sync.Mutex
	holding chan struct{} // non-nil while held; closed on resume
}

// hold stops fetching, if it is not stopped already.
func (g *fetchGate) hold(ctx context.Context, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holding != nil {
		return
	}
	g.holding = make(chan struct{})
	g.log.WarnContext(ctx, "not taking new jobs until job locks can be renewed", slog.Any(logkey.Error, err))
	if g.hook != nil {
		g.hook(true, err)
	}
}

// resume lets fetching go on after hold.
func (g *fetchGate) resume(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holding == nil {
		return
	}
	close(g.holding)
	g.holding = nil
	g.log.InfoContext(ctx, "job locks renewed again: taking new jobs")
	if g.hook != nil {
		g.hook(false, nil)
	}
}

// held returns a channel closed when fetching may resume, or nil when it
// is not held.
func (g *fetchGate) held() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding
}

// explain says why a job's lock could not be renewed.
func (k *lockKeeper) explain(rj *runningJob, lost scripts.LostLock, now int64) string {
	if lost.Taken {
		return "another worker holds the job's lock: it was recovered as stalled and taken again, or moved by someone else"
	}
	last := rj.lastRenew.Load()
	expired := now - (last + k.duration.Milliseconds())
	return fmt.Sprintf("lock expired before renewal: last renewed %dms ago, expired %dms ago (is the process starved or was Redis unreachable?)",
		now-last, max(expired, 0))
}

// stalledChecker runs the stalled-job check at start and every interval:
// jobs whose lock expired go back to wait, or fail past maxStalled. Across
// all workers of a queue the check runs once per interval. It runs in one
// goroutine, started and stopped by the Worker.
//
// While the worker is paused it skips its checks, as BullMQ stops a paused
// worker's checker; Resume wakes it for a check at once, as BullMQ's resume
// restarts the checker with one.
type stalledChecker struct {
	q          *Queue
	interval   time.Duration
	maxStalled int
	log        *slog.Logger
	stalled    func(jobID string, stalledCount int) // WorkerHooks.Stalled; may be nil
	paused     *atomic.Bool                         // the worker's pause flag
	resumed    chan struct{}                        // capacity 1: a check is due at once
}

func (c *stalledChecker) run(ctx context.Context) {
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		if !c.paused.Load() {
			c.checkOnce(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.resumed:
			ticker.Reset(c.interval)
		}
	}
}

// wake asks for a check at once (the worker resumed).
func (c *stalledChecker) wake() {
	select {
	case c.resumed <- struct{}{}:
	default:
	}
}

func (c *stalledChecker) checkOnce(ctx context.Context) {
	// bounded: only Close ends ctx, and must not wait out a call Redis does
	// not answer; a check abandoned then reports nothing.
	type checked struct {
		ran   bool
		moved []scripts.Stalled
	}
	res, err := bounded.Call(ctx, func(ctx context.Context) (checked, error) {
		ran, moved, err := scripts.MoveStalledJobsToWait(ctx, c.q.rdb, c.q.k, c.q.nowMs(),
			c.interval.Milliseconds(), c.maxStalled)
		return checked{ran, moved}, err
	})
	ran, moved := res.ran, res.moved
	if err != nil {
		if ctx.Err() == nil {
			c.log.WarnContext(ctx, msgStalledCheckFailed, slog.Any(logkey.Error, err))
		}
		return
	}
	if !ran {
		return
	}
	for _, s := range moved {
		c.log.WarnContext(ctx, "job stalled: moved back to wait", slog.String(logkey.JobID, s.ID), slog.Int(logkey.StalledCount, s.StalledCounter))
		if c.stalled != nil {
			c.stalled(s.ID, s.StalledCounter)
		}
	}
}
