package difftest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// Difference is one difference between a Node BullMQ run and a drover run
// that the tester accepts. This file is the one place that lists them.
type Difference struct {
	Name   string
	Reason string
}

// Deliberate are the differences the comparison removes (Comparable
// applies exactly these), each with why it is not a format difference.
var Deliberate = []Difference{
	{"meta.version", "Node's Queue writes \"bullmq:<version>\" into meta; drover writes none. Informational only (spec §7), nothing parses it."},
	{"add call records", "drover's <queue>:add:<token> string, which makes a retried addJobs call store its jobs once (docs/design.md), expires after QueueOptions.AddRetryWindow; Node never reads it."},
	{"drover.attempts", "drover's attempt timeline, a job hash field Node ignores and deletes with the hash (spec §2.1 allows extra fields)."},
	{"stacktrace text", "each language's stack dump (a JS Error.stack vs a Go error's text); the number of entries is compared."},
	{"marker after a work step", "markers are wake-up hints consumed by blocked workers; drover's fetch writes its cascade marker only when more jobs are ready (fewer wake-ups). Compared until the first work, stall or stalled-check step."},
	{"finished-set order within a millisecond", "completed/failed scores are finishedOn ms; jobs finished in the same ms are ordered by member, so the order depends on speed. Members are compared as sets, finishing order through the events stream."},
	{"delayed scores as minutes from the run's start", "both runs use the real clock (Node BullMQ takes Date.now() in its scripts), so a delayed score is compared as the whole minutes between the run's start and the due time; every generated delay is a whole number of hours, so this is exact. Same-minute members keep their order unless the program has jitter."},
	{"event order of a removal cascade", "removing a flow's jobs (remove, drain, clean, obliterate, removeUnprocessedChildren) walks a parent's dependencies set, whose SMEMBERS order depends on the member strings, which carry the run's prefix: two all-Node runs write the same events in different orders. The events such a step writes are compared sorted (SortEvents)."},
	{"delay field to the second", "BullMQ's moveToDelayed stores the due time minus its script's clock, read a few ms after the processor computed the due time (7199992 for a 2 h delay); the job hash's delay field is compared rounded to the second."},
	{"delay of a scheduler run", "a job scheduler's run stores in its delay field and opts.delay its due time minus the adding script's clock, which differs between the runs by a few ms at any fraction of a second; a run's (opts with repeat) delay is masked: its due time is in its id and its delayed score (compared to the minute)."},
	{"backoff delay of a jittered job", "the job hash's delay field of a job with backoff jitter is a random draw on each side, and so is its due time (up to 14.4 s apart, which may round to different minutes): a delayed job whose delay field is a jittered draw is compared by membership, its score masked."},
	{"timestamps, stream ids, lock tokens", "statedump.Normalize: every 13-digit ms value, stream entry id and lock token differs between runs by construction."},
	{"error text", "a refused step is compared as refused on both sides; Node's and drover's messages differ by design (drover wraps with the operation and job)."},
	{"remove of a missing job", "Node's Queue.remove returns 1 for a job that does not exist, drover's Job.Remove returns ErrJobNotFound (a Go sentinel to branch on): both are compared as done; the states must still agree."},
	{"a BullMQ worker's remembered rate limit", "a BullMQ Worker that met the rate limiter keeps the limit's end in process (limitUntil) and takes nothing until then, even after removeRateLimitKey or removeGlobalRateLimit; drover's Worker.NextJob asks Redis on every call. The harness' Node manual take forgets the remembered limit first, so both takes are decided by Redis alone."},
	{"metrics across a minute", "a worker's metrics (<queue>:metrics:completed|failed) count per wall-clock minute: when a minute begins between the two runs' writes of one work step (the runs take turns, a few ms apart), their prevCount and per-minute data differ by the clock alone. From such a step on, a program's metrics are compared by count and prevTS, and getMetrics by its count (NormContext.MetricsSkew)."},
	{"Node remove of a locked job", "Node's Queue.remove returns 0 for a locked job, drover's Job.Remove returns ErrJobLocked: both are compared as refused."},
}

