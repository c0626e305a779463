package difftest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/seed40057009/drover"
)

// Hour is the unit of every generated delay, backoff and grace: long
// enough that nothing becomes due while a program runs (both runs use the
// real clock), so time never decides a step.
const Hour int64 = 3_600_000

// JitterBase is the delay of the one jittered exponential backoff a
// program may have (see gen.backoff).
const JitterBase int64 = 25 * 60_000

// Config selects what the generator uses.
type Config struct {
	// Steps is the number of steps of a program.
	//
	// Defaults to StepsDefault.
	Steps int
	// Known enables the inputs of the known divergences listed in Known
	// (each one's fix is in progress), which the fixed seeds of `make test`
	// leave out so that it stays green. Campaigns turn them on to check
	// the fixes.
	Known bool
}

// StepsDefault is the default Config.Steps.
const StepsDefault = 24

// Generate returns the program of seed: the same seed and config always
// give the same program.
func Generate(seed int64, cfg Config) *Program {
	if cfg.Steps <= 0 {
		cfg.Steps = StepsDefault
	}
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), cfg: cfg}
	g.cross = g.chance(25)
	p := &Program{Seed: seed}
	for len(p.Steps) < cfg.Steps {
		s := g.step()
		if n := len(p.Steps); n > 0 && p.Steps[n-1].Op == OpManualTake {
			switch {
			case g.chance(20) && len(g.names) > 0:
				// A job taken by hand gets a child, then waits for it.
				s = g.add()
				s.Add.Parent = TakenJob
				g.waitChildren = true
			case g.chance(50):
				// A job taken by hand is mostly ended soon after, as a
				// caller's loop does (other steps may come between).
				s = g.manualFinish()
			}
		} else if g.waitChildren {
			g.waitChildren = false
			if g.chance(70) {
				s = Step{Op: OpManualWaitChildren}
				switch n := g.r.IntN(10); {
				case n < 4:
					// Only if the child just added is pending.
					s.Job = g.names[len(g.names)-1]
				case n < 6:
					s.Job = g.job()
				}
			}
		}
		if s.Op == OpWork && s.Concurrency > 1 && s.Outcome.FetchNext && !s.OtherQueue && g.chance(60) && len(p.Steps)+1 < cfg.Steps {
			// A batch finish mostly meets a backlog: more jobs wait than
			// its slots, so its fetch takes several.
			b := g.plainBulk()
			b.By = g.pickBy()
			p.Steps = append(p.Steps, b)
		}
		g.onOther(&s)
		g.onAlt(&s)
		if g.r.IntN(2) == 0 {
			s.By = Drover
		} else {
			s.By = Node
		}
		if s.By == Drover && s.Op == OpAdd && s.Add.Parent != "" && s.Add.JobID == "" {
			// drover adds it with its FlowProducer, which would give it a
			// UUID: a custom id, the same in both runs.
			s.Add.JobID = "p" + s.Add.Name
		}
		if s.NodeOnly() {
			s.By = Node
		}
		p.Steps = append(p.Steps, s)
	}
	if g.chance(30) {
		m := &ManualWorker{}
		if g.chance(60) {
			m.Metrics = g.pickI(1, 2, 60)
		}
		if g.chance(50) {
			m.RemoveOnComplete = g.keepJobs()
		}
		if g.chance(50) {
			m.RemoveOnFail = g.keepJobs()
		}
		if g.chance(25) {
			m.LimiterMax = g.pickI(1, 2)
		}
		p.Manual = m
	}
	if g.chance(25) {
		p.Defaults = g.defaults()
	}
	if len(g.others) > 0 && g.chance(20) {
		p.OtherDefaults = g.defaults()
	}
	if g.chance(15) {
		// Capped events streams, trimmed as events are written.
		p.EventsMaxLen = g.pickI(1, 3, 8)
		for i := range p.Steps {
			if s := &p.Steps[i]; s.Op == OpAddMixedBurst {
				// The runner learns drover's commit order from the
				// stream, which a cap trims.
				s.By = Node
			}
		}
	}
	if deferredFailures(p) || IDCounterCollides(p) {
		// A job that must not run fails as soon as a worker takes it,
		// outside a batch finish's batch: such programs' batch finishes
		// are plain fetching finishes. So are those of programs whose
		// generated ids repeat (a
		// batch holds and releases its jobs by id).
		for i := range p.Steps {
			if s := &p.Steps[i]; s.Op == OpWork && s.Outcome.FetchNext {
				s.Concurrency = 0
			}
		}
	}
	if IDCounterCollides(p) {
		for i := range p.Steps {
			if s := &p.Steps[i]; s.Op == OpAddMixedBurst {
				// The runner tells the burst's jobs apart by their ids.
				s.By = Node
			}
		}
	}
	if g.chance(30) {
		// drover's AddBulk in small calls: a bulk's plain and other
		// jobs split into pure and mixed calls (addPlainJobs, addJobs).
		p.AddChunk = g.pickI(1, 2, 3)
	}
	return p
}

// defaults are a queue's default job options: the options a job's own may
// leave unset, some of which a job's own override (a retention of false,
// another failure policy). No id, deduplication or size limit (both
// refuse them), no jitter (every job would draw its own due time) and no
// backoff shorthand (drover's JobOptions.Backoff has none).
func (g *gen) defaults() *Add {
	d := &Add{}
	for d.Attempts == 0 && d.Priority == 0 && !d.LIFO && d.RemoveOnComplete == nil && d.RemoveOnFail == nil &&
		d.KeepLogs == 0 && d.StackTraceLimit == 0 && d.Delay == 0 && d.OnParentFailure == "" {
		if g.chance(40) {
			d.Attempts = 1 + g.r.IntN(3)
			if g.chance(60) {
				d.Backoff = &Backoff{Type: g.pick("fixed", "exponential", "zero"), Delay: Hour}
			}
		}
		if g.chance(20) {
			d.Priority = 1 + g.r.IntN(5)
		}
		if g.chance(15) {
			d.LIFO = true
		}
		if g.chance(30) {
			d.RemoveOnComplete = g.retention()
		}
		if g.chance(30) {
			d.RemoveOnFail = g.retention()
		}
		if g.chance(20) {
			d.KeepLogs = 1 + g.r.IntN(2)
		}
		if g.chance(15) {
			d.StackTraceLimit = 1
		}
		if g.chance(10) {
			d.Delay = Hour
		}
		if g.chance(10) {
			d.OnParentFailure = g.pick("failParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure", "continueParentOnFailure")
		}
	}
	return d
}

