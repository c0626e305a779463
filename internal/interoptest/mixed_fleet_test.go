package interoptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// mixedFleetEnv sets how long TestMixedFleetSoak adds jobs (a Go duration);
// without it the test adds for mixedFleetDefault.
const mixedFleetEnv = "DROVER_MIXED_FLEET"

const mixedFleetDefault = 15 * time.Second

// fleetWorkerSpec is a drover worker process's part of the mixed fleet
// (runSoakWorker).
type fleetWorkerSpec struct {
	Concurrency     int           `json:"concurrency"`
	Lock            time.Duration `json:"lock"`
	StalledInterval time.Duration `json:"stalledInterval"`
	MaxStalledCount int           `json:"maxStalledCount"`
}

// The fleet's worker settings: short locks so a killed worker's jobs come
// back within seconds, and stall recoveries without limit, so a job's final
// state depends on its own behavior alone, never on how often the soak
// happened to kill the worker running it.
var fleetWorker = fleetWorkerSpec{
	Concurrency: 4, Lock: 2 * time.Second, StalledInterval: 500 * time.Millisecond, MaxStalledCount: 1000,
}

// fleetJob is what the soak asked of one added job: its index (in its
// data), who added it, and the behavior the workers run, from which its
// final state follows.
type fleetJob struct {
	i        int
	by       impl
	custom   bool // added with a custom job id
	attempts int
	fails    int  // attempts that fail before one succeeds
	fatal    bool // the first attempt fails unrecoverably
	resent   bool // an add returned an error and was sent again
	flow     bool // a flow's node
	// removeDone and removeFailed: added with removeOnComplete/removeOnFail.
	removeDone, removeFailed bool
	// policy is a flow child's; children are a flow parent's.
	policy   drover.ParentPolicy
	children []fleetJob
}

// fails is whether the job fails for good.
func (j fleetJob) failsForGood() bool { return j.fatal || j.fails >= max(j.attempts, 1) }

// want is the job's final state, attemptsMade and reason/return value
// ("child *" for a parent failed by a child: any of its FailParent children
// may be the first to fail).
func (j fleetJob) want() (state string, atm int, detail string) {
	attempts := max(j.attempts, 1)
	if len(j.children) > 0 {
		waits := false
		for _, c := range j.children {
			if !c.failsForGood() {
				continue
			}
			switch c.policy {
			case drover.FailParent:
				return "failed", -1, "child *"
			case drover.ParentWaits:
				waits = true
			}
		}
		if waits {
			return "waiting-children", -1, ""
		}
	}
	switch {
	case j.failsForGood() && j.removeFailed, !j.failsForGood() && j.removeDone:
		return "removed", -1, ""
	case j.fatal:
		return "failed", 1, "fatal"
	case j.fails >= attempts:
		return "failed", attempts, "boom"
	default:
		return "completed", j.fails + 1, fmt.Sprintf(`{"i":%d}`, j.i)
	}
}