// KnownDivergence is a divergence from BullMQ that is being fixed: the
// generator leaves its inputs out unless Config.Known is set, and a
// campaign that finds it reports it as known.
type KnownDivergence struct {
	Issue  string // e.g. "10.1"
	Name   string
	Status string
	// Uses reports whether a program uses the input that shows it.
	Uses func(p *Program) bool
	// Mask, for a divergence any program may show, removes it from a
	// dump; Comparable applies it unless NormContext.Known is set.
	Mask func(s *statedump.Snapshot, queue string)
	// Refusal, for a deliberate refusal, is the error drover refuses the
	// diverging step with where Node carries it out; RefusalText, if set,
	// must be in its message too.
	Refusal     error
	RefusalText string
	// BothRefused, for a step both refuse, says the entry explains a state
	// difference its Mask removes (then Refusal nil means any refusal).
	// Such a Mask is applied only to classify, never by Comparable.
	BothRefused bool
}

// Known are the divergences of issue 10 whose fixes are in progress.
var Known = []KnownDivergence{
	// 10.8 (data bytes: U+2028/U+2029, <>&) and 10.9 (integer-looking
	// custom ids) are fixed: the generator makes their inputs always. So are
	// 10.1 (keepLastIfActive adds now generated), 10.2, 10.3, 10.4 and 10.7
	// (regression tests in internal/interoptest/parity_test.go), 10.5
	// (every retention shape, {count:0} and {count:n} included) and the
	// campaign's "drained" after a move to delayed (regression tests in
	// internal/interoptest/random_regress_test.go). The harness' drover
	// work step now fetches no next job when it fails a job with a
	// deferred failure, as the oracle's step (TestDifferentialRegression-
	// DeferredFailureStep). So is "batch-refused" (a batch finish stops at
	// a refused completion: TestDifferentialRegressionBatchRefusedBefore-
	// Later).
	//
	// The entries below are deliberate: drover differs on purpose, and the
	// README's compatibility table says so with the same reason.
	{"deliberate", "flow with a job id that is already another parent's child: drover refuses the whole tree (ErrParentConflict, Redis untouched); BullMQ 6.7 adds the rest of the tree and leaves the existing job under its first parent",
		"deliberate (README)", nil, nil, drover.ErrParentConflict, "", false},
	{"deliberate", "flow with a job id used twice in the tree (e.g. a child with its parent's id): drover refuses the tree (ErrInvalidJobID, Redis untouched); BullMQ 6.7 stores the job once and makes it its own child, so it waits for itself for ever",
		"deliberate (README)", nil, nil, drover.ErrInvalidJobID, "is also the id of", false},
	{"deliberate", "drain with a job scheduler's run in wait: BullMQ 6.7's drain keeps the run (it must not remove a scheduler's current run) but then trims as many ids as it removed from the head of the list, so a run ahead of removed jobs loses its id (the scheduler never runs again) and a removed job's id stays without its hash; a Node worker then takes that id and runs a job with no hash, a drover worker drops it. drover's drain removes exactly the drained jobs",
		"deliberate (README; BullMQ bug)", schedulerThenDrain, nil, nil, "", false},
	{"deliberate", "replacing a job scheduler while the queue is paused: BullMQ 6.7's upsert looks for the current run in the legacy paused list, but a paused queue's jobs are in wait, so the old run stays there and runs after resume beside the new schedule's runs (its hash and id left over); drover removes it from wait as it does when the queue is not paused",
		"deliberate (README; BullMQ bug)", upsertAgainWhilePaused, nil, nil, "", false},
	{"deliberate", "an add both refuse: BullMQ 6.7 may draw an id counter value before it refuses (e.g. a parent-linked add whose id is already another parent's child), drover's refusal leaves Redis untouched (the project's rule for bad input)",
		"deliberate (README)", nil, dropIDCounter, nil, "", true},
	{"deliberate", "a job whose backoff type the worker has no strategy for: a drover worker fails it for good at its first failure (reason: unknown backoff strategy); a BullMQ 6.7 worker throws in moveToFailed and leaves it in active for the stalled check. Programs use only types both sides register, so no input shows it (TestInteropUnknownBackoffType pins drover's side)",
		"deliberate (README)", nil, nil, nil, "", false},
	{"deliberate", "a job taken by hand that must not run (a deferred failure: a child with failParentOnFailure failed, or the stalled check found it stalled more than maxStalledCount times): drover's Worker.NextJob fails it as its processing worker does and takes the next; BullMQ 6.7's getNextJob hands it to the caller, who must check job.deferredFailure",
		"deliberate (README)", manualTakeOfDeferredFailure, nil, nil, "", false},
	{"deliberate", "a finish by hand with fetchNext that takes a job scheduler's run: drover's CompleteAndNext/FailAndNext create the scheduler's next run, as its NextJob and processing workers do; BullMQ 6.7's moveToCompleted/moveToFailed(fetchNext) return the raw job data and only a Worker's own fetch (nextJobFromJobData) creates it, so a Node caller who goes on with that data leaves the scheduler without a next run (campaign seed 80129655)",
		"deliberate (README)", manualFetchNextWithScheduler, nil, nil, "", false},
	{"deliberate", "removeOrphanedJobs after a worker with the metrics option failed a job: BullMQ 6.7 takes the failed-metrics hash (<queue>:metrics:failed) for the failed sub-key of a job called \"metrics\" (metrics is not among its queue keys) and deletes it, counting one orphan; drover never takes metrics keys for jobs and counts none (campaign seed 508424454)",
		"deliberate (README; BullMQ bug)", orphansAfterFailedMetrics, nil, nil, "", false},
	{"deliberate", "default job options with a failure policy (QueueOptions.DefaultJobOptions / FlowProducerOptions.DefaultJobOptions ParentPolicy) and a job whose own policy is another: drover adds the job with its own policy (a default fills only what the job leaves unset, and ParentPolicy is one field); BullMQ 6.7 merges defaultJobOptions and the job's options key by key, so the job has two of the exclusive failParentOnFailure/continueParentOnFailure/ignoreDependencyOnFailure/removeDependencyOnFailure and is refused (the whole flow, for FlowProducer.add)",
		"deliberate (README)", policyOverDefaultPolicy, nil, nil, "", false},
	{"deliberate", "removeOrphanedJobs of an orphaned job with id 1 while a job is delayed: BullMQ 6.7 looks for a candidate in every sorted set, list and set among the queue's keys, the marker zset included, whose delay marker is member \"1\", so it keeps that orphan (and would keep one whose id is a job scheduler's, a member of repeat); drover looks only in the job states (wait, paused, active, prioritized, delayed, waiting-children, completed, failed, stalled) and removes it (campaign seed 820492980)",
		"deliberate (README; BullMQ bug)", orphanWhileDelayed, nil, nil, "", false},
	{"deliberate", "a flow whose root has a parent link to a missing job and the id of an existing job: BullMQ 6.7's FlowProducer.add refuses the root (missing parent) but its transaction still adds the children, under the existing job of that id, which never waits for them; drover refuses the whole tree and leaves Redis untouched (campaign seed 215697440)",
		"deliberate (README; BullMQ bug)", linkedRootWithID, nil, nil, "", false},
	{"deliberate", "getDependencies' failed page past the first (failed: {cursor, count}, cursor > 0): BullMQ 6.7 reads ZRANGE cursor..count-1 of the unsuccessful set, none once cursor >= count; drover's GetDependencies reads the page at the cursor (both answer cursor + count as the next cursor)",
		"deliberate (README; BullMQ bug)", failedPagePastFirst, nil, nil, "", false},
	{"deliberate", "a worker at concurrency above 1 that takes a job scheduler's run with other jobs: drover's worker takes up to its free slots in one call (one script, whose takes are done before it looks at any job) and creates the scheduler's next run after that call, so the next run's added/delayed events follow the other taken jobs' active; BullMQ 6.7's worker takes one job per call and creates the next run before its next take. The jobs taken, the next run and the final state agree (campaign seed 576813317)",
		"deliberate (README)", schedulerRunInPair, nil, nil, "", false},
	{"deliberate", "a custom job id that is a queue key's name (meta, de:…, dn:…, metrics:…, marker:…, id, events, wait and the other state keys): BullMQ 6.7 takes it and writes the job's hash over the queue's key of that name (over meta it reports the add as a duplicate of the meta hash, over a list, stream or sorted set the add fails half-written and every later write to that key fails with WRONGTYPE); drover's ValidateJobID refuses it (ErrInvalidJobID, Redis untouched)",
		"deliberate (README)", nil, nil, drover.ErrInvalidJobID, "collides with a queue key name", false},
	{"deliberate", "a custom job id \".\" or \"..\": BullMQ 6.7 takes it; drover's ValidateJobID refuses it (ErrInvalidJobID, Redis untouched), as no URL path can carry it (the dashboard's and inspect's job routes)",
		"deliberate (README)", nil, nil, drover.ErrInvalidJobID, "a URL path cannot carry it", false},
	{"deliberate", "a call on a job Node stored under an id that names a queue key (de:x:y, marker:a:b, meta, ...; see the entry above): drover's job calls check a stored id (keys.CheckStoredJobID) and refuse one whose hash key is a queue key, not a job (ErrInvalidJobID), where BullMQ 6.7 reads or writes that key as the job's",
		"deliberate (README)", nil, nil, drover.ErrInvalidJobID, ", not a job", false},
	{"deliberate", "removing the parent of a flow child whose id has two ':' (a:b:c): BullMQ 6.7 reads the child's key at its last ':' (queue <prefix>:<queue>:a:b, id c), so it deletes the child's hash but leaves its id in wait, and writes the removal's event and meta into a queue a:b of that name; drover's removal writes the same. On that state Node's getState answers waiting (the id is in the list) and drover's GetJobState unknown (no hash)",
		"deliberate (README; BullMQ bug)", colonChildID, nil, nil, "", false},
	{"deliberate", "a job scheduler upserted with a template whose name is empty: BullMQ 6.7 takes `name ?? schedulerId`, so an empty name stays empty in the scheduler and its runs; drover's JobTemplate.Name \"\" means the scheduler id (Go cannot tell an empty name from none), which is also Node's name for a template without one",
		"deliberate (README)", emptyNamedTemplate, nil, nil, "", false},
	{"deliberate", "generated ids that repeat or are taken (the id counter set back below existing jobs' ids, or past 10^14, where both sides' scripts write the counter with Lua's 14 significant digits, so 100000000000000 and 100000000000001 are both \"1e+14\"): BullMQ 6.7 and drover alike write the add over the existing hash and push the id into wait again, so one id can be in wait twice; once one of them finishes without keeping its hash or is removed, Node's getState answers waiting (the id is still in the list) and drover's GetJobState unknown (no hash: drover never searches wait, O(n) in the backlog, for a job it has no hash of) (campaign seeds 183697377, 183697570, 183697728)",
		"deliberate (README)", IDCounterCollides, nil, nil, "", false},
}