type gen struct {
	r     *rand.Rand
	cfg   Config
	names []string
	n     int
	// jittered: the program has its one job with a jittered backoff.
	jittered bool
	// waitChildren: the last step added a child to a guessed job taken by
	// hand; the next one likely moves that job to waiting-children.
	waitChildren bool
	// others are the names of the flow children added in OtherQueueName.
	others []string
	// alts are the names of the flow children added under AltPrefixOf's
	// prefix; altOther: those in OtherQueueName there.
	alts     []string
	altOther map[string]bool
	// cross: the program works across the two queues more (a quarter of
	// programs): more flow children in OtherQueueName, and more of the
	// work, job and queue steps there.
	cross bool
}

// across is pct, or crossPct in a program that works across the queues.
func (g *gen) across(pct, crossPct int) int {
	if g.cross {
		return crossPct
	}
	return pct
}

// onOther moves a step to OtherQueueName (Step.OtherQueue): mostly a job
// step whose target is a flow child there (its parent waits in the
// program's queue, so retries, removals and finishes there reach across
// queues; a job step targets one now and then even when job picked
// another), sometimes a queue step once the program has such children. A
// job step on a child there stays on the program's queue sometimes (a
// job the queue does not have).
func (g *gen) onOther(s *Step) {
	if s.OtherQueue || !otherQueueOps[s.Op] || s.Op == OpWork || s.Op == OpManualWaitChildren && s.Job == "" {
		return
	}
	if s.Op == OpAdd {
		// A lone job in that queue, sometimes a child of a job in
		// either queue (Queue.add with the parent option there).
		s.OtherQueue = g.chance(g.across(5, 20))
		if s.OtherQueue {
			g.others = append(g.others, s.Add.Name)
		}
		return
	}
	if s.Op == OpStall || s.Op == OpCheckStalled {
		// A child there stalls, and is failed for good past
		// maxStalledCount: its parent's failure policy applies across
		// queues.
		s.OtherQueue = len(g.others) > 0 && g.chance(g.across(35, 50))
		return
	}
	if s.Job != "" {
		if len(g.others) > 0 && !slices.Contains(g.others, s.Job) && g.chance(g.across(15, 40)) {
			s.Job = g.others[g.r.IntN(len(g.others))]
		}
		s.OtherQueue = slices.Contains(g.others, s.Job) && g.chance(85)
		return
	}
	s.OtherQueue = len(g.others) > 0 && g.chance(g.across(20, 35))
}

// noteAlt records a flow child added under AltPrefixOf's prefix.
func (g *gen) noteAlt(c *Add) {
	if g.altOther == nil {
		g.altOther = map[string]bool{}
	}
	g.alts = append(g.alts, c.Name)
	g.altOther[c.Name] = c.OtherQueue
}

// onAlt moves a step under AltPrefixOf's prefix (Step.AltPrefix) once
// the program has flow children there: mostly a job step, retargeted at
// one of them (retry, removal, promotion, priority or delay change,
// progress, logs, data, reads), sometimes a work step or a queue step on
// their queue there, whose finishes reach their parents under the run's
// prefix.
func (g *gen) onAlt(s *Step) {
	if len(g.alts) == 0 || !altPrefixOps[s.Op] || !g.chance(g.across(25, 40)) {
		return
	}
	s.AltPrefix = true
	if s.Job != "" {
		s.Job = g.alts[g.r.IntN(len(g.alts))]
		s.OtherQueue = g.altOther[s.Job]
		return
	}
	if s.Op == OpWork {
		// Not a batch finish: the harness' batch step reads the run's
		// queue's active list.
		s.Concurrency = 0
	}
	s.OtherQueue = g.altOther[g.alts[g.r.IntN(len(g.alts))]]
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) pickF(xs ...float64) float64 { return xs[g.r.IntN(len(xs))] }

// pickBy picks who performs a step in the mixed run.
func (g *gen) pickBy() Impl {
	if g.r.IntN(2) == 0 {
		return Drover
	}
	return Node
}

func (g *gen) chance(pct int) bool { return g.r.IntN(100) < pct }

// job picks a target: mostly an added job, sometimes one never added.
func (g *gen) job() string {
	if len(g.names) == 0 || g.chance(5) {
		return "nosuch"
	}
	// Recent jobs are likelier targets.
	i := len(g.names) - 1 - min(g.r.IntN(len(g.names)), g.r.IntN(len(g.names)))
	return g.names[i]
}

type weighted struct {
	w int
	f func() Step
}

