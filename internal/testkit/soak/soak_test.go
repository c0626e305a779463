package soak_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// durationEnv sets how long the faults go on (a Go duration, e.g. 60s, 10m).
const durationEnv = "DROVER_SOAK_DURATION"

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	os.Exit(m.Run())
}

const (
	soakQueue       = "soak"
	soakPrefix      = "soak"
	workers         = 4
	lockDuration    = 2 * time.Second
	stalledInterval = 2 * time.Second
	// pauseFor is how long Redis is SIGSTOPped: longer than the lock, so
	// running jobs lose it and the stalled checker must recover them.
	pauseFor = lockDuration + time.Second
)

// jobOpts gives every job room to outlast the faults: a job that hits an
// outage (PostgreSQL down) retries instead of failing.
var jobOpts = drover.JobOptions{Attempts: 30, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 200 * time.Millisecond}}

// ledger records what the producers were told.
type ledger struct {
	mu        sync.Mutex
	confirmed map[string]bool // the add (or outbox commit) succeeded
	ambiguous map[string]bool // it failed in a way that leaves it in doubt
	refused   map[string]int  // adds known not to have been stored, by producer
}

func (l *ledger) confirm(ops ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, op := range ops {
		l.confirmed[op] = true
	}
}

func (l *ledger) doubt(ops ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, op := range ops {
		l.ambiguous[op] = true
	}
}

func (l *ledger) refuse(producer string, n int) {
	l.mu.Lock()
	l.refused[producer] += n
	l.mu.Unlock()
}

// fault is one injected fault and how long progress took to resume after it.
type fault struct {
	kind     string
	at       time.Time
	recovery time.Duration // -1: progress did not resume within the bound
}