// TestMixedFleetSoak shares one queue between Node BullMQ and drover the
// way a team migrating from one to the other does: a Node and a drover
// producer add jobs with a mix of options (priorities, delays, LIFO,
// custom ids, attempts with fixed or exponential backoff), two Node and two
// drover worker processes take them, and a driver SIGKILLs worker processes
// at random (their jobs stall and the others' stalled checks bring them
// back) and drops every client connection from time to time. Afterwards
// every job must be in the final state its behavior dictates, with the
// attempts it made and its result or reason; nothing may be left active,
// locked or waiting; drover's adds (whose lost replies drover settles)
// must have added each job once; and both sides must count the same.
func TestMixedFleetSoak(t *testing.T) {
	t.Parallel()
	run := mixedFleetDefault
	if v := os.Getenv(mixedFleetEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, mixedFleetEnv)
		run = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("DROVER_MIXED_FLEET_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		seed = s
	}
	t.Logf("seed %d (DROVER_MIXED_FLEET_SEED), adding for %s", seed, run)

	// AOF written before each reply: a crash loses nothing a client was told.
	srv, err := redistest.Start("--appendonly", "yes", "--appendfsync", "always")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.Signal(syscall.SIGCONT)
		srv.Stop()
	})
	rdb := srv.Client(t)
	prefix := redistest.UniquePrefix()
	o := bullmqoracle.Start(t, srv.Addr)
	dq, err := drover.NewQueue(rdb, queueName, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	base := prefix + ":" + queueName + ":"
	flows, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})
	require.NoError(t, err)

	// Workers: slots 0 and 1 are Node processes, 2 and 3 drover's.
	var procMu sync.Mutex
	procs := make([]soakProc, 4)
	start := func(slot int) soakProc {
		name := fmt.Sprintf("fleet-%d", slot)
		if slot < 2 {
			return bullmqoracle.StartWorkerProcess(t, srv.Addr, prefix, queueName, bullmqoracle.WorkerOptions{
				Name: name, Concurrency: fleetWorker.Concurrency, LockDuration: fleetWorker.Lock,
				StalledInterval: fleetWorker.StalledInterval, MaxStalledCount: bullmqoracle.Ptr(fleetWorker.MaxStalledCount),
				Behavior: bullmqoracle.FromData("behavior"),
			})
		}
		spec := fleetWorker
		return startDroverProcSpec(t, soakWorkerSpec{Addr: srv.Addr, Prefix: prefix, Name: name, Fleet: &spec})
	}
	for slot := range procs {
		procs[slot] = start(slot)
	}

	// Producers: one Node, one drover, each adding until the run ends.
	var jobsMu sync.Mutex
	var jobs []fleetJob
	var next atomic.Int64
	// newFleetJob draws a job: its options and its behavior.
	// A flow's parent (succeeds) never fails.
	newFleetJob := func(rng *rand.Rand, mayCustom, succeeds bool) (fleetJob, jobSpec) {
		j := fleetJob{i: int(next.Add(1)), custom: mayCustom && rng.IntN(3) == 0, attempts: []int{0, 1, 2, 3, 4}[rng.IntN(5)]}
		switch r := rng.IntN(20); {
		case succeeds:
		case r == 0:
			j.fatal = true
		case r < 10:
			j.fails = 0
		default:
			j.fails = 1 + rng.IntN(4)
		}
		spec := jobSpec{name: "fleet", attempts: j.attempts}
		if j.custom {
			spec.jobID = fmt.Sprintf("c%d", j.i)
		}
		if rng.IntN(4) == 0 {
			spec.priority = 1 + rng.IntN(5)
		}
		if rng.IntN(5) == 0 {
			spec.delay = time.Duration(1+rng.IntN(300)) * time.Millisecond
		}
		spec.lifo = spec.priority == 0 && rng.IntN(6) == 0
		if mayCustom { // a single job, not a flow's
			j.removeDone, j.removeFailed = rng.IntN(7) == 0, rng.IntN(7) == 0
			spec.removeOnComplete, spec.removeOnFail = j.removeDone, j.removeFailed
		}
		if j.attempts > 1 {
			switch rng.IntN(3) {
			case 0:
				spec.backoff = &drover.Backoff{Type: drover.BackoffFixed, Delay: 20 * time.Millisecond}
			case 1:
				spec.backoff = &drover.Backoff{Type: drover.BackoffExponential, Delay: 10 * time.Millisecond}
			}
		}
		then := bullmqoracle.FailTimes(j.fails, "boom", map[string]any{"i": j.i})
		if j.fatal {
			then = bullmqoracle.Unrecoverable("fatal")
		}
		bh := bullmqoracle.SleepThen(time.Duration(rng.IntN(40))*time.Millisecond, then)
		if rng.IntN(10) == 0 {
			// The processor moves the job to delayed on its first start (no
			// attempt spent), then runs it.
			inner := bh
			bh = bullmqoracle.MoveToDelayed(time.Duration(1+rng.IntN(50))*time.Millisecond, 1, &inner)
		}
		spec.data = map[string]any{"i": j.i, "behavior": bh}
		return j, spec
	}
	// addFleetFlow adds a parent with 1-3 children, each child with a
	// random policy for its failure; the parent itself always succeeds.
	policies := []drover.ParentPolicy{drover.ParentWaits, drover.FailParent, drover.IgnoreDependency, drover.RemoveDependency}
	addFleetFlow := func(by impl, rng *rand.Rand) error {
		parent, pspec := newFleetJob(rng, false, true)
		parent.flow, parent.by = true, by
		pspec.delay = 0 // a parent's delay counts from its children's end
		nodeFlow := bullmqoracle.FlowJob{Name: "fleet-parent", QueueName: queueName, Data: pspec.data, Opts: pspec.nodeOpts()}
		droverFlow := drover.FlowJob{Name: "fleet-parent", QueueName: queueName, Data: pspec.data, Opts: pspec.droverOpts()}
		for range 1 + rng.IntN(3) {
			c, cspec := newFleetJob(rng, false, false)
			c.flow, c.by, c.policy = true, by, policies[rng.IntN(len(policies))]
			parent.children = append(parent.children, c)
			nopts := cspec.nodeOpts()
			if c.policy != drover.ParentWaits {
				nopts[c.policy.String()] = true
			}
			dopts := cspec.droverOpts()
			dopts.ParentPolicy = c.policy
			nodeFlow.Children = append(nodeFlow.Children, bullmqoracle.FlowJob{Name: "fleet", QueueName: queueName, Data: cspec.data, Opts: nopts})
			droverFlow.Children = append(droverFlow.Children, drover.FlowJob{Name: "fleet", QueueName: queueName, Data: cspec.data, Opts: dopts})
		}
		for try := 0; ; try++ {
			actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var err error
			if by == nodeImpl {
				_, err = o.AddFlow(actx, prefix, nodeFlow)
			} else {
				_, err = flows.Add(actx, droverFlow)
			}
			cancel()
			if err == nil {
				break
			}
			if try == 20 {
				return fmt.Errorf("%s flow add of job %d: %w", by, parent.i, err)
			}
			parent.resent = true
			time.Sleep(50 * time.Millisecond)
		}
		jobsMu.Lock()
		jobs = append(jobs, parent)
		for _, c := range parent.children {
			c.resent = parent.resent
			jobs = append(jobs, c)
		}
		jobsMu.Unlock()
		return nil
	}
	var deduplicated atomic.Int64
	record := func(j fleetJob) {
		jobsMu.Lock()
		jobs = append(jobs, j)
		jobsMu.Unlock()
	}
	// addOne adds a job, sending it again after an error; it returns the
	// id the add answered.
	addOne := func(j *fleetJob, spec jobSpec) (string, error) {
		for try := 0; ; try++ {
			actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var id string
			var err error
			if j.by == nodeImpl {
				id, err = o.Add(actx, prefix, queueName, spec.name, spec.data, spec.nodeOpts())
			} else {
				var res *drover.AddResult
				res, err = dq.Add(actx, spec.name, spec.data, spec.droverOpts())
				if err == nil {
					id = res.Job.ID
				}
			}
			cancel()
			if err == nil {
				return id, nil
			}
			if try == 20 {
				return "", fmt.Errorf("%s add of job %d: %w", j.by, j.i, err)
			}
			j.resent = true
			time.Sleep(50 * time.Millisecond)
		}
	}
	produce := func(ctx context.Context, by impl, rng *rand.Rand) error {
		for ctx.Err() == nil {
			if rng.IntN(10) == 0 {
				if err := addFleetFlow(by, rng); err != nil {
					return err
				}
				continue
			}
			j, spec := newFleetJob(rng, true, false)
			j.by = by
			pair := !j.custom && rng.IntN(12) == 0
			if pair {
				spec.dedupID = fmt.Sprintf("g%d", j.i)
			}
			first, err := addOne(&j, spec)
			if err != nil {
				return err
			}
			record(j)
			if pair {
				// A second add under the same deduplication id, at once: it is
				// deduplicated while the first job is unfinished (the usual
				// case) and a job of its own otherwise.
				j2, spec2 := newFleetJob(rng, false, false)
				j2.by = by
				spec2.dedupID = spec.dedupID
				id, err := addOne(&j2, spec2)
				if err != nil {
					return err
				}
				if id == first {
					deduplicated.Add(1)
				} else {
					record(j2)
				}
			}
			time.Sleep(time.Duration(2+rng.IntN(6)) * time.Millisecond)
		}
		return nil
	}
	retryCall := func(what string, call func(context.Context) error) error {
		var err error
		for range 40 {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = call(cctx)
			cancel()
			if err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	// A drover QueueEvents reads the whole run; the stream keeps every
	// event (meta's cap, which both sides honour, raised), so a reader that
	// falls behind during a Redis restart cannot lose events to trimming.
	require.NoError(t, retryCall("raise the events cap", func(ctx context.Context) error {
		return rdb.HSet(ctx, base+"meta", "opts.maxLenEvents", 10_000_000).Err()
	}))
	evRdb := srv.Client(t)
	qe, err := drover.NewQueueEvents(evRdb, queueName, &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	var evMu sync.Mutex
	completions := map[string]int{}
	evCtx, evStop := context.WithCancel(context.Background())
	evDone := make(chan error, 1)
	go func() {
		evDone <- qe.Run(evCtx, func(e drover.Event) error {
			if e.Name == drover.EventCompleted {
				evMu.Lock()
				completions[e.JobID]++
				evMu.Unlock()
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		evStop()
		if err := <-evDone; err != nil {
			t.Errorf("QueueEvents.Run: %v", err)
		}
	})

	// A global concurrency both sides honour: Node sets it, drover raises it
	// halfway; the active list never holds more jobs than the limit.
	var limit atomic.Int64
	require.NoError(t, retryCall("Node sets global concurrency", func(ctx context.Context) error {
		return o.SetGlobalConcurrency(ctx, prefix, queueName, 6)
	}))
	limit.Store(6)

	started := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), run)
	defer stop()
	errs := make(chan error, 5)
	for k, by := range []impl{nodeImpl, droverImpl} {
		rng := rand.New(rand.NewPCG(seed, uint64(k)))
		go func() { errs <- produce(ctx, by, rng) }()
	}

	// The admin side: pauses and resumes by either side, and the raise.
	go func() {
		rng := rand.New(rand.NewPCG(seed, 7))
		raised := false
		for ctx.Err() == nil {
			time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
			pauseBy, resumeBy := nodeImpl, nodeImpl
			if rng.IntN(2) == 0 {
				pauseBy = droverImpl
			}
			if rng.IntN(2) == 0 {
				resumeBy = droverImpl
			}
			if err := retryCall(string(pauseBy)+" pauses", func(ctx context.Context) error {
				if pauseBy == nodeImpl {
					return o.Pause(ctx, prefix, queueName)
				}
				return dq.Pause(ctx)
			}); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
			if err := retryCall(string(resumeBy)+" resumes", func(ctx context.Context) error {
				if resumeBy == nodeImpl {
					return o.Resume(ctx, prefix, queueName)
				}
				return dq.Resume(ctx)
			}); err != nil {
				errs <- err
				return
			}
			if !raised && time.Since(started) > run/2 {
				raised = true
				limit.Store(9) // before the raise: a sample may see up to 9 from then on
				if err := retryCall("drover raises global concurrency", func(ctx context.Context) error {
					return dq.SetGlobalConcurrency(ctx, 9)
				}); err != nil {
					errs <- err
					return
				}
			}
		}
		errs <- nil
	}()
	// The sampler: the active list's length against the limit.
	var overLimit atomic.Value
	var maxActive atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			lim := limit.Load()
			n, err := rdb.LLen(context.Background(), base+"active").Result()
			// The limit raised while LLEN was on its way (a Redis stopped
			// with SIGSTOP holds it for seconds): the count may be under
			// the new limit, which the sample did not know yet.
			lim = max(lim, limit.Load())
			if err == nil && n > maxActive.Load() {
				maxActive.Store(n)
			}
			if err == nil && n > lim {
				overLimit.Store(fmt.Sprintf("%d jobs active under a global concurrency of %d", n, lim))
			}
		}
	}()

	// Faults: a worker process SIGKILLed (and a new one started) every
	// 0.5-1.5 s; every 3-5 s, by turns, every client connection dropped,
	// Redis stopped (SIGSTOP) for longer than a lock lasts, or Redis killed
	// and restarted (it reloads its AOF).
	kills, resets, pauses, crashes := 0, 0, 0, 0
	go func() {
		rng := rand.New(rand.NewPCG(seed, 99))
		nextReset := time.Now().Add(3 * time.Second)
		turn := 0
		for {
			select {
			case <-ctx.Done():
				errs <- nil
				return
			case <-time.After(time.Duration(500+rng.IntN(1000)) * time.Millisecond):
			}
			slot := rng.IntN(len(procs))
			procMu.Lock()
			_ = procs[slot].Kill()
			kills++
			procMu.Unlock()
			time.Sleep(100 * time.Millisecond)
			p := start(slot)
			procMu.Lock()
			procs[slot] = p
			procMu.Unlock()
			if time.Now().After(nextReset) {
				// The soak's own clients reconnect; a failed call is retried.
				switch turn % 3 {
				case 0:
					_ = rdb.ClientKillByFilter(context.Background(), "TYPE", "normal").Err()
					resets++
				case 1:
					_ = srv.Signal(syscall.SIGSTOP)
					time.Sleep(fleetWorker.Lock + 500*time.Millisecond)
					_ = srv.Signal(syscall.SIGCONT)
					pauses++
				case 2:
					if err := srv.Crash(); err != nil {
						errs <- fmt.Errorf("restart redis: %w", err)
						return
					}
					crashes++
				}
				turn++
				nextReset = time.Now().Add(time.Duration(3000+rng.IntN(2000)) * time.Millisecond)
			}
		}
	}()
	for range 4 {
		require.NoError(t, <-errs)
	}
	<-sampled
	if v := overLimit.Load(); v != nil {
		t.Errorf("global concurrency broken: %s", v)
	}
	t.Logf("added %d jobs; %d worker kills, %d connection drops, %d Redis stops, %d Redis restarts; at most %d jobs active (limit 6, then 9)",
		len(jobs), kills, resets, pauses, crashes, maxActive.Load())

	// Every job must reach its final state with the workers left running;
	// a parent whose child failed for good under the default policy waits
	// for ever.
	stuck := int64(0)
	for _, j := range jobs {
		if state, _, _ := j.want(); state == "waiting-children" {
			stuck++
		}
	}
	// The backlog left when the adds stop depends on the seed and on how
	// busy the machine is, so the wait ends on a lack of progress: no job
	// leaving the open states for 60 s (a queue that stopped moving), not on
	// a fixed time; 15 min bounds it all the same.
	var counts map[drover.JobState]int64
	settleStart := time.Now()
	lastOpen, lastMove, lastLog := int64(-1), time.Now(), time.Now()
	for {
		counts, err = dq.GetJobCounts(context.Background(), drover.StateWaiting, drover.StateActive,
			drover.StateDelayed, drover.StatePrioritized, drover.StatePaused, drover.StateWaitingChildren)
		if err == nil {
			open := int64(0)
			for _, c := range counts {
				open += c
			}
			// Duplicated Node flows may hold more waiting parents.
			if open-counts[drover.StateWaitingChildren] == 0 && counts[drover.StateWaitingChildren] >= stuck {
				break
			}
			if lastOpen < 0 || open < lastOpen {
				lastOpen, lastMove = open, time.Now()
			}
			if time.Since(lastLog) > 15*time.Second {
				t.Logf("settling for %s: %v", time.Since(settleStart).Round(time.Second), counts)
				lastLog = time.Now()
			}
		}
		require.True(t, time.Since(lastMove) < 60*time.Second && time.Since(settleStart) < 15*time.Minute,
			"jobs still open after the last add, none finished for %s (%s in all): %v (err %v)",
			time.Since(lastMove).Round(time.Second), time.Since(settleStart).Round(time.Second), counts, err)
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("settled %s after the last add", time.Since(settleStart).Round(time.Second))

	// Read every finished job from Redis.
	type seen struct{ id, state, atm, detail string }
	byIndex := map[int][]seen{}
	for _, state := range []string{"completed", "failed", "waiting-children"} {
		ids, err := rdb.ZRange(context.Background(), base+state, 0, -1).Result()
		require.NoError(t, err)
		for _, id := range ids {
			h, err := rdb.HGetAll(context.Background(), base+id).Result()
			require.NoError(t, err)
			var data struct {
				I int `json:"i"`
			}
			require.NoError(t, json.Unmarshal([]byte(h["data"]), &data), "job %s data %q", id, h["data"])
			detail := h["returnvalue"]
			if state == "failed" {
				detail = h["failedReason"]
			}
			byIndex[data.I] = append(byIndex[data.I], seen{id: id, state: state, atm: h["atm"], detail: detail})
		}
	}
	var problems []string
	dupNode := 0
	for _, j := range jobs {
		got := byIndex[j.i]
		state, atm, detail := j.want()
		if len(got) == 0 {
			if state != "removed" {
				problems = append(problems, fmt.Sprintf("job %d (%s add, custom id %v): lost", j.i, j.by, j.custom))
			}
			continue
		}
		if len(got) > 1 {
			// Only a Node add without a custom id may land twice: ioredis
			// sends a command again after a dropped connection (by itself, or
			// the soak does after an error), and nothing in BullMQ's add
			// notices. drover settles a lost reply.
			if j.by == nodeImpl && !j.custom {
				dupNode++
			} else {
				problems = append(problems, fmt.Sprintf("job %d (%s add, custom id %v, resent %v): added %d times", j.i, j.by, j.custom, j.resent, len(got)))
			}
		}
		for _, g := range got {
			okDetail := g.detail == detail || detail == "child *" && strings.HasPrefix(g.detail, "child ") && strings.HasSuffix(g.detail, " failed")
			okAtm := atm < 0 || g.atm == strconv.Itoa(atm)
			if g.state != state || !okAtm || !okDetail {
				problems = append(problems, fmt.Sprintf("job %d (id %s, %s add, attempts %d, fails %d, fatal %v): %s atm %s %q, want %s atm %d %q",
					j.i, g.id, j.by, j.attempts, j.fails, j.fatal, g.state, g.atm, g.detail, state, atm, detail))
			}
		}
	}
	sort.Strings(problems)
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	require.Empty(t, problems, "%d jobs", len(jobs))
	t.Logf("every job final as its behavior says; %d second adds deduplicated; %d Node auto-id adds landed twice after a dropped connection",
		deduplicated.Load(), dupNode)

	// The QueueEvents saw each kept completed job complete once.
	completedIDs, err := rdb.ZRange(context.Background(), base+"completed", 0, -1).Result()
	require.NoError(t, err)
	testkit.WaitFor(t, 30*time.Second, "the QueueEvents reader to see every completion", func() bool {
		evMu.Lock()
		defer evMu.Unlock()
		for _, id := range completedIDs {
			if completions[id] == 0 {
				return false
			}
		}
		return true
	})
	evMu.Lock()
	for id, n := range completions {
		if n > 1 {
			t.Errorf("QueueEvents: job %s completed %d times", id, n)
		}
	}
	t.Logf("QueueEvents: %d completions read (%d jobs kept in completed)", len(completions), len(completedIDs))
	evMu.Unlock()

	// Nothing left behind: locks, the stalled set, the active list.
	var leftovers []string
	iter := rdb.Scan(context.Background(), 0, base+"*:lock", 1000).Iterator()
	for iter.Next(context.Background()) {
		leftovers = append(leftovers, iter.Val())
	}
	require.NoError(t, iter.Err())
	for _, k := range []string{"active", "stalled", "wait", "prioritized", "delayed"} {
		n, err := rdb.Exists(context.Background(), base+k).Result()
		require.NoError(t, err)
		if n > 0 {
			typ, _ := rdb.Type(context.Background(), base+k).Result()
			leftovers = append(leftovers, k+" ("+typ+")")
		}
	}
	iter = rdb.Scan(context.Background(), 0, base+"de:*", 1000).Iterator()
	for iter.Next(context.Background()) {
		leftovers = append(leftovers, iter.Val())
	}
	require.NoError(t, iter.Err())
	require.Empty(t, leftovers, "keys left after every job finished")

	// Both sides count the same.
	nodeCounts, err := o.GetJobCounts(context.Background(), prefix, queueName)
	require.NoError(t, err)
	droverCounts, err := dq.GetJobCounts(context.Background())
	require.NoError(t, err)
	for state, n := range droverCounts {
		require.Equal(t, nodeCounts[string(state)], n, "count of %s (Node %v)", state, nodeCounts)
	}
	procMu.Lock()
	defer procMu.Unlock()
	for _, p := range procs {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		require.NoError(t, p.Stop(sctx))
		cancel()
	}
}