func (g *gen) step() Step {
	opts := []weighted{
		{27, g.add},
		{3, g.bulk},
		{2, g.plainBulk},
		{2, g.burst},
		{2, g.mixedBurst},
		{1, func() Step {
			// Big, short of 10^14 (where both sides' Lua writes ids
			// with 14 significant digits); with Config.Known also
			// values whose ids repeat or are taken (IDCounterCollides).
			vals := []int64{1_000_000, 99_999_999_999_000}
			if g.cfg.Known {
				vals = append(vals, 99_999_999_999_998, 9_007_199_254_740_990, 0, 2)
			}
			return Step{Op: OpSetIDCounter, Delay: g.pickI64(vals...)}
		}},
		{1, func() Step { return Step{Op: OpStaleHash, Limit: g.pickI(0, 1)} }},
		{26, g.work},
		{8, g.batchWork},
		{2, func() Step { return Step{Op: OpStall} }},
		{4, func() Step { return Step{Op: OpCheckStalled, Limit: g.pickI(0, 0, 0, -1, 2)} }},
		{5, func() Step {
			return Step{Op: OpRetry, Job: g.job(), State: g.pick("failed", "completed"), ResetMade: g.chance(40), ResetStarted: g.chance(30)}
		}},
		{2, func() Step {
			// Sometimes in chunks of one or two jobs: the calls loop until
			// the state is empty.
			s := Step{Op: OpRetryJobs, State: g.pick("failed", "completed"), Limit: g.pick3(1+g.r.IntN(2), 0)}
			if g.chance(30) {
				// Only jobs finished before an hour ago (none) or an
				// hour from now (all).
				s.Delay = g.pickI64(-Hour, Hour)
			}
			return s
		}},
		{4, func() Step { return Step{Op: OpPromote, Job: g.job()} }},
		{1, func() Step { return Step{Op: OpPromoteJobs, Limit: g.pickI(0, 0, 1)} }},
		{3, func() Step { return Step{Op: OpChangeDelay, Job: g.job(), Delay: int64(1+g.r.IntN(3)) * Hour} }},
		{4, func() Step {
			s := Step{Op: OpChangePriority, Job: g.job(), Priority: g.pick3(0, 1+g.r.IntN(5)), LIFO: g.chance(30)}
			if g.chance(5) {
				s.Priority = drover.MaxPriority
			}
			return s
		}},
		{4, func() Step { return Step{Op: OpRemove, Job: g.job()} }},
		// A remove of a parent that leaves its children: then either
		// side's steps meet children whose parent is gone.
		{1, func() Step { return Step{Op: OpRemove, Job: g.job(), KeepChildren: true} }},
		{1, func() Step { return Step{Op: OpDrain, Delayed: g.chance(50)} }},
		{2, func() Step {
			grace := int64(0)
			if g.chance(20) {
				grace = Hour
			}
			lim := 0
			if g.chance(30) {
				lim = 1 + g.r.IntN(2)
			}
			return Step{Op: OpClean, State: g.pick("completed", "failed", "wait", "waiting", "delayed", "prioritized", "paused", "active", "waiting-children"), Delay: grace, Limit: lim}
		}},
		// Sometimes one or two jobs per script call (count): the call
		// loops until the queue is gone.
		{1, func() Step { return Step{Op: OpObliterate, NoForce: g.chance(40), Limit: g.pick3(1+g.r.IntN(2), 0)} }},
		{2, func() Step { return Step{Op: OpPause} }},
		{3, func() Step { return Step{Op: OpResume} }},
		{3, func() Step { return Step{Op: OpProgress, Job: g.job(), Value: g.value()} }},
		{3, func() Step {
			line := fmt.Sprintf("line %d", g.r.IntN(100))
			if g.chance(15) {
				// Rows with odd characters, or none.
				line = g.pick("", "two\nlines", "żółw ✓ <&>", "line\u2028sep", `{"json":true}`)
			}
			return Step{Op: OpLog, Job: g.job(), Line: line}
		}},
		{g.across(4, 10), g.flow},
		{g.across(2, 4), g.flows},
		{2, func() Step { return Step{Op: OpUpdateData, Job: g.job(), Value: g.value()} }},
		{3, g.upsertScheduler},
		{1, func() Step { return Step{Op: OpRemoveScheduler, Scheduler: &Scheduler{ID: g.schedulerID()}} }},
		{1, func() Step { return Step{Op: OpClearLogs, Job: g.job(), Limit: g.r.IntN(3)} }},
		{2, func() Step { return Step{Op: OpRemoveChildDependency, Job: g.job()} }},
		{1, func() Step { return Step{Op: OpRemoveUnprocessedChildren, Job: g.job()} }},
		{1, func() Step { return Step{Op: OpRemoveDedupKey, DedupID: g.pick("d1", "d2")} }},
		{1, func() Step { return Step{Op: OpJobRemoveDedupKey, Job: g.job()} }},
		// A cap of 0 too: stored, it stops every worker.
		{1, func() Step { return Step{Op: OpSetGlobalConcurrency, Limit: g.r.IntN(3)} }},
		{2, func() Step { return Step{Op: OpRemoveGlobalConcurrency} }},
		{6, func() Step { return Step{Op: OpManualTake, Token: g.token()} }},
		{5, g.manualFinish},
		{3, func() Step {
			return Step{Op: OpSetGlobalRateLimit, Limit: 1 + g.r.IntN(2), Delay: int64(1+g.r.IntN(2)) * Hour}
		}},
		{1, func() Step { return Step{Op: OpRemoveGlobalRateLimit} }},
		{2, func() Step { return Step{Op: OpRateLimit, Delay: Hour} }},
		{2, func() Step { return Step{Op: OpRemoveRateLimitKey} }},
		{1, func() Step { return Step{Op: OpTrimEvents, Limit: g.pick3(0, g.pickI(1, 5, 1000))} }},
		{2, func() Step {
			s := Step{Op: OpManualWaitChildren}
			if g.chance(30) {
				s.Job = g.job()
			}
			return s
		}},
		{2, func() Step { return Step{Op: OpGetCounts} }},
		{2, func() Step {
			st := []string{"wait", "active", "delayed", "prioritized", "completed", "failed", "paused", "waiting-children"}
			// Sometimes a start from the end (-1, -2): BullMQ ranges
			// lists and sets by index either way.
			s := Step{Op: OpGetJobs, State: g.pick(st...), Priority: g.pickI(0, 0, 1, 1, -1, -2), Limit: g.r.IntN(3), LIFO: g.chance(50)}
			if g.chance(30) {
				// Several states in one call (BullMQ ranges each).
				s.Types = []string{s.State, g.pick(append(st, "waiting")...)}
			}
			if g.chance(30) {
				// The ids alone (getRanges / GetJobIDs).
				s.Op = OpGetJobIDs
			}
			return s
		}},
		{2, func() Step { return Step{Op: OpGetScheduler, Scheduler: &Scheduler{ID: g.schedulerID()}} }},
		{1, func() Step {
			return Step{Op: OpGetSchedulers, Priority: g.pickI(0, 0, 1, -1), Limit: g.r.IntN(3), LIFO: g.chance(50)}
		}},
		{1, func() Step { return Step{Op: OpGetDedupJobID, DedupID: g.pick("d1", "d2")} }},
		{1, func() Step { return Step{Op: OpGetRateLimitTTL, Limit: g.pick3(1+g.r.IntN(2), 0)} }},
		{1, func() Step { return Step{Op: OpGetCountsPerPriority} }},
		{1, func() Step { return Step{Op: OpGetLimits} }},
		{3, func() Step { return Step{Op: OpGetJob, Job: g.job()} }},
		{1, func() Step { return Step{Op: OpWaitFinished, Job: g.job()} }},
		{3, func() Step {
			reads := []FlowRead{ReadChildrenValues, ReadDependencies, ReadDependenciesCount, ReadIgnoredChildrenFailures, ReadFailedChildrenValues}
			return Step{Op: OpFlowRead, Job: g.job(), Read: reads[g.r.IntN(len(reads))]}
		}},
		{2, g.dependenciesRead},
		{2, func() Step {
			return Step{Op: OpGetLogs, Job: g.job(), Priority: g.pickI(0, 0, 1, -1, -2), Limit: g.pickI(0, 1, 2), LIFO: g.chance(50)}
		}},
		{1, func() Step {
			all := []string{"waiting", "wait", "active", "delayed", "prioritized", "completed", "failed", "paused", "waiting-children"}
			var types []string
			for range 1 + g.r.IntN(3) {
				types = append(types, all[g.r.IntN(len(all))])
			}
			return Step{Op: OpGetCountByTypes, Types: types}
		}},
		{1, func() Step { return Step{Op: OpIsPaused} }},
		// maxChildren is a COUNT hint to SSCAN/HSCAN: below a set's size,
		// which children a scan returns depends on the member strings,
		// which carry the run's prefix (two all-Node runs differ), so it
		// is never below the children a generated job has (at most 3).
		{2, func() Step {
			return Step{Op: OpGetFlow, Job: g.job(), Priority: g.pickI(0, 0, 1, 2), Limit: g.pickI(0, 0, 5)}
		}},
		{2, func() Step {
			return Step{Op: OpGetMetrics, State: g.pick("completed", "failed"), Priority: g.pickI(0, 0, 1, -1), Limit: g.pickI(0, 1, 2)}
		}},
		// A job the completed or failed set lost (BullMQ 5.66.6's
		// retention bug), then the clean-up: a SCAN count of 10 walks the
		// keys in many steps; a limit of 8 is never reached by the few
		// orphans a program makes (BullMQ may exceed a limit it reaches,
		// drover never does: README).
		{1, func() Step { return Step{Op: OpOrphan, Job: g.job()} }},
		// Finished jobs an hour and a half older: the retention ages of
		// an hour, clean's grace of an hour and retryJobs' "finished
		// before an hour ago" reach them.
		{2, func() Step { return Step{Op: OpAgeFinished} }},
		{2, func() Step {
			return Step{Op: OpRemoveOrphanedJobs, Priority: g.pickI(10, 1000), Limit: g.pickI(0, 8)}
		}},
		{1, func() Step { return Step{Op: OpUpdateJobProgress, Job: g.job(), Value: g.value()} }},
		{1, func() Step { return Step{Op: OpGetMeta} }},
		{1, func() Step { return Step{Op: OpGetSchedulersCount} }},
		{1, func() Step { return Step{Op: OpExportMetrics, LIFO: g.chance(50)} }},
		// Not generated (no drover equivalent, or nothing in Redis to
		// compare): Queue.addJobLog(id, row, keepLogs) (drover's Job.Log
		// bounds by the job's own keepLogs, it takes none per call),
		// removeDeprecatedPriorityKey (drover never reads the pre-5
		// priority key), getWorkers/getQueueEvents (client names of the
		// connections, which differ by design), getVersion (drover
		// writes none), Worker.cancelJob/cancelAllJobs/delay and
		// Job.waitUntilFinished (in-process), recordJobCountsMetric
		// (telemetry; getJobCounts underneath), queue.getDependencies
		// (drover has it on the Job: ReadDependencies), pages of
		// job.getDependencies' unprocessed children smaller than the set
		// (SSCAN pages depend on the member strings, which carry the
		// run's prefix: dependenciesRead), job.discard (not in 6.7's
		// Job), a scheduler's immediately without a start date (the run's
		// id carries the instant of each run's upsert) and a scheduler
		// without a start date at all (its first run is due at the next
		// wall-clock slot, which may come within the run: the timed
		// tests' ground), repeat.count (drover's RepeatOptions has no
		// starting iteration count), getDelayedCount(timestamp) (no
		// drover equivalent; over states compared equal, with due times
		// whole hours apart, it answers alike), removal cascades, stalls,
		// manual takes and adds under another prefix (Add.AltPrefix puts
		// flow children there, Step.AltPrefix's job, work and queue steps
		// reach them), a job scheduler's
		// template with an empty name without Config.Known (drover names
		// its runs after the scheduler: a deliberate entry of Known) and
		// batch finishes in programs that may leave a job that must not
		// run (deferredFailures: it fails outside the batch). Generated
		// through another name: job.remove (queue.remove's script), getState,
		// getJobState and job.isX (crossRead after every step), count
		// and the getXCount getters (getJobCountByTypes), getRanges and
		// the getX lists (getJobs), removeDebounceKey and
		// getDebounceJobId (the deduplication calls).
	}
	total := 0
	for _, o := range opts {
		total += o.w
	}
	n := g.r.IntN(total)
	for _, o := range opts {
		if n < o.w {
			return o.f()
		}
		n -= o.w
	}
	panic("unreachable")
}