// TestSoak runs the chaos soak for $DROVER_SOAK_DURATION.
func TestSoak(t *testing.T) {
	raw := os.Getenv(durationEnv)
	if raw == "" {
		t.Skipf("the chaos soak runs with `make soak` (sets %s)", durationEnv)
	}
	duration, err := time.ParseDuration(raw)
	require.NoError(t, err, "%s", durationEnv)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DROVER_SOAK_SEED"); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("soak: %s of faults, seed %d", duration, seed)

	// Redis with AOF on a port of its own, behind the fault proxy.
	dir := t.TempDir()
	port, err := redistest.FreePort()
	require.NoError(t, err)
	rp := &redisProc{dir: dir, port: port}
	require.NoError(t, rp.start("everysec"))
	t.Cleanup(func() { rp.signal(syscall.SIGCONT); rp.stop(syscall.SIGKILL) })
	proxy, err := faultproxy.Start(rp.addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	direct := redis.NewClient(&redis.Options{Addr: rp.addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = direct.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })

	// PostgreSQL of our own, so it can be crashed.
	pg, err := pgtest.StartServer()
	require.NoError(t, err)
	t.Cleanup(pg.Close)
	dsn, err := pg.CreateDB(ctx, "soak")
	require.NoError(t, err)
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "CREATE TABLE soak_effects (op text NOT NULL); CREATE TABLE soak_runs (op text NOT NULL)")
	require.NoError(t, err)

	// Four worker processes.
	spec, err := json.Marshal(workerSpec{
		RedisAddr: proxy.Addr, DSN: dsn, Prefix: soakPrefix, Queue: soakQueue,
		Concurrency: 8, LockDuration: lockDuration, StalledInterval: stalledInterval,
	})
	require.NoError(t, err)
	procs := make([]*exec.Cmd, workers)
	startWorker := func(i int) {
		logFile, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		require.NoError(t, err)
		defer logFile.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		require.NoError(t, cmd.Start())
		procs[i] = cmd
	}
	for i := range procs {
		startWorker(i)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	})

	// Producers and the relay.
	q, err := drover.NewQueue(rdb, soakQueue, &drover.QueueOptions{Prefix: soakPrefix, AddBulkChunk: 10})
	require.NoError(t, err)
	ob := outbox.NewPostgres(pool)
	relay, err := outbox.NewRelay(ob, rdb, &outbox.RelayOptions{
		QueueOptions: &drover.QueueOptions{Prefix: soakPrefix}, JobIDPrefix: "ob-",
		PollInterval: 500 * time.Millisecond, MaxRetryDelay: time.Second,
	})
	require.NoError(t, err)
	require.NoError(t, relay.Start(ctx))
	relayClosed := false
	t.Cleanup(func() {
		if !relayClosed {
			_ = relay.Close(ctx)
		}
	})

	book := &ledger{confirmed: map[string]bool{}, ambiguous: map[string]bool{}, refused: map[string]int{}}
	var seq atomic.Int64
	newJob := func(kind string) (string, jobData) {
		op := fmt.Sprintf("%s-%d", kind, seq.Add(1))
		return op, jobData{Op: op, Ms: rand.IntN(20), Fail: rand.IntN(50) == 0}
	}
	prodCtx, stopProducers := context.WithCancel(ctx)
	var prodWG sync.WaitGroup
	every := func(d time.Duration, fn func()) {
		prodWG.Add(1)
		go func() {
			defer prodWG.Done()
			tick := time.NewTicker(d)
			defer tick.Stop()
			for {
				select {
				case <-prodCtx.Done():
					return
				case <-tick.C:
				}
				fn()
			}
		}()
	}
	// plain adds: 2 producers, ~100 jobs/s together
	for range 2 {
		every(20*time.Millisecond, func() {
			op, d := newJob("a")
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := q.Add(actx, "plain", d, &jobOpts)
			switch {
			case err == nil:
				book.confirm(op)
			case !errors.Is(err, drover.ErrAddInDoubt):
				book.refuse("add", 1) // drover says nothing was stored
			default:
				book.doubt(op)
			}
		})
	}
	// bulk adds: 25 jobs every 500 ms, in chunks of 10
	every(500*time.Millisecond, func() {
		jobs := make([]drover.BulkJob, 25)
		ops := make([]string, len(jobs))
		for i := range jobs {
			op, d := newJob("b")
			ops[i] = op
			jobs[i] = drover.BulkJob{Name: "bulk", Data: d, Opts: &jobOpts}
		}
		actx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_, err := q.AddBulk(actx, jobs)
		var be *drover.AddBulkError
		switch {
		case err == nil:
			book.confirm(ops...)
		case errors.As(err, &be):
			n := len(be.Results)
			book.confirm(ops[:n]...)
			book.doubt(ops[n : n+be.Unknown]...)
			book.refuse("bulk", len(ops)-n-be.Unknown)
		case !errors.Is(err, drover.ErrAddInDoubt):
			book.refuse("bulk", len(ops))
		default:
			book.doubt(ops...)
		}
	})
	// outbox: 5 rows per transaction every 200 ms
	var commitDoubts atomic.Int64
	every(200*time.Millisecond, func() {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ops := make([]string, 5)
		// Any error of the COMMIT leaves the rows in doubt: PostgreSQL may
		// have committed them before it crashed and the answer was lost
		// (its text rarely says "commit": "unexpected EOF", "conn closed",
		// SQLSTATE 57P01). An error before it rolled the rows back.
		committing := false
		err := func() error {
			tx, err := pool.Begin(actx)
			if err != nil {
				return err
			}
			for i := range ops {
				op, d := newJob("o")
				ops[i] = op
				if err := ob.AddTx(actx, tx, soakQueue, "outbox", d, &jobOpts); err != nil {
					_ = tx.Rollback(context.WithoutCancel(actx))
					return err
				}
			}
			committing = true
			return tx.Commit(actx)
		}()
		switch {
		case err == nil:
			book.confirm(ops...)
		case committing:
			book.doubt(ops...) // the commit's answer was lost
			if commitDoubts.Add(1) <= 5 {
				t.Logf("outbox commit in doubt: %v", err)
			}
		default:
			book.refuse("outbox", len(ops)) // rolled back (PostgreSQL down)
		}
	})

	// progress is the number of finished jobs, read straight from Redis.
	progress := func() (int64, bool) {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		pipe := direct.Pipeline()
		c := pipe.ZCard(pctx, soakPrefix+":"+soakQueue+":completed")
		f := pipe.ZCard(pctx, soakPrefix+":"+soakQueue+":failed")
		if _, err := pipe.Exec(pctx); err != nil {
			return 0, false
		}
		return c.Val() + f.Val(), true
	}
	// recovered waits for the finished count to grow after a fault ends.
	recovered := func(from time.Time) time.Duration {
		var base int64
		for {
			if n, ok := progress(); ok {
				base = n
				break
			}
			if time.Since(from) > 2*time.Minute {
				return -1
			}
			time.Sleep(20 * time.Millisecond)
		}
		for time.Since(from) < 2*time.Minute {
			if n, ok := progress(); ok && n > base {
				return time.Since(from)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return -1
	}

	// The fault driver.
	var faults []fault
	fsync := "everysec"
	kinds := []string{"worker-kill", "redis-restart", "redis-pause", "conn-reset", "reply-drop", "latency", "pg-crash"}
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(1500+rng.IntN(2500)) * time.Millisecond)
		kind := kinds[rng.IntN(len(kinds))]
		at := time.Now()
		switch kind {
		case "worker-kill":
			i := rng.IntN(workers)
			_ = procs[i].Process.Kill()
			_ = procs[i].Wait()
			startWorker(i)
		case "redis-restart":
			// SIGKILL is safe only with appendfsync always (every reply
			// follows its fsync); with everysec, a kill could lose the
			// last second of acknowledged writes, so it gets a clean
			// shutdown. The next restart uses the other policy.
			if fsync == "always" {
				rp.stop(syscall.SIGKILL)
				fsync = "everysec"
				kind += "-kill-always"
			} else {
				rp.stop(syscall.SIGTERM)
				fsync = "always"
				kind += "-term-everysec"
			}
			require.NoError(t, rp.start(fsync))
		case "redis-pause":
			rp.signal(syscall.SIGSTOP)
			time.Sleep(pauseFor)
			rp.signal(syscall.SIGCONT)
		case "conn-reset":
			proxy.ResetAll()
		case "reply-drop":
			// The next scripts run, their replies are lost and go-redis
			// resends them: adds, fetches and finishes alike.
			for range 1 + rng.IntN(3) {
				proxy.DropReplyTo("evalsha")
			}
		case "latency":
			proxy.SetLatency(time.Duration(20+rng.IntN(80)) * time.Millisecond)
			time.Sleep(time.Duration(1+rng.IntN(3)) * time.Second)
			proxy.SetLatency(0)
		case "pg-crash":
			pg.Crash()
			time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
			require.NoError(t, pg.Start())
		}
		faults = append(faults, fault{kind: kind, at: at, recovery: recovered(time.Now())})
	}

	// Quiesce: no more adds; wait until the outbox is relayed and every job
	// has finished (a job stranded in active after a worker kill waits for
	// the stalled checker).
	stopProducers()
	prodWG.Wait()
	drainStart := time.Now()
	k := soakPrefix + ":" + soakQueue + ":"
	var pendingRows, unfinished int64
	for time.Since(drainStart) < 5*time.Minute {
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM drover_outbox WHERE sent_at IS NULL AND failed_at IS NULL").Scan(&pendingRows); err != nil {
			pendingRows = -1
		}
		pipe := direct.Pipeline()
		w := pipe.LLen(ctx, k+"wait")
		a := pipe.LLen(ctx, k+"active")
		d := pipe.ZCard(ctx, k+"delayed")
		p := pipe.ZCard(ctx, k+"prioritized")
		if _, err := pipe.Exec(ctx); err == nil {
			unfinished = w.Val() + a.Val() + d.Val() + p.Val()
		}
		if pendingRows == 0 && unfinished == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	drainTime := time.Since(drainStart)
	relayClosed = true
	require.NoError(t, relay.Close(ctx))
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		_ = p.Wait()
	}

	rep := check(t, ctx, direct, pool, book, k)
	rep.faults = faults
	rep.drain = drainTime
	rep.pendingRows, rep.unfinished = pendingRows, unfinished
	rep.dropped, rep.resets = proxy.Dropped(), proxy.Resets()
	out := rep.String(duration, seed)
	fmt.Print(out)
	if err := os.WriteFile(filepath.Join(os.TempDir(), "drover-soak-report.txt"), []byte(out), 0o644); err == nil {
		t.Logf("report also in %s", filepath.Join(os.TempDir(), "drover-soak-report.txt"))
	}
	for _, v := range rep.violations {
		t.Error(v)
	}
}