// IDCounterCollides reports whether a program sets its id counter where
// generated ids repeat (past 10^14) or meet the program's own jobs (back
// to a small value, or to a value it set before).
func IDCounterCollides(p *Program) bool {
	set := false
	var highest int64
	for _, s := range p.Steps {
		if s.Op != OpSetIDCounter {
			continue
		}
		if s.Delay < 1000 || s.Delay >= 99_999_999_999_900 {
			return true
		}
		if set && s.Delay <= highest {
			// Back to a value the program set before: the ids drawn
			// since come again (campaign seed 2002806).
			return true
		}
		set, highest = true, max(highest, s.Delay)
	}
	return false
}

// schedulerRunInPair reports whether a program has a job scheduler and a
// work step at concurrency 2, which may take its run with another job.
func schedulerRunInPair(p *Program) bool {
	sched := false
	for _, s := range p.Steps {
		switch {
		case s.Op == OpUpsertScheduler:
			sched = true
		case s.Op == OpWork && s.Concurrency > 1 && sched:
			return true
		}
	}
	return false
}

// linkedRootWithID reports whether a program adds a flow whose root has a
// custom id, a parent link and children.
func linkedRootWithID(p *Program) bool {
	for _, s := range p.Steps {
		if s.Op == OpAddFlow && s.Add != nil && s.Add.Parent != "" && s.Add.JobID != "" && len(s.Children) > 0 {
			return true
		}
	}
	return false
}