// dependenciesRead is a paged getDependencies or a getDependenciesCount of
// some kinds. Pages of the unprocessed set (an SSCAN of a hashtable set
// on the Redis the tests run, whose order depends on the member strings,
// which carry the run's prefix) are never smaller than 10, more than a
// generated job's children, so the page is the whole set; processed and
// ignored are small hashes, which HSCAN hands back whole whatever the
// count; failed is a sorted-set range, from cursor 0 unless the known
// difference is wanted (BullMQ reads none past the first page).
func (g *gen) dependenciesRead() Step {
	all := []string{"processed", "unprocessed", "ignored", "failed"}
	var kinds []string
	for len(kinds) == 0 {
		for _, k := range all {
			if g.chance(45) {
				kinds = append(kinds, k)
			}
		}
	}
	if g.chance(30) {
		return Step{Op: OpFlowRead, Job: g.job(), Read: ReadDependenciesCountOf, Types: kinds}
	}
	s := Step{Op: OpFlowRead, Job: g.job(), Read: ReadDependenciesPage, Types: kinds, Limit: g.pickI(0, 1, 2)}
	if slices.Contains(kinds, "unprocessed") && s.Limit > 0 {
		s.Limit = 10
	}
	if g.cfg.Known && slices.Contains(kinds, "failed") && g.chance(30) {
		s.Priority = 1
	}
	return s
}