// report is what the soak found.
type report struct {
	confirmed, ambiguous, ambiguousLanded        int
	refused                                      map[string]int
	jobs, completed, failedDesigned, failedOther int
	effects, effectDups, runs, reruns            int
	pendingRows, unfinished                      int64
	dropped, resets                              int64
	drain                                        time.Duration
	faults                                       []fault
	violations                                   []string
}

// check reads every job and every effect and compares them with what the
// producers were told.
func check(t *testing.T, ctx context.Context, rdb *redis.Client, pool *pgxpool.Pool, book *ledger, k string) *report {
	t.Helper()
	r := &report{confirmed: len(book.confirmed), ambiguous: len(book.ambiguous), refused: book.refused}
	bad := func(format string, args ...any) {
		if len(r.violations) < 50 {
			r.violations = append(r.violations, fmt.Sprintf(format, args...))
		}
	}
	if r.pendingRows != 0 {
		bad("outbox rows still pending: %d", r.pendingRows)
	}
	for _, list := range []string{"wait", "active"} {
		if n := rdb.LLen(ctx, k+list).Val(); n != 0 {
			bad("%d jobs still in %s after the drain", n, list)
		}
	}
	for _, set := range []string{"delayed", "prioritized"} {
		if n := rdb.ZCard(ctx, k+set).Val(); n != 0 {
			bad("%d jobs still in %s after the drain", n, set)
		}
	}

	// Every job hash under the queue (meta and add-call keys are no jobs).
	var ids []string
	iter := rdb.Scan(ctx, 0, k+"*", 5000).Iterator()
	for iter.Next(ctx) {
		id := strings.TrimPrefix(iter.Val(), k)
		if strings.Contains(id, ":") || id == "meta" || id == "id" || id == "events" || id == "completed" ||
			id == "failed" || id == "wait" || id == "active" || id == "delayed" || id == "prioritized" ||
			id == "marker" || id == "stalled-check" || id == "stalled" || id == "pc" {
			continue
		}
		ids = append(ids, id)
	}
	require.NoError(t, iter.Err())
	completed := map[string]bool{}
	seen := map[string]string{} // op -> job id
	for from := 0; from < len(ids); from += 1000 {
		batch := ids[from:min(from+1000, len(ids))]
		pipe := rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, len(batch))
		scores := make([]*redis.FloatCmd, len(batch))
		for i, id := range batch {
			cmds[i] = pipe.HMGet(ctx, k+id, "data", "failedReason", "finishedOn")
			scores[i] = pipe.ZScore(ctx, k+"completed", id)
		}
		_, _ = pipe.Exec(ctx)
		for i, id := range batch {
			vals, err := cmds[i].Result()
			if err != nil || vals[0] == nil {
				bad("job %s: no data (%v)", id, err)
				continue
			}
			r.jobs++
			var d jobData
			if err := json.Unmarshal([]byte(vals[0].(string)), &d); err != nil {
				bad("job %s: bad data %v", id, err)
				continue
			}
			if prev, dup := seen[d.Op]; dup {
				bad("operation %s added twice: jobs %s and %s", d.Op, prev, id)
			}
			seen[d.Op] = id
			if !book.confirmed[d.Op] {
				if book.ambiguous[d.Op] {
					r.ambiguousLanded++
				} else {
					bad("job %s (operation %s) was never added by a producer", id, d.Op)
				}
			}
			isCompleted := scores[i].Err() == nil
			reason, _ := vals[1].(string)
			switch {
			case isCompleted:
				r.completed++
				completed[d.Op] = true
				if d.Fail {
					bad("job %s (operation %s) meant to fail completed", id, d.Op)
				}
			case vals[2] == nil:
				bad("job %s (operation %s) never finished", id, d.Op)
			case reason == "":
				bad("job %s (operation %s) failed without a reason", id, d.Op)
			case d.Fail:
				r.failedDesigned++
			default:
				r.failedOther++
				if r.failedOther <= 5 {
					t.Logf("job %s (operation %s) failed: %s", id, d.Op, reason)
				}
			}
		}
	}
	for op := range book.confirmed {
		if _, ok := seen[op]; !ok {
			bad("operation %s was confirmed to its producer but has no job", op)
		}
	}

	// Effects: exactly one per completed job, none for anything else.
	rows, err := pool.Query(ctx, "SELECT op, count(*) FROM soak_effects GROUP BY op")
	require.NoError(t, err)
	effects := map[string]bool{}
	for rows.Next() {
		var op string
		var n int
		require.NoError(t, rows.Scan(&op, &n))
		r.effects++
		effects[op] = true
		if n > 1 {
			r.effectDups++
			bad("operation %s took effect %d times", op, n)
		}
		if !completed[op] {
			bad("operation %s took effect but its job did not complete", op)
		}
	}
	require.NoError(t, rows.Err())
	for op := range completed {
		if !effects[op] {
			bad("job of operation %s completed without its effect", op)
		}
	}
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*), count(*) - count(DISTINCT op) FROM soak_runs").Scan(&r.runs, &r.reruns))
	if r.jobs != r.confirmed+r.ambiguousLanded {
		bad("jobs %d != confirmed adds %d + adds in doubt that landed %d", r.jobs, r.confirmed, r.ambiguousLanded)
	}
	return r
}