// orphanWhileDelayed reports whether a program orphans a job, removes
// orphans, and may have a delayed job at the time (BullMQ's delay marker,
// member "1" of the marker zset).
func orphanWhileDelayed(p *Program) bool {
	orphan, removal, delayed := false, false, p.Defaults != nil && (p.Defaults.Delay > 0 || p.Defaults.Backoff != nil)
	for i := range p.Steps {
		s := &p.Steps[i]
		switch s.Op {
		case OpOrphan, OpStaleHash:
			// (A stale hash at the next id is an orphan until an add
			// writes over it: fixed seed 21.)
			orphan = true
		case OpRemoveOrphanedJobs:
			removal = true
		case OpUpsertScheduler, OpChangeDelay:
			delayed = true
		case OpWork, OpManualFinish:
			if k := s.Outcome.Kind; k == "delay" || k == "rateLimited" || k == "fail" {
				delayed = true
			}
		}
		for _, a := range s.adds() {
			if a.Delay > 0 || a.Backoff != nil {
				delayed = true
			}
		}
	}
	return orphan && removal && delayed
}

// failedPagePastFirst reports whether a program reads a page of a job's
// failed children from a cursor past 0.
func failedPagePastFirst(p *Program) bool {
	for _, s := range p.Steps {
		if s.Op == OpFlowRead && s.Read == ReadDependenciesPage && s.Priority > 0 && slices.Contains(s.Types, "failed") {
			return true
		}
	}
	return false
}