// schedulerID picks from a pool of two, so upserts replace schedulers.
func (g *gen) schedulerID() string { return g.pick("s1", "s2") }

// upsertScheduler makes a scheduler every 1 or 2 hours from 1 to 3 hours
// after the anchor, sometimes with a limit, and a template with the
// options a scheduler's runs may have (no parent; an id, delay,
// deduplication or timestamp, which the scheduler decides, only in Node's
// upserts).
func (g *gen) upsertScheduler() Step {
	a := g.addSpec()
	a.JobID, a.Delay, a.Dedup, a.Parent, a.OnParentFailure, a.TimestampAgo = "", 0, nil, "", "", 0
	if a.JobName == NoName && !g.cfg.Known {
		// An empty name: Node's runs are named "", drover's the
		// scheduler id (the deliberate entry of Known).
		a.JobName = ""
	}
	if g.chance(12) {
		// Options the scheduler decides, which a Node template may still
		// carry: Node's upsert (Step.NodeOnly) stores them with the
		// template, and the workers of either side make the next runs
		// from it.
		switch g.r.IntN(4) {
		case 0:
			a.JobID = "t1"
		case 1:
			a.Delay = Hour
		case 2:
			a.Dedup = &Dedup{ID: g.pick("d1", "d2")}
		default:
			a.TimestampAgo = Hour + 17*60_000
		}
	}
	c := &Scheduler{ID: g.schedulerID(), Every: int64(1+g.r.IntN(2)) * Hour, Start: int64(1+g.r.IntN(3)) * Hour}
	if g.chance(30) {
		// Whole minutes only: the comparison reads delayed scores to the
		// minute.
		c.Every, c.Pattern = 0, g.pick("0 * * * *", "*/30 * * * *", "15 3 * * *", "0 9 * * 1-5", "@daily")
		if g.chance(30) {
			// A zone half an hour off UTC moves even the hourly runs.
			c.TZ = g.pick("America/New_York", "Asia/Kolkata", "Europe/Berlin")
		}
	} else if g.chance(20) {
		c.Offset = g.pickI64(20*60_000, 45*60_000)
	}
	if g.chance(30) {
		c.Limit = 1 + g.r.IntN(2)
	}
	if g.chance(20) {
		// An end date: already past (no scheduler is made), at the first
		// run, or an hour or two after it.
		c.End = g.pickI64(-4*Hour, c.Start, c.Start+Hour, c.Start+2*Hour)
	}
	// A first run now as well as a start date: refused by both.
	c.Immediately = g.chance(5)
	return Step{Op: OpUpsertScheduler, Add: a, Scheduler: c}
}

func (g *gen) pickI(xs ...int) int { return xs[g.r.IntN(len(xs))] }

func (g *gen) pickI64(xs ...int64) int64 { return xs[g.r.IntN(len(xs))] }

func (g *gen) pick3(a, b int) int {
	if g.chance(30) {
		return a
	}
	return b
}

func (g *gen) value() any {
	switch g.r.IntN(7) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(100)
	case 2:
		return fmt.Sprintf("v%d", g.r.IntN(100))
	case 3:
		return map[string]any{"pct": g.r.IntN(100), "path": "a/b"}
	case 4:
		// A bool or a fraction: progress is any JSON value on both sides.
		return g.chance(50)
	case 5:
		return 12.5
	default:
		return []any{1, "two", true}
	}
}

func (g *gen) add() Step { return Step{Op: OpAdd, Add: g.addSpec()} }

// bulk adds 2 or 3 jobs in one call.
func (g *gen) bulk() Step {
	s := Step{Op: OpAddBulk}
	for range 2 + g.r.IntN(2) {
		s.Children = append(s.Children, g.addSpec())
	}
	return s
}

// plain strips a's options that make an add not plain (drover's
// addPlainJobs takes the rest): a custom id, delay, priority, lifo,
// deduplication and a parent link.
func plain(a *Add) *Add {
	a.JobID, a.Delay, a.Priority, a.LIFO, a.LIFORaw, a.Dedup = "", 0, 0, false, nil, nil
	a.Parent, a.ParentInOther, a.OnParentFailure = "", false, ""
	return a
}

// plainBulk adds 4 to 10 jobs in one call, most of them plain, the others
// with any options: drover sends them in calls of Program.AddChunk, pure
// or mixed.
func (g *gen) plainBulk() Step {
	s := Step{Op: OpAddBulk}
	for range 4 + g.r.IntN(7) {
		a := g.addSpec()
		if g.chance(75) {
			plain(a)
		} else {
			a.Parent, a.ParentInOther, a.OnParentFailure = "", false, ""
		}
		s.Children = append(s.Children, a)
	}
	return s
}

// burst adds 2 to 8 copies of one job at once (OpAddBurst): mostly plain,
// sometimes with a priority or delay (the same for every copy), stamped
// 17 minutes before the step.
func (g *gen) burst() Step {
	a := plain(g.addSpec())
	a.Backoff = nil // a jittered backoff draws per job
	switch g.r.IntN(10) {
	case 0:
		a.Priority = 1 + g.r.IntN(3)
	case 1:
		a.Delay = Hour
	}
	if a.TimestampAgo == 0 {
		// One timestamp for every copy: drover's concurrent calls
		// stamp their own, which need not follow the ids the group
		// commit gives, and the delayed set orders same-minute due
		// times (a delay here or in the defaults) by them. Whole
		// minutes off the hours, as every custom timestamp
		// (TestGenerateTimestampsOffWholeHours).
		a.TimestampAgo = 17 * 60_000
	}
	return Step{Op: OpAddBurst, Add: a, Limit: 2 + g.r.IntN(7)}
}

