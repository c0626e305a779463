package interoptest_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// soakWorkerEnv makes the test binary a drover soak worker process
// (TestMain runs runSoakWorker instead of the tests), so the soak can
// SIGKILL a drover worker exactly as it kills a Node one.
const soakWorkerEnv = "DROVER_SCHED_SOAK_WORKER"

type soakWorkerSpec struct {
	Addr   string `json:"addr"`
	Prefix string `json:"prefix"`
	Name   string `json:"name"`
	// Queue is the queue the worker serves; empty: queueName.
	Queue string `json:"queue,omitempty"`
	// MaxStalledCount is the worker's WorkerOptions.MaxStalledCount; 0:
	// the default (1).
	MaxStalledCount int `json:"maxStalledCount,omitempty"`
	// Fleet, when set, makes the worker TestMixedFleetSoak's: it runs each
	// job's behavior from its data with these options.
	Fleet *fleetWorkerSpec `json:"fleet,omitempty"`
}

// Both kinds of soak worker take a run, work 30 ms and complete it; a lock
// of 1s checked every second brings a killed worker's runs back quickly.
const (
	soakWork     = 30 * time.Millisecond
	soakLock     = time.Second
	soakStallChk = time.Second
)

// runSoakWorker runs one drover worker until SIGTERM; it prints "ready" once
// it is started.
func runSoakWorker(specJSON string) int {
	var spec soakWorkerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", soakWorkerEnv, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: spec.Addr})
	defer func() { _ = rdb.Close() }()
	var proc drover.Processor = drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(soakWork):
		}
		return nil, nil
	})
	opts := &drover.WorkerOptions{Prefix: spec.Prefix, Name: spec.Name, LockDuration: soakLock, StalledInterval: soakStallChk,
		MaxStalledCount: spec.MaxStalledCount}
	if f := spec.Fleet; f != nil {
		proc = droverBehavior(bullmqoracle.FromData("behavior"), rdb)
		opts.Concurrency, opts.LockDuration, opts.StalledInterval, opts.MaxStalledCount = f.Concurrency, f.Lock, f.StalledInterval, f.MaxStalledCount
		// Thousands of jobs fail by design: errors only.
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	queue := queueName
	if spec.Queue != "" {
		queue = spec.Queue
	}
	w, err := drover.NewWorker(rdb, queue, proc, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(cctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// soakProc is a worker process of either kind.
type soakProc interface {
	Kill() error
	Stop(ctx context.Context) error
}

// droverProc is a drover worker in a child process (runSoakWorker).
type droverProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startDroverProc(t *testing.T, addr, prefix, name string) *droverProc {
	t.Helper()
	return startDroverProcSpec(t, soakWorkerSpec{Addr: addr, Prefix: prefix, Name: name})
}

// startDroverProcSpec starts a drover worker process (runSoakWorker) as
// spec says and waits for it to be ready.
func startDroverProcSpec(t *testing.T, s soakWorkerSpec) *droverProc {
	t.Helper()
	name := s.Name
	spec, err := json.Marshal(s)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), soakWorkerEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &droverProc{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if !ok && sc.Text() == "ready" {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	require.True(t, <-ready, "drover soak worker %s did not start", name)
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func (p *droverProc) Kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	return nil
}

func (p *droverProc) Stop(ctx context.Context) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		_ = p.Kill()
		return fmt.Errorf("drover soak worker did not stop: %w", context.Cause(ctx))
	}
}

// TestSoakJobSchedulers is opt-in (DROVER_SOAK=5m, or `make soak-schedulers`):
// an every-200ms scheduler and a per-second cron scheduler run for the given
// time on one queue shared by three worker processes, while every 2-5 s one
// of them, drawn at random, is SIGKILLed and started again 0-1.5 s later.
// DROVER_SOAK_WORKERS=mixed (default) runs one Node and two drover
// workers; =node runs three Node workers, the baseline that shows what
// BullMQ itself does under the same kills. DROVER_SOAK_SEED fixes the kill
// schedule (the same seed gives both runs the same kills).
//
// It fails when an iteration made never completes, when one completes
// twice, or when a scheduler stops. It counts and explains the slots of
// the schedule that got no iteration: BullMQ creates the next iteration
// when a worker takes the current one, from the time of that pickup, so
// an iteration taken later than one interval after it was due moves the
// schedule to the present and the slots in between are skipped, by design
// (BullMQ never makes up past iterations). Each skip is put down to its
// cause, read from Redis: the iteration before it was taken twice (its
// first taker was killed before it created the next one; the stalled
// checker gave it back), or it was taken once but late with a kill
// between its creation and that pickup (the killed worker was the one
// woken for it), or late with no kill: listed one by one with how late.
func TestSoakJobSchedulers(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("DROVER_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("opt-in soak: set DROVER_SOAK to a duration, e.g. DROVER_SOAK=5m")
	}
	mode := cmp.Or(os.Getenv("DROVER_SOAK_WORKERS"), "mixed")
	require.Contains(t, []string{"mixed", "node"}, mode, "DROVER_SOAK_WORKERS")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DROVER_SOAK_SEED"); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "DROVER_SOAK_SEED")
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("soak: %s, workers %s, seed %d", d, mode, seed)

	addr := redistest.Shared(t).Addr
	o := bullmqoracle.Start(t, addr)
	rdb, prefix := redistest.Client(t)
	b := newBundle(t, o, rdb, addr, prefix)
	ctx := context.Background()
	base := prefix + ":" + queueName + ":"
	// Keep every event: completions are counted per iteration at the end.
	require.NoError(t, rdb.HSet(ctx, base+"meta", "opts.maxLenEvents", 10_000_000).Err())

	names := []string{"node", "d1", "d2"}
	if mode == "node" {
		names = []string{"node", "n1", "n2"}
	}
	start := func(i int) soakProc {
		if i == 0 || mode == "node" {
			return bullmqoracle.StartWorkerProcess(t, addr, prefix, queueName, bullmqoracle.WorkerOptions{
				Name: names[i], LockDuration: soakLock, StalledInterval: soakStallChk,
				Behavior: bullmqoracle.Sleep(soakWork, nil),
			})
		}
		return startDroverProc(t, addr, prefix, names[i])
	}
	procs := []soakProc{start(0), start(1), start(2)}
	// The schedulers start once every worker is up: slots skipped while
	// worker processes were still starting would say nothing.
	_, err = b.dq.UpsertJobScheduler(ctx, "fast", drover.RepeatOptions{Every: 200 * time.Millisecond}, &drover.JobTemplate{Name: "fast"})
	require.NoError(t, err)
	_, err = b.oracle.UpsertJobScheduler(ctx, prefix, queueName, "cron", map[string]any{"pattern": "* * * * * *"}, map[string]any{"name": "cron"})
	require.NoError(t, err)
	kills := map[string]int{}
	var killTimes []int64 // ms, every SIGKILL
	began := time.Now().UnixMilli()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
		i := rng.IntN(3)
		killTimes = append(killTimes, time.Now().UnixMilli())
		require.NoError(t, procs[i].Kill())
		kills[names[i]]++
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		procs[i] = start(i)
	}
	// Stop the schedule, let the workers finish what was made.
	for _, id := range []string{"fast", "cron"} {
		_, err := b.dq.RemoveJobScheduler(ctx, id)
		require.NoError(t, err)
	}
	time.Sleep(5 * time.Second)
	for _, p := range procs {
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		require.NoError(t, p.Stop(sctx))
		cancel()
	}

	// Completions per iteration, from the whole events stream.
	completions := map[string]int{}
	duplicatedEvents := 0
	for last := "-"; ; {
		msgs, err := rdb.XRangeN(ctx, base+"events", last, "+", 10_000).Result()
		require.NoError(t, err)
		for _, m := range msgs {
			switch m.Values["event"] {
			case "completed":
				completions[fmt.Sprint(m.Values["jobId"])]++
			case "duplicated":
				duplicatedEvents++
			}
		}
		if len(msgs) < 10_000 {
			break
		}
		last = "(" + msgs[len(msgs)-1].ID
	}

	type run struct {
		ms, created, taken, ats, stc int64
		pb                           string
		completed                    bool
	}
	runKeys, err := rdb.Keys(ctx, base+"repeat:*:*").Result()
	require.NoError(t, err)
	runs := map[string][]run{}
	for _, k := range runKeys {
		parts := strings.Split(strings.TrimPrefix(k, base), ":")
		if len(parts) != 3 {
			continue // a lock or logs key
		}
		ms, err := strconv.ParseInt(parts[2], 10, 64)
		require.NoError(t, err)
		h, err := rdb.HGetAll(ctx, k).Result()
		require.NoError(t, err)
		num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
		runs[parts[1]] = append(runs[parts[1]], run{
			ms: ms, created: num("timestamp"), taken: num("processedOn"), ats: num("ats"), stc: num("stc"), pb: h["pb"],
			completed: h["finishedOn"] != "" && h["failedReason"] == "",
		})
	}
	slices.Sort(killTimes)
	lastKill := func(at int64) time.Duration {
		i := sort.Search(len(killTimes), func(i int) bool { return killTimes[i] >= at })
		if i == 0 {
			return -1
		}
		return time.Duration(at-killTimes[i-1]) * time.Millisecond
	}
	killBetween := func(from, to int64) bool {
		i := sort.Search(len(killTimes), func(i int) bool { return killTimes[i] >= from })
		return i < len(killTimes) && killTimes[i] <= to
	}

	step := map[string]int64{"fast": 200, "cron": 1000}
	dupTotal := 0
	for _, id := range []string{"fast", "cron"} {
		rs := runs[id]
		sort.Slice(rs, func(i, j int) bool { return rs[i].ms < rs[j].ms })
		require.NotEmpty(t, rs, "scheduler %s made no iteration", id)
		var skippedStall, skippedKill, skippedLate, notDone, dup int
		var lateness []int64  // how long after a run was due its pickup made the next run
		var makeDelay []int64 // of that, from the pickup (processedOn) to the next run's creation
		for i, r := range rs {
			n := completions["repeat:"+id+":"+strconv.FormatInt(r.ms, 10)]
			if n == 0 || !r.completed {
				notDone++
				t.Logf("scheduler %s: iteration %d not completed (ats %d, stc %d, by %q)", id, r.ms, r.ats, r.stc, r.pb)
			}
			if n > 1 {
				dup++
			}
			if i == 0 {
				continue
			}
			prev := rs[i-1]
			late := r.created - prev.ms
			lateness = append(lateness, late)
			makeDelay = append(makeDelay, r.created-prev.taken)
			gap := r.ms - prev.ms
			if gap == step[id] {
				continue
			}
			skipped := int(gap/step[id]) - 1
			switch {
			case prev.ats > 1 || prev.stc > 0:
				skippedStall += skipped
			case killBetween(prev.created, r.created):
				skippedKill += skipped
			default:
				skippedLate += skipped
				t.Logf("scheduler %s: %d slots skipped after %d (%s into the soak): taken once (by %q) %d ms after it was due, next run made %d ms after it was taken, no kill since it was made; last kill %s before",
					id, skipped, prev.ms, time.Duration(prev.ms-began)*time.Millisecond, prev.pb, prev.taken-prev.ms, r.created-prev.taken, lastKill(prev.created))
			}
		}
		slices.Sort(lateness)
		slices.Sort(makeDelay)
		q := func(p float64) int64 { return lateness[int(p*float64(len(lateness)-1))] }
		qm := func(p float64) int64 { return makeDelay[int(p*float64(len(makeDelay)-1))] }
		t.Logf("scheduler %s (%s workers): %d iterations made over %s, %d completed, %d not completed, %d completed more than once; "+
			"slots skipped: %d after a stalled iteration (taker killed before it created the next), %d after a late pickup with a kill since the iteration was made, %d after a late pickup with no kill; "+
			"due-to-next-iteration delay p50 %d ms, p99 %d ms, max %d ms (of which taken-to-next p50 %d ms, p99 %d ms, max %d ms); kills %v",
			id, mode, len(rs), d, len(rs)-notDone, notDone, dup, skippedStall, skippedKill, skippedLate,
			q(0.5), q(0.99), q(1), qm(0.5), qm(0.99), qm(1), kills)
		dupTotal += dup
		require.Zero(t, notDone, "scheduler %s has iterations that never completed", id)
		require.Greater(t, rs[len(rs)-1].ms, deadline.UnixMilli()-3000, "scheduler %s stopped before the end", id)
	}
	t.Logf("duplicated events (a pickup found the next iteration made already): %d", duplicatedEvents)
	require.Zero(t, dupTotal, "iterations completed more than once")
}