// policyOverDefaultPolicy reports whether a program has a default failure
// policy for a queue and adds there, where the defaults apply (every add
// but OpAddFlows'), a job with another policy of its own.
func policyOverDefaultPolicy(p *Program) bool {
	policy := func(d *Add) string {
		if d == nil {
			return ""
		}
		return d.OnParentFailure
	}
	mine, other := policy(p.Defaults), policy(p.OtherDefaults)
	if mine == "" && other == "" {
		return false
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Op == OpAddFlows {
			continue
		}
		for _, a := range s.adds() {
			d := mine
			if a.OtherQueue || s.Op == OpAdd && s.OnOtherQueue() {
				d = other
			}
			if d != "" && a.OnParentFailure != "" && a.OnParentFailure != d {
				return true
			}
		}
	}
	return false
}

// orphansAfterFailedMetrics reports whether a program removes orphaned
// jobs and may have written failed-job metrics before (a work step or the
// manual workers with the metrics option) in the program's queue.
func orphansAfterFailedMetrics(p *Program) bool {
	metrics := p.Manual != nil && p.Manual.Metrics > 0
	for _, s := range p.Steps {
		switch {
		case s.Op == OpWork && s.Metrics > 0 && !s.OnOtherQueue():
			metrics = true
		case s.Op == OpRemoveOrphanedJobs && metrics:
			return true
		}
	}
	return false
}

// manualFetchNextWithScheduler reports whether a program has a job
// scheduler and finishes a job by hand with fetchNext, which may take the
// scheduler's run.
// colonChildID reports whether a program adds a job with a parent whose
// id has a ':' (only ids with exactly two are taken).
func colonChildID(p *Program) bool {
	var walk func(a *Add, child bool) bool
	walk = func(a *Add, child bool) bool {
		if (child || a.Parent != "") && strings.Contains(a.JobID, ":") {
			return true
		}
		for _, c := range a.Children {
			if walk(c, true) {
				return true
			}
		}
		return false
	}
	for _, s := range p.Steps {
		switch s.Op {
		case OpAddFlow:
			if walk(s.Add, false) {
				return true
			}
			for _, c := range s.Children {
				if walk(c, true) {
					return true
				}
			}
		case OpAdd, OpAddBulk, OpAddFlows:
			for _, a := range s.adds() {
				if s.Op != OpAddFlows && walk(a, false) {
					return true
				}
			}
			if s.Op == OpAddFlows {
				for _, root := range s.Children {
					if walk(root, false) {
						return true
					}
				}
			}
		}
	}
	return false
}

// emptyNamedTemplate reports whether a program upserts a job scheduler
// whose template's name is empty.
func emptyNamedTemplate(p *Program) bool {
	for _, s := range p.Steps {
		if s.Op == OpUpsertScheduler && s.Add != nil && s.Add.JobName == NoName {
			return true
		}
	}
	return false
}

func manualFetchNextWithScheduler(p *Program) bool {
	sched := false
	for _, s := range p.Steps {
		switch {
		case s.Op == OpUpsertScheduler:
			sched = true
		case s.Op == OpManualFinish && s.Outcome != nil && s.Outcome.FetchNext && sched:
			return true
		}
	}
	return false
}

// manualTakeOfDeferredFailure reports whether a program takes jobs by hand
// and has a child whose failure fails its parent, or stalls a job and
// checks for stalled jobs: the parent, or a job stalled more than
// maxStalledCount times, then waits with a deferred failure, which
// drover's NextJob writes and Node's getNextJob hands to the caller
// (campaign seed 93649186).
func manualTakeOfDeferredFailure(p *Program) bool {
	take, deferred, stall := false, false, false
	for _, s := range p.Steps {
		switch s.Op {
		case OpManualTake:
			take = true
		case OpStall:
			stall = true
		case OpCheckStalled:
			deferred = deferred || stall
		}
		for _, a := range s.adds() {
			if a.OnParentFailure == "failParentOnFailure" {
				deferred = true
			}
		}
	}
	return take && deferred
}