// mixedBurst adds 2 to 8 jobs at once (OpAddMixedBurst), each its own:
// about half plain, the others with a custom id (distinct within the
// burst, sometimes one an earlier burst took), a priority, a delay or
// lifo. One timestamp for all, as burst's copies: drover's concurrent
// calls stamp their own, which need not follow its commit order.
func (g *gen) mixedBurst() Step {
	s := Step{Op: OpAddMixedBurst}
	used := map[string]bool{}
	ago := int64(17 * 60_000)
	for range 2 + g.r.IntN(7) {
		a := plain(g.addSpec())
		a.Backoff = nil // a jittered backoff draws per job
		a.SizeLimit = 0 // a refused add has no place in the commit order
		a.TimestampAgo = ago
		switch g.r.IntN(10) {
		case 0, 1, 2, 3:
			if id := g.pick("m1", "m2", "m3", "m:a:b", "m b", "m/c"); !used[id] {
				used[id] = true
				a.JobID = id
			}
		case 4:
			a.Priority = 1 + g.r.IntN(3)
		case 5:
			a.Delay = Hour
		case 6:
			a.LIFO = true
		}
		s.Children = append(s.Children, a)
	}
	return s
}

// flow adds a parent (sometimes in OtherQueueName) with 1 to 3 children,
// one of which sometimes has 1 or 2 children of its own. The tree's root sometimes keeps the parent
// link addSpec gave it: the whole tree becomes a child of an existing job
// (FlowProducer.add with opts.parent / FlowJob.Parent).
func (g *gen) flow() Step {
	s := Step{Op: OpAddFlow, Add: g.addSpec()}
	if s.Add.Parent != "" && g.chance(60) {
		s.Add.Parent, s.Add.ParentInOther, s.Add.OnParentFailure = "", false, ""
	}
	if g.chance(g.across(5, 20)) {
		// A parent in OtherQueueName, its children in either queue.
		s.Add.OtherQueue = true
		g.others = append(g.others, s.Add.Name)
	}
	child := func() *Add {
		c := g.addSpec()
		c.Parent = ""
		if g.chance(40) {
			c.OnParentFailure = g.pick("failParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure", "continueParentOnFailure")
		}
		c.OtherQueue = g.chance(g.across(20, 60))
		if g.chance(8) {
			// Under another prefix: steps with Step.AltPrefix reach
			// it there (onAlt).
			c.AltPrefix = true
			g.noteAlt(c)
		} else if c.OtherQueue {
			g.others = append(g.others, c.Name)
		}
		return c
	}
	for range 1 + g.r.IntN(3) {
		s.Children = append(s.Children, child())
	}
	if g.chance(30) {
		mid := s.Children[g.r.IntN(len(s.Children))]
		for range 1 + g.r.IntN(2) {
			mid.Children = append(mid.Children, child())
		}
	}
	return s
}

// flows makes 2 or 3 trees for one addBulk call: roots with 0 to 2
// children each, a child sometimes in OtherQueueName and sometimes with
// 1 or 2 children of its own (either queue: a tree three levels deep
// across the two queues).
func (g *gen) flows() Step {
	s := Step{Op: OpAddFlows}
	child := func() *Add {
		c := g.addSpec()
		c.Parent = ""
		if g.chance(40) {
			c.OnParentFailure = g.pick("failParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure", "continueParentOnFailure")
		}
		c.OtherQueue = g.chance(g.across(20, 60))
		if g.chance(8) {
			// Under another prefix: steps with Step.AltPrefix reach
			// it there (onAlt).
			c.AltPrefix = true
			g.noteAlt(c)
		} else if c.OtherQueue {
			g.others = append(g.others, c.Name)
		}
		return c
	}
	for range 2 + g.r.IntN(2) {
		root := g.addSpec()
		root.Parent, root.OnParentFailure = "", ""
		if g.chance(g.across(5, 20)) {
			root.OtherQueue = true
			g.others = append(g.others, root.Name)
		}
		for range g.r.IntN(3) {
			c := child()
			if g.chance(25) {
				for range 1 + g.r.IntN(2) {
					c.Children = append(c.Children, child())
				}
			}
			root.Children = append(root.Children, c)
		}
		s.Children = append(s.Children, root)
	}
	// Fewer refusals (both refuse the whole call, so one bad job of the
	// 2 to 9 would leave the call comparing nothing): no size limits,
	// integer-like ids or deduplication on a parent.
	// A custom id twice in the call is mostly dropped: drover refuses
	// such a call whole and BullMQ stores the job once (a known
	// deliberate difference, which deeper trees would otherwise show in
	// most programs).
	seen := map[string]bool{}
	for _, a := range s.adds() {
		a.SizeLimit = 0
		switch a.JobID {
		case "1234567890123456", "100000000000000000000", "007":
			a.JobID = ""
		}
		if a.JobID != "" && seen[a.JobID] && g.chance(90) {
			a.JobID = ""
		}
		seen[a.JobID] = true
		if len(a.Children) > 0 {
			a.Dedup = nil
		}
	}
	return s
}