func (r *report) String(duration time.Duration, seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== drover chaos soak: %s of faults, seed %d ===\n", duration, seed)
	fmt.Fprintf(&b, "adds: %d confirmed, %d in doubt (%d of them stored); known not stored (an error the caller can act on): %d add, %d bulk, %d outbox rows rolled back\n",
		r.confirmed, r.ambiguous, r.ambiguousLanded, r.refused["add"], r.refused["bulk"], r.refused["outbox"])
	fmt.Fprintf(&b, "jobs: %d = %d confirmed + %d in-doubt stored; %d completed, %d failed as designed, %d failed otherwise\n",
		r.jobs, r.confirmed, r.ambiguousLanded, r.completed, r.failedDesigned, r.failedOther)
	fmt.Fprintf(&b, "effects: %d operations, %d duplicated; runs %d, re-runs %d (absorbed by the ledger)\n",
		r.effects, r.effectDups, r.runs, r.reruns)
	fmt.Fprintf(&b, "proxy: %d replies dropped, %d reset-all; drain after faults %s\n", r.dropped, r.resets, r.drain.Round(time.Millisecond))
	byKind := map[string][]time.Duration{}
	var all []time.Duration
	stuck := 0
	for _, f := range r.faults {
		if f.recovery < 0 {
			stuck++
			continue
		}
		byKind[f.kind] = append(byKind[f.kind], f.recovery)
		all = append(all, f.recovery)
	}
	fmt.Fprintf(&b, "faults: %d injected, %d without recovery within 2m\n", len(r.faults), stuck)
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		d := byKind[k]
		fmt.Fprintf(&b, "  %-26s %4d  recovery p50 %-8s p99 %s\n", k, len(d), pct(d, 50), pct(d, 99))
	}
	fmt.Fprintf(&b, "recovery (time from a fault's end to the next finished job): p50 %s, p99 %s\n", pct(all, 50), pct(all, 99))
	if len(r.violations) == 0 {
		b.WriteString("invariants: OK (none lost, none duplicated, none stuck, effects == operations)\n")
	} else {
		fmt.Fprintf(&b, "invariants: %d VIOLATIONS (first ones below)\n", len(r.violations))
		for _, v := range r.violations {
			fmt.Fprintf(&b, "  - %s\n", v)
		}
	}
	return b.String()
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(time.Millisecond).String()
}