// dropIDCounter removes the queue's id counter from a dump.
func dropIDCounter(s *statedump.Snapshot, queue string) { delete(s.Keys, queue+":id") }

// upsertAgainWhilePaused reports whether a program upserts a scheduler id
// it made before, after a pause of the program's queue.
func upsertAgainWhilePaused(p *Program) bool {
	paused := false
	made := map[string]bool{}
	for _, s := range p.Steps {
		switch s.Op {
		case OpPause:
			// The program's queue, where its schedulers are.
			paused = paused || !s.OnOtherQueue()
		case OpUpsertScheduler:
			if paused && made[s.Scheduler.ID] {
				return true
			}
			made[s.Scheduler.ID] = true
		}
	}
	return false
}

// schedulerThenDrain reports whether a program drains its queue after it made a job
// scheduler: where BullMQ 6.7's drain may trim the wrong ids.
func schedulerThenDrain(p *Program) bool {
	sched := false
	for _, s := range p.Steps {
		switch s.Op {
		case OpUpsertScheduler:
			sched = true
		case OpDrain:
			if sched && !s.OnOtherQueue() {
				return true
			}
		}
	}
	return false
}

// EventRange names the entries of an events stream one step wrote: those
// whose ids are above After and up to Upto (stream ids, "ms-seq"; After
// "0-0" when the stream was empty). Ids, not positions: a trim (a capped
// stream's MAXLEN ~, trimEvents) removes entries from the head, which
// moves every position but no id (campaign seed 30 of the fixed set).
type EventRange struct {
	After, Upto string
	// Written is how many entries the step wrote (0: not known). When a
	// trim (a capped stream) has removed some of them, which ones it
	// removed depends on the order they were written in, so what is left
	// of the range is compared by its count alone (campaign seed 9500160).
	Written int
}

// trimmedCascade is the fields of an entry of a removal cascade's range
// that a trim cut into (see EventRange.Written).
var trimmedCascade = []string{"event", "<removal cascade, partly trimmed>"}

// SortEvents sorts the stream entries in r by their fields, so that the
// events of one step compare as a multiset. Entries a trim removed are
// not there to sort; when some of the range's are gone, the rest are
// masked (see EventRange.Written).
func SortEvents(st []statedump.StreamEntry, r EventRange) {
	from := slices.IndexFunc(st, func(e statedump.StreamEntry) bool { return streamIDLess(r.After, e.ID) })
	if from < 0 {
		return
	}
	to := from
	for to < len(st) && !streamIDLess(r.Upto, st[to].ID) {
		to++
	}
	if r.Written > 0 && to-from < r.Written {
		for i := from; i < to; i++ {
			st[i].Fields = trimmedCascade
		}
		return
	}
	slices.SortStableFunc(st[from:to], func(a, b statedump.StreamEntry) int {
		return strings.Compare(strings.Join(a.Fields, "\x00"), strings.Join(b.Fields, "\x00"))
	})
}

// streamIDLess reports whether stream id a is below b ("ms-seq", compared
// as numbers; an id that does not parse is below every other).
func streamIDLess(a, b string) bool {
	am, as := splitStreamID(a)
	bm, bs := splitStreamID(b)
	return am < bm || am == bm && as < bs
}

func splitStreamID(id string) (ms, seq uint64) {
	m, q, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(q, 10, 64)
	return ms, seq
}

// KnownForRefusal returns the deliberate difference that explains a
// divergence at a step drover refused with err, or nil: where Node carried
// the step out (bothRefused false), or where Node refused it too and the
// entry's Mask, applied to each of queues (the program's and those its
// steps act on), makes the diverging states a and b equal.
func KnownForRefusal(err error, bothRefused bool, a, b *statedump.Snapshot, queues ...string) *KnownDivergence {
	for i := range Known {
		k := &Known[i]
		if k.BothRefused != bothRefused || (k.Refusal == nil && !k.BothRefused) {
			continue
		}
		if k.Refusal != nil && (!errors.Is(err, k.Refusal) || !strings.Contains(err.Error(), k.RefusalText)) {
			continue
		}
		if !bothRefused {
			return k
		}
		if a != nil && b != nil && k.Mask != nil {
			ca, cb := a.Clone(), b.Clone()
			for _, q := range queues {
				k.Mask(ca, q)
				k.Mask(cb, q)
			}
			if len(statedump.Diff(ca, cb)) == 0 {
				return k
			}
		}
	}
	return nil
}