func (g *gen) addSpec() *Add {
	g.n++
	a := &Add{Name: fmt.Sprintf("j%d", g.n), Data: map[string]any{"n": g.n}}
	if g.chance(15) {
		a.Data["s"] = g.pick("a/b", "żółw ✓", "tab\tnl\n", `quote"back\`, "<b>&amp;</b>", "line\u2028sep\u2029", "é<>&")
	}
	if g.chance(5) {
		// A name with odd characters, or none.
		a.JobName = g.pick(NoName, "a:b", "ü ✓", "with space", "x/y%z", "__default__", `q"\`)
	}
	if g.chance(20) {
		// A small pool, so that duplicates happen.
		a.JobID = fmt.Sprintf("c%d", 1+g.r.IntN(4))
		switch n := g.r.IntN(100); {
		case n < 15:
			// Refused by both: they look like integers (issue 10.9).
			a.JobID = g.pick("1234567890123456", "100000000000000000000", "007")
		case n < 30:
			// Ids with odd characters. Taken by both: exactly two ':'
			// (BullMQ's old repeatable job ids), characters of keys and
			// URLs, what parseInt reads as a number but does not print
			// back. Refused by both: other ':' counts, "0" and "0:…".
			a.JobID = g.pick("a:b:c", "x y", "ü/ñ%2F", "+5", "-0", "1e3", " 12", "0x10", "a.b", "tab\tid", "*?[]", "{q}",
				"x:y", "a:b:c:d", "0", "0:5")
		case n < 31 && g.cfg.Known:
			// Ids that are a queue key's name (or a URL path's dot
			// segments): BullMQ 6.7 takes them, drover refuses them (the
			// deliberate entries of Known). Not "events", "wait" and the
			// other keys of another type: BullMQ's add writes a job hash
			// over them and breaks the queue (WRONGTYPE on every later
			// event), which no later step could be compared on.
			a.JobID = g.pick("meta", "de:x:y", "marker:a:b", ".", "..")
		}
	}
	if g.chance(10) {
		// Data that is no object of small keys: both store
		// JSON.stringify of what they are handed.
		a.DataRaw = g.pick(`"str"`, `"żółw\u2028"`, `42`, `-0`, `1e21`, `1.50`, `1E2`, `true`, `null`, `[]`, `{}`,
			`[1,"two",{"b":1,"a":2}]`, `{"b":1,"a":2,"10":3,"2":4}`, `{"a":1,"a":2}`, `{"x":"\ud800"}`, `{"deep":{"n":[null,false]}}`)
	}
	if g.chance(20) {
		a.Delay = int64(1+g.r.IntN(3)) * Hour
	}
	if g.chance(25) {
		a.Priority = 1 + g.r.IntN(5)
		if g.chance(8) {
			// The lowest priority: its prioritized score,
			// priority * 2^32 + counter, is near 2^53.
			a.Priority = drover.MaxPriority
		}
	}
	if g.chance(15) {
		a.LIFO = true
		if g.chance(30) {
			// What a Node producer may store (lifo: process.env.LIFO):
			// BullMQ reads it by JS truthiness in its worker and retries,
			// by Lua's in its scripts.
			a.LIFO, a.LIFORaw = false, []any{"false", "0", "", 0, 1}[g.r.IntN(5)]
		}
	}
	if g.chance(40) {
		a.Attempts = 1 + g.r.IntN(4)
		if g.chance(60) {
			a.Backoff = g.backoff()
		}
	}
	if g.chance(30) {
		a.RemoveOnComplete = g.retention()
	}
	if g.chance(30) {
		a.RemoveOnFail = g.retention()
	}
	if g.chance(15) {
		d := &Dedup{ID: fmt.Sprintf("d%d", 1+g.r.IntN(2))}
		switch g.r.IntN(4) {
		case 1:
			d.TTL = Hour
		case 2:
			d.TTL, d.Extend = Hour, true
		case 3:
			d.TTL, d.Replace = Hour, true
		}
		if g.chance(30) {
			d.KeepLastIfActive = true
		}
		if g.chance(40) {
			d.Reschedule = true
		}
		if a.Delay == 0 && g.chance(40) {
			// A delayed owner is what replace and reschedule act on.
			a.Delay = int64(1+g.r.IntN(3)) * Hour
		}
		a.Dedup = d
	}
	if g.chance(15) {
		a.KeepLogs = 1 + g.r.IntN(3)
	}
	if g.chance(10) {
		a.StackTraceLimit = 1 + g.r.IntN(2)
	}
	if g.chance(6) {
		// The telemetry option as a producer without a tracer passes it
		// on: stored as opts tm and omc, whichever side adds the job.
		a.TelemetryMeta = g.pick("", `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, "x")
		a.OmitContext = a.TelemetryMeta == "" || g.chance(30)
	}
	if g.chance(8) {
		// The data's JSON is 7 bytes ({"n":1}), 8 from the tenth job on,
		// a few dozen with a string: 7 refuses most, 1000 none.
		a.SizeLimit = g.pickI(7, 1000)
	}
	if g.chance(8) {
		// 17 minutes off the whole hours: the due time counts from the
		// step's instant, the same in both runs, and a job added without
		// a timestamp counts from its own script's clock, a few ms later
		// in one run than in the other; due times a whole number of hours
		// apart tied in one run and not in the other (seed 93649858).
		// Whole minutes: delayed scores compare to the minute.
		a.TimestampAgo = g.pickI64(Hour+17*60_000, 2*Hour+17*60_000, -43*60_000)
	}
	if len(g.names) > 0 && g.chance(20) {
		a.Parent = g.job()
		if len(g.others) > 0 && g.chance(25) {
			// A parent in the other queue: a flow child there.
			a.Parent, a.ParentInOther = g.others[g.r.IntN(len(g.others))], true
		}
		if g.chance(40) {
			a.OnParentFailure = g.pick("failParentOnFailure", "ignoreDependencyOnFailure", "removeDependencyOnFailure", "continueParentOnFailure")
		}
	}
	g.names = append(g.names, a.Name)
	return a
}

func (g *gen) backoff() *Backoff {
	switch g.r.IntN(6) {
	case 0:
		return &Backoff{Type: "fixed", Delay: Hour, Number: true}
	case 1, 2:
		return &Backoff{Type: "fixed", Delay: int64(1+g.r.IntN(2)) * Hour}
	case 3:
		if g.jittered {
			return &Backoff{Type: "exponential", Delay: Hour}
		}
		// Each run draws its own jitter, so a jittered due time must not
		// decide an order the two runs are compared on: one such job per
		// program, on JitterBase (25, 50, 100, 200 min: at least 10 min
		// from every other due time, whole hours), and jitter small enough
		// that the due time stays within half a minute of the delay
		// (delayed scores compare to the minute): 0.001 of 200 min is 12 s.
		// Two jittered jobs, or one on whole hours, were promoted in an
		// order that differed from run to run (seed 526733769).
		g.jittered = true
		return &Backoff{Type: "exponential", Delay: JitterBase, Jitter: g.pickF(0.0005, 0.001)}
	case 4:
		return &Backoff{Type: "exponential", Delay: Hour}
	default:
		return &Backoff{Type: g.pick("zero", "stop")}
	}
}

// keepJobs is a worker's retention: BullMQ's KeepJobs object ({count},
// {age, count}, {age, limit}).
func (g *gen) keepJobs() *Retention {
	c := g.r.IntN(3)
	switch g.r.IntN(3) {
	case 0:
		return &Retention{Object: true, Count: &c}
	case 1:
		return &Retention{Object: true, Age: 3600, Count: &c}
	default:
		return &Retention{Object: true, Age: 3600 * int64(1+g.r.IntN(2)), Limit: g.r.IntN(3)}
	}
}

func (g *gen) retention() *Retention {
	t, f := true, false
	switch g.r.IntN(6) {
	case 0:
		return &Retention{Bool: &t}
	case 1:
		return &Retention{Bool: &f}
	case 2:
		c := 1 + g.r.IntN(3)
		return &Retention{Count: &c}
	case 3:
		c := 1 + g.r.IntN(3)
		if g.chance(30) {
			c = 0
		}
		return &Retention{Object: true, Count: &c}
	case 4:
		c := 1 + g.r.IntN(3)
		if g.chance(30) {
			c = 0
		}
		return &Retention{Object: true, Age: 3600, Count: &c}
	default:
		return &Retention{Object: true, Age: 3600 * int64(1+g.r.IntN(2)), Limit: g.r.IntN(3)}
	}
}

// token is a manual step's lock token: mostly the one the takes use, so
// most finishes hold the lock and some do not.
func (g *gen) token() string {
	if g.chance(85) {
		return "tA"
	}
	return "tB"
}

// manualFinish ends the oldest manually taken job as a work step would,
// or moves it back to wait, or renews its lock.
func (g *gen) manualFinish() Step {
	s := g.work()
	s.Op, s.Token, s.Metrics = OpManualFinish, g.token(), 0
	s.WorkerRemoveOnComplete, s.WorkerRemoveOnFail = nil, nil
	s.LimiterMax, s.MaxStarted, s.Concurrency = 0, 0, 0
	if s.Outcome.Kind == "rateLimited" {
		s.Outcome = &Outcome{Kind: "wait"} // a processor's outcome only
	}
	s.Outcome.FetchNext = false
	switch g.r.IntN(10) {
	case 0:
		s.Outcome = &Outcome{Kind: "wait"}
	case 1:
		s.Outcome = &Outcome{Kind: "extend"}
	}
	switch s.Outcome.Kind {
	case "complete", "fail", "unrecoverable":
		// BullMQ's fetchNext: the finish takes the next job too.
		s.Outcome.FetchNext = g.chance(40)
	}
	return s
}

// batchWork is a batch finish (Step.Concurrency): a work step of the
// program's queue at concurrency 2 to 4 whose outcome fetches, mostly
// completions; Generate puts a backlog before most of them.
func (g *gen) batchWork() Step {
	for {
		s := g.work()
		if s.Outcome.Kind == "rateLimited" {
			continue
		}
		if g.chance(50) {
			s.Outcome = &Outcome{Kind: "complete", Value: g.value()}
		}
		s.Outcome.FetchNext, s.OtherQueue, s.MaxStarted = true, false, 0
		s.Concurrency = g.pickI(2, 3, 4)
		return s
	}
}

func (g *gen) work() Step {
	var o Outcome
	switch n := g.r.IntN(10); {
	case n < 5:
		o = Outcome{Kind: "complete", Value: g.value()}
	case n < 8:
		o = Outcome{Kind: "fail", Message: g.pick("boom", "bad input")}
		if g.chance(10) {
			// A failure reason with odd characters, or none.
			o.Message = g.pick("", "two\nlines", "żółw ✓ <&>", `quote"back\`)
		}
	case n < 9:
		o = Outcome{Kind: "unrecoverable", Message: "fatal"}
	default:
		o = Outcome{Kind: "delay", Delay: int64(1+g.r.IntN(2)) * Hour}
	}
	if g.chance(8) {
		// The processor meets a rate limit: it calls rateLimit and gives
		// the job back (Worker.RateLimitError / ErrRateLimited).
		o = Outcome{Kind: "rateLimited", Delay: Hour}
	}
	// Sometimes the queue of flow children in OtherQueueName; sometimes a
	// worker that keeps metrics.
	// Sometimes the finish takes the next job, which runs too: the path
	// of a running worker (moveToFinished with fetchNext).
	o.FetchNext = g.chance(25)
	s := Step{Op: OpWork, Outcome: &o, OtherQueue: g.chance(g.across(12, 40))}
	if g.chance(35) {
		s.Metrics = g.pickI(1, 2, 60)
	}
	if g.chance(15) {
		s.WorkerRemoveOnComplete = g.keepJobs()
	}
	if g.chance(15) {
		s.WorkerRemoveOnFail = g.keepJobs()
	}
	if g.chance(12) {
		// A worker limiter of 1 or 2 takes an hour: a second or third
		// work step meets it (also beside a global rate limit, whose max
		// wins while the worker's window wins).
		s.LimiterMax = g.pickI(1, 2)
	}
	if g.chance(12) {
		// maxStartedAttempts: stalls, rate-limited give-backs and moves
		// back to wait start a job again without an attempt made.
		s.MaxStarted = g.pickI(1, 2)
	}
	if o.FetchNext && s.MaxStarted == 0 && o.Kind != "rateLimited" && g.chance(40) {
		// A worker at concurrency 2 to 4 whose jobs finish together
		// while more wait: one result write of them all that fetches
		// the next jobs for every slot (finishJobs with an RPOP count
		// above 1), Node's finishes one at a time.
		s.Concurrency = g.pickI(2, 3, 4)
	} else if !o.FetchNext && s.MaxStarted == 0 && g.chance(15) {
		// A worker at concurrency 2: two jobs taken, both in flight, then
		// finished one after the other.
		s.Concurrency = 2
	}
	return s
}

// deferredFailures reports whether a program may leave a job that must
// not run in wait: a child whose failure fails its parent (the parent's
// deferred failure), or a stall (a job stalled too often).
func deferredFailures(p *Program) bool {
	for _, d := range []*Add{p.Defaults, p.OtherDefaults} {
		if d != nil && d.OnParentFailure == "failParentOnFailure" {
			return true
		}
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Op == OpStall {
			return true
		}
		for _, a := range s.adds() {
			if a.OnParentFailure == "failParentOnFailure" {
				return true
			}
		}
	}
	return false
}