// KnownFor returns the known divergence that explains a (shrunk)
// program's divergence, or nil: one whose inputs the program uses, or one
// whose Mask makes the two diverging states a and b (normalised, of the
// all-Node and the mixed run) equal. a and b are not modified.
func KnownFor(p *Program, a, b *statedump.Snapshot, queue string) *KnownDivergence {
	// Masks first: they name the difference itself, Uses only the input.
	for i := range Known {
		k := &Known[i]
		if k.Mask != nil && !k.BothRefused && a != nil && b != nil {
			ca, cb := a.Clone(), b.Clone()
			k.Mask(ca, queue)
			k.Mask(cb, queue)
			if len(statedump.Diff(ca, cb)) == 0 {
				return k
			}
		}
	}
	for i := range Known {
		if k := &Known[i]; k.Uses != nil && k.Uses(p) {
			return k
		}
	}
	return nil
}

// DropAddRecords removes drover's add call records ("<queue>:add:<token>"
// strings with an expiry) from a dump: see Deliberate.
func DropAddRecords(s *statedump.Snapshot, queue string) {
	for name, k := range s.Keys {
		if k.Type == statedump.TypeString && k.TTL && strings.HasPrefix(name, queue+":add:") {
			delete(s.Keys, name)
		}
	}
}

// NormContext is what Comparable needs to know about the run.
type NormContext struct {
	// Queue is the queue name (keys are "<queue>:...").
	Queue string
	// Others are the other queues under the prefix the program fills (a
	// flow's children in OtherQueue): their sets are normalised as Queue's.
	Others []string
	// StartMs is the run's start (ms): delayed scores become minutes from it.
	StartMs int64
	// WorkRan drops the marker keys (see Deliberate).
	WorkRan bool
	// Jitter sorts same-minute delayed members by name.
	Jitter bool
	// SortedEvents are ranges of the events stream compared as multisets
	// (see Deliberate, "event order of a removal cascade").
	SortedEvents []EventRange
	// OthersSortedEvents are the same ranges of each other queue's events
	// stream: a cascade that reaches a flow's children there writes their
	// removals in the same member-string order (campaign seed 317003818).
	OthersSortedEvents map[string][]EventRange
	// Known keeps the differences of the Known divergences that have a
	// Mask (campaigns looking for them set it).
	Known bool
	// MetricsSkew masks the metrics' prevCount and data lists (see
	// Deliberate, "metrics across a minute").
	MetricsSkew bool
}

// Comparable removes the Deliberate differences from a raw dump and
// normalises it (statedump.Normalize). raw is modified.
func Comparable(raw *statedump.Snapshot, nc NormContext) (*statedump.Snapshot, error) {
	queues := append([]string{nc.Queue}, nc.Others...)
	for _, q := range queues {
		DropAddRecords(raw, q)
	}
	for name := range raw.Keys {
		if strings.HasPrefix(name, altRel+"::") {
			// drover's keys of no queue under AltPrefixOf's prefix (its
			// queue registry), as statedump.Dump leaves out the run's.
			delete(raw.Keys, name)
		}
	}
	if k := raw.Keys[nc.Queue+":events"]; k != nil {
		for _, r := range nc.SortedEvents {
			SortEvents(k.Stream, r)
		}
	}
	for q, ranges := range nc.OthersSortedEvents {
		if k := raw.Keys[q+":events"]; k != nil {
			for _, r := range ranges {
				SortEvents(k.Stream, r)
			}
		}
	}
	for name, k := range raw.Keys {
		if k.Type != statedump.TypeHash {
			continue
		}
		if strings.HasSuffix(name, ":meta") {
			delete(k.Hash, "version")
		}
		delete(k.Hash, "drover.attempts")
		if st, ok := k.Hash["stacktrace"]; ok {
			var traces []string
			if st != "{}" && st != "[]" { // cjson writes an empty array as {}
				if err := json.Unmarshal([]byte(st), &traces); err != nil {
					return nil, fmt.Errorf("stacktrace of %s: %w", name, err)
				}
			}
			k.Hash["stacktrace"] = fmt.Sprintf("<%d traces>", len(traces))
		}
		if opts, ok := k.Hash["opts"]; ok && strings.Contains(opts, `"jitter"`) {
			var o struct {
				Backoff struct {
					Jitter float64 `json:"jitter"`
				} `json:"backoff"`
			}
			if json.Unmarshal([]byte(opts), &o) == nil && o.Backoff.Jitter > 0 {
				if _, ok := k.Hash["delay"]; ok {
					k.Hash["delay"] = "<jittered>"
				}
			}
		}
		if opts, ok := k.Hash["opts"]; ok && strings.Contains(opts, `"repeat"`) {
			if r, ok := maskRunDelay(opts); ok {
				k.Hash["opts"] = r
				if _, ok := k.Hash["delay"]; ok {
					k.Hash["delay"] = "<run delay>"
				}
			}
		}
		if d, err := strconv.ParseInt(k.Hash["delay"], 10, 64); err == nil {
			k.Hash["delay"] = strconv.FormatInt((d+500)/1000*1000, 10)
		}
	}
	if nc.WorkRan {
		for _, q := range queues {
			delete(raw.Keys, q+":marker")
		}
	}
	if nc.MetricsSkew {
		for _, q := range queues {
			for _, kind := range []string{"completed", "failed"} {
				if k := raw.Keys[q+":metrics:"+kind]; k != nil && k.Type == statedump.TypeHash {
					delete(k.Hash, "prevCount")
				}
				delete(raw.Keys, q+":metrics:"+kind+":data")
			}
		}
	}
	if !nc.Known {
		for _, k := range Known {
			if k.Mask != nil && !k.BothRefused {
				for _, q := range queues {
					k.Mask(raw, q)
				}
			}
		}
	}
	for _, q := range queues {
		if err := normDelayed(raw, q, nc); err != nil {
			return nil, err
		}
	}
	norm, err := statedump.Normalize(raw, &statedump.NormalizeOptions{DelayedScores: statedump.ScoreKeep})
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		for _, set := range []string{"completed", "failed"} {
			if k := norm.Keys[q+":"+set]; k != nil {
				slices.SortFunc(k.ZSet, func(a, b statedump.ZMember) int {
					return cmp.Or(strings.Compare(a.Score, b.Score), strings.Compare(a.Member, b.Member))
				})
			}
		}
	}
	return norm, nil
}

// normDelayed writes queue's delayed scores as whole minutes from the
// run's start (see Deliberate).
func normDelayed(raw *statedump.Snapshot, queue string, nc NormContext) error {
	if k := raw.Keys[queue+":delayed"]; k != nil {
		type scored struct {
			member string
			min    int64
			order  int
		}
		ss := make([]scored, len(k.ZSet))
		for i, z := range k.ZSet {
			f, err := strconv.ParseFloat(z.Score, 64)
			if err != nil {
				return fmt.Errorf("delayed score %q: %w", z.Score, err)
			}
			due := float64(keys.DueOfScore(f))
			mins := int64(math.Round((due - float64(nc.StartMs)) / 60000))
			if j := raw.Keys[queue+":"+z.Member]; j != nil && j.Hash["delay"] == "<jittered>" {
				mins = -1 << 40 // a random due time (see Deliberate): ordered by name, first
			}
			ss[i] = scored{z.Member, mins, i}
		}
		slices.SortStableFunc(ss, func(a, b scored) int {
			if c := cmp.Compare(a.min, b.min); c != 0 || !nc.Jitter {
				return cmp.Or(c, cmp.Compare(a.order, b.order))
			}
			return strings.Compare(a.member, b.member)
		})
		for i, s := range ss {
			score := fmt.Sprintf("<+%dmin>", s.min)
			if s.min == -1<<40 {
				score = "<jittered>"
			}
			k.ZSet[i] = statedump.ZMember{Member: s.member, Score: score}
		}
	}
	return nil
}

// maskRunDelay masks opts.delay of a scheduler run's opts JSON (see
// Deliberate); ok is false when opts is no run's.
func maskRunDelay(opts string) (string, bool) {
	var o map[string]json.RawMessage
	if json.Unmarshal([]byte(opts), &o) != nil || o["repeat"] == nil {
		return "", false
	}
	if _, ok := o["delay"]; ok {
		o["delay"] = json.RawMessage(`"<run delay>"`)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "", false
	}
	return string(b), true
}
