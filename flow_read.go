package drover

// Reading flows (a parent's children and their results, a whole tree) and
// waiting for children added at run time.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
)

// Defaults of GetFlowOptions, BullMQ's.
const (
	FlowDepthDefault       = 10
	FlowMaxChildrenDefault = 20
)

// GetFlowOptions bound the tree GetFlow reads. Nil means defaults.
type GetFlowOptions struct {
	// Depth is how many levels to read, the job itself being the first.
	// Defaults to FlowDepthDefault (10).
	Depth int
	// MaxChildren bounds the children read per job and per kind (processed,
	// pending, failed, ignored). Like BullMQ's it is a hint to Redis's
	// HSCAN/SSCAN: a small set is read whole. Defaults to
	// FlowMaxChildrenDefault (20).
	MaxChildren int
}

// GetFlow reads the flow under job id: the job and, level by level, its
// children (processed, pending, failed, then ignored, as BullMQ's getFlow
// orders them) in whatever queue they are, one round trip per level. A
// child its parent lists whose job is gone (it completed with
// RemoveOnComplete, say, and its return value stays with the parent) is a
// node with a nil Job, named by its Ref, in its place among the others, as
// BullMQ's getFlow keeps an undefined entry for it. It returns
// ErrJobNotFound when the job itself does not exist.
func (q *Queue) GetFlow(ctx context.Context, id string, opts *GetFlowOptions) (*JobNode, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if err := storedIDError(id); err != nil {
		return nil, &JobError{Queue: q.name, JobID: id, Op: "get flow of", Err: err}
	}
	var o GetFlowOptions
	if opts != nil {
		o = *opts
	}
	o.Depth = cmp.Or(o.Depth, FlowDepthDefault)
	o.MaxChildren = cmp.Or(o.MaxChildren, FlowMaxChildrenDefault)
	if o.Depth < 1 || o.MaxChildren < 1 {
		return nil, optionError("GetFlowOptions.Depth and MaxChildren must be at least 1, got %d and %d", o.Depth, o.MaxChildren)
	}
	queues := queueSet{rdb: q.rdb, logger: q.logger, m: map[[2]string]*Queue{{q.Prefix(), q.name}: q}}
	type pending struct {
		q    *Queue
		id   string
		node *JobNode
		up   *JobNode // nil for the root
	}
	root := &JobNode{Ref: JobRef{Prefix: q.Prefix(), Queue: q.name, ID: id}}
	level := []pending{{q: q, id: id, node: root}}
	for depth := o.Depth; len(level) > 0; depth-- {
		reads, err := callWithin(ctx, q, func(ctx context.Context) ([]flowReads, error) {
			reads := make([]flowReads, len(level))
			_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, n := range level {
					reads[i] = queueFlowReads(ctx, p, n.q, n.id, o.MaxChildren, depth > 1)
				}
				return nil
			})
			return reads, err
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read flow of job %q in queue %q: %w", id, q.name, err)
		}
		var next []pending
		for i, n := range level {
			rec, ok, err := jobcodec.DecodeMap(n.id, reads[i].job.Val())
			if err != nil {
				return nil, fmt.Errorf("read flow of job %q in queue %q: %w", id, q.name, err)
			}
			if !ok && n.up == nil {
				return nil, &JobError{Queue: q.name, JobID: id, Op: "get flow of", Err: ErrJobNotFound}
			}
			if n.up != nil {
				n.up.Children = append(n.up.Children, n.node)
			}
			if !ok {
				continue // a removed child: Job stays nil
			}
			n.node.Job = n.q.fromRecord(&rec)
			if depth <= 1 {
				continue
			}
			for _, key := range reads[i].childKeys() {
				ref, err := ParseJobKey(key)
				if err != nil {
					continue // not a job key: no child of BullMQ's or drover's
				}
				cq, err := queues.get(ref.Prefix, ref.Queue)
				if err != nil {
					continue
				}
				next = append(next, pending{q: cq, id: ref.ID, node: &JobNode{Ref: ref}, up: n.node})
			}
		}
		level = next
	}
	return root, nil
}

// flowReads are the pipelined reads of one job of GetFlow.
type flowReads struct {
	job                        *redis.MapStringStringCmd
	processed, ignored, unproc *redis.ScanCmd
	failed                     *redis.StringSliceCmd
}

func queueFlowReads(ctx context.Context, p redis.Pipeliner, q *Queue, id string, count int, children bool) flowReads {
	r := flowReads{job: p.HGetAll(ctx, q.k.Job(id))}
	if children {
		r.processed = p.HScan(ctx, q.k.Processed(id), 0, "", int64(count))
		r.unproc = p.SScan(ctx, q.k.Dependencies(id), 0, "", int64(count))
		r.failed = p.ZRange(ctx, q.k.Unsuccessful(id), 0, int64(count-1))
		r.ignored = p.HScan(ctx, q.k.IgnoredFailures(id), 0, "", int64(count))
	}
	return r
}

// childKeys are the children's job keys: processed, pending, failed,
// ignored.
func (r *flowReads) childKeys() []string {
	if r.processed == nil {
		return nil
	}
	var out []string
	pairs := func(c *redis.ScanCmd) {
		kv, _ := c.Val()
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, kv[i])
		}
	}
	pairs(r.processed)
	unproc, _ := r.unproc.Val()
	out = append(out, unproc...)
	out = append(out, r.failed.Val()...)
	pairs(r.ignored)
	return out
}

// GetChildrenValues returns the return values of the job's completed flow
// children, by child job key ("<prefix>:<queue>:<id>", see ParseJobKey).
func (j *Job) GetChildrenValues(ctx context.Context) (map[string]json.RawMessage, error) {
	if j == nil {
		return nil, errNilJob
	}
	if err := j.storedIDErr("get children values of"); err != nil {
		return nil, err
	}
	if j.queue == nil {
		return map[string]json.RawMessage{}, nil
	}
	m, err := callWithin(ctx, j.queue, func(ctx context.Context) (map[string]string, error) {
		return j.queue.rdb.HGetAll(ctx, j.queue.k.Processed(j.ID)).Result()
	})
	if err != nil {
		return nil, j.err("get children values of", err)
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out, nil
}

// GetIgnoredChildrenFailures returns the failed reasons of the job's
// children that failed with IgnoreDependency or ContinueParent, by child
// job key.
func (j *Job) GetIgnoredChildrenFailures(ctx context.Context) (map[string]string, error) {
	if j == nil {
		return nil, errNilJob
	}
	if err := j.storedIDErr("get ignored children failures of"); err != nil {
		return nil, err
	}
	if j.queue == nil {
		return map[string]string{}, nil
	}
	m, err := callWithin(ctx, j.queue, func(ctx context.Context) (map[string]string, error) {
		return j.queue.rdb.HGetAll(ctx, j.queue.k.IgnoredFailures(j.ID)).Result()
	})
	return m, j.err("get ignored children failures of", err)
}

// GetFailedChildrenValues is GetIgnoredChildrenFailures under its older
// BullMQ name (getFailedChildrenValues, deprecated in BullMQ 6.7 in favour
// of getIgnoredChildrenFailures), kept so code ported from Node reads the
// same. Both read the same hash.
func (j *Job) GetFailedChildrenValues(ctx context.Context) (map[string]string, error) {
	if j == nil {
		return nil, errNilJob
	}
	return j.GetIgnoredChildrenFailures(ctx)
}

// DependencyPage asks for one page of one kind of dependency.
type DependencyPage struct {
	// Cursor is where to go on: 0 to start, then the Next...Cursor of the
	// previous page.
	Cursor uint64
	// Count is the page size, a hint to Redis's scans as in BullMQ (a
	// small set comes whole). Defaults to 20.
	Count int
}

// DependenciesOptions select the kinds of dependency GetDependencies
// pages through. Nil (or all fields nil) reads every kind whole.
type DependenciesOptions struct {
	Processed, Unprocessed, Ignored, Failed *DependencyPage
}

// Dependencies are a flow parent's children by how they stand, each by
// job key ("<prefix>:<queue>:<id>", see ParseJobKey).
type Dependencies struct {
	// Processed are the completed children and their return values.
	Processed map[string]json.RawMessage
	// Unprocessed are the children the job still waits for.
	Unprocessed []string
	// Ignored are children that failed with IgnoreDependency or
	// ContinueParent, with their failed reasons.
	Ignored map[string]string
	// Failed are children that failed with FailParent.
	Failed []string
	// The cursors of the next pages of a paged read. Processed,
	// Unprocessed and Ignored page with Redis's HSCAN/SSCAN, whose cursor
	// is 0 once the scan is over.
	NextProcessedCursor, NextUnprocessedCursor, NextIgnoredCursor uint64
	// NextFailedCursor is the page's Cursor + Count after every page, as
	// BullMQ's nextFailedCursor: it is never 0, since Failed is an offset
	// range of a sorted set. The failed children have all been read once
	// a page holds fewer than Count of them (or none).
	NextFailedCursor uint64
}

// GetDependencies reads the job's flow children. With no pages asked for
// it reads every kind whole; otherwise only the kinds asked for, one page
// each, with BullMQ's getDependencies' cursors. The Failed page holds the
// children at Cursor to Cursor+Count-1; BullMQ 6.7's ends at Count-1
// whatever the cursor, so past the first page it reads none.
func (j *Job) GetDependencies(ctx context.Context, opts *DependenciesOptions) (*Dependencies, error) {
	if j == nil {
		return nil, errNilJob
	}
	if err := j.storedIDErr("get dependencies of"); err != nil {
		return nil, err
	}
	if j.queue == nil {
		return &Dependencies{}, nil
	}
	var o DependenciesOptions
	if opts != nil {
		o = *opts
	}
	k, id := j.queue.k, j.ID
	d := &Dependencies{}
	if o.Processed == nil && o.Unprocessed == nil && o.Ignored == nil && o.Failed == nil {
		var processed, ignored *redis.MapStringStringCmd
		var unproc, failed *redis.StringSliceCmd
		err := pipelineWithin(ctx, j.queue, true, func(p redis.Pipeliner) error {
			processed = p.HGetAll(ctx, k.Processed(id))
			unproc = p.SMembers(ctx, k.Dependencies(id))
			ignored = p.HGetAll(ctx, k.IgnoredFailures(id))
			failed = p.ZRange(ctx, k.Unsuccessful(id), 0, -1)
			return nil
		})
		if err != nil {
			return nil, j.err("get dependencies of", err)
		}
		d.Processed = rawValues(processed.Val())
		d.Unprocessed, d.Ignored, d.Failed = unproc.Val(), ignored.Val(), failed.Val()
		return d, nil
	}
	count := func(p *DependencyPage) int64 {
		if p.Count < 1 {
			return 20
		}
		return int64(p.Count)
	}
	var processed, unproc, ignored *redis.ScanCmd
	var failed *redis.StringSliceCmd
	err := pipelineWithin(ctx, j.queue, true, func(p redis.Pipeliner) error {
		if o.Processed != nil {
			processed = p.HScan(ctx, k.Processed(id), o.Processed.Cursor, "", count(o.Processed))
		}
		if o.Unprocessed != nil {
			unproc = p.SScan(ctx, k.Dependencies(id), o.Unprocessed.Cursor, "", count(o.Unprocessed))
		}
		if o.Ignored != nil {
			ignored = p.HScan(ctx, k.IgnoredFailures(id), o.Ignored.Cursor, "", count(o.Ignored))
		}
		if o.Failed != nil {
			start := int64(o.Failed.Cursor)
			failed = p.ZRange(ctx, k.Unsuccessful(id), start, start+count(o.Failed)-1)
		}
		return nil
	})
	if err != nil {
		return nil, j.err("get dependencies of", err)
	}
	if processed != nil {
		kv, cur := processed.Val()
		d.Processed, d.NextProcessedCursor = rawValues(pairsMap(kv)), cur
	}
	if unproc != nil {
		d.Unprocessed, d.NextUnprocessedCursor = unproc.Val()
	}
	if ignored != nil {
		kv, cur := ignored.Val()
		d.Ignored, d.NextIgnoredCursor = pairsMap(kv), cur
	}
	if failed != nil {
		d.Failed = failed.Val()
		d.NextFailedCursor = o.Failed.Cursor + uint64(count(o.Failed))
	}
	return d, nil
}

func pairsMap(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func rawValues(m map[string]string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out
}

// DependencyCounts count a flow parent's children by how they stand (see
// Dependencies).
type DependencyCounts struct {
	Processed, Unprocessed, Ignored, Failed int64
}

// GetDependenciesCount counts the job's flow children, atomically.
func (j *Job) GetDependenciesCount(ctx context.Context) (DependencyCounts, error) {
	if j == nil {
		return DependencyCounts{}, errNilJob
	}
	if err := j.storedIDErr("count dependencies of"); err != nil {
		return DependencyCounts{}, err
	}
	if j.queue == nil {
		return DependencyCounts{}, nil
	}
	k, id := j.queue.k, j.ID
	var processed, unproc, ignored, failed *redis.IntCmd
	err := pipelineWithin(ctx, j.queue, true, func(p redis.Pipeliner) error {
		processed = p.HLen(ctx, k.Processed(id))
		unproc = p.SCard(ctx, k.Dependencies(id))
		ignored = p.HLen(ctx, k.IgnoredFailures(id))
		failed = p.ZCard(ctx, k.Unsuccessful(id))
		return nil
	})
	if err != nil {
		return DependencyCounts{}, j.err("count dependencies of", err)
	}
	return DependencyCounts{Processed: processed.Val(), Unprocessed: unproc.Val(), Ignored: ignored.Val(), Failed: failed.Val()}, nil
}

// MoveToWaitingChildrenOptions narrow what MoveToWaitingChildren waits
// for. Nil means any pending child.
type MoveToWaitingChildrenOptions struct {
	// Child, when set, waits only if that child is pending.
	Child *JobRef
}

// MoveToWaitingChildren is for a processor that added children to its own
// job (FlowJob.Parent: job.Ref()) and wants to run again once they are
// done (BullMQ's moveToWaitingChildren). If a child is pending it moves the
// job from active to waiting-children, giving up its lock, and reports
// true: the processor must then return ErrWaitingChildren, and the worker
// writes no result (the move records the attempt in the job's timeline as
// OutcomeWaitingChildren); the last child to finish moves the job back to
// wait, where it runs as a new attempt (check GetChildrenValues to tell the
// steps apart). It reports false when there is nothing to wait for and the
// job stays active: the processor goes on. A child that failed with
// FailParent makes it return an unrecoverable ErrFailedChildren, BullMQ's
// error ("Cannot complete job <id> because it has at least one failed
// child. moveToWaitingChildren"): returned by the processor, the job fails
// for good.
//
// It works only on the job handed to a processor, during that attempt, or
// on a job Worker.NextJob returned, under the token NextJob took it with
// (BullMQ's job.moveToWaitingChildren(token)): moved, that attempt is over
// and the job comes back through NextJob once its children are done.
//
// A move whose reply was lost (the connection broke after Redis ran it,
// and go-redis may have sent it again) is recognised by the attempt record
// it wrote, and reported as moved.
//
// Errors leave Redis untouched: ErrLockLost when the job holds no lock (it
// expired, or the attempt ended; the message names the job's state),
// ErrJobLocked when another token holds it, ErrNotInState when the job is
// no longer active, ErrJobNotFound, ErrFailedChildren.
func (j *Job) MoveToWaitingChildren(ctx context.Context, opts *MoveToWaitingChildrenOptions) (bool, error) {
	if j == nil {
		return false, errNilJob
	}
	if ctx == nil {
		return false, errNilContext
	}
	if j.token == "" || j.run == nil || j.queue == nil {
		return false, j.err("move to waiting-children", errors.New("not a running attempt: only the job handed to a processor or returned by Worker.NextJob can wait for its children"))
	}
	child := ""
	if opts != nil && opts.Child != nil {
		child = opts.Child.Key()
	}
	// The attempt's record, written with the move: the timeline says this
	// worker parked the job (not "no record") when it runs again.
	now := j.queue.clock.Now()
	timeline := timelineWith(j, Attempt{N: j.AttemptsStarted, Start: j.run.started, End: now, Worker: j.run.w.workerLabel(),
		Outcome: OutcomeWaitingChildren})
	const op = "move to waiting-children"
	moved, err := scripts.MoveToWaitingChildren(ctx, j.queue.jobWrites(), j.queue.k, j.ID, j.token, child, now.UnixMilli(), timeline)
	if (errors.Is(err, scripts.ErrLockMissing) || err != nil && mayHaveRun(err)) && j.parkedWith(ctx, timeline) {
		// The move's reply was lost after it ran: go-redis sent it again,
		// which found the lock it had released gone, or the error is the
		// lost reply's. The job sits in waiting-children with this call's
		// attempt record, which only this move wrote: it parked the job.
		moved, err = true, nil
	}
	switch {
	case errors.Is(err, scripts.ErrFailedChildren):
		// BullMQ throws an UnrecoverableError here, with its text: a
		// processor that returns it fails the job for good with the
		// same failedReason (not retried, to fail then on the deferred
		// failure the child left).
		return false, Unrecoverable(&refusedCompletion{jobID: j.ID, cause: ErrFailedChildren, command: "moveToWaitingChildren"})
	case errors.Is(err, scripts.ErrLockTaken):
		return false, j.err(op, lockTakenError())
	case errors.Is(err, scripts.ErrLockMissing):
		state, serr := j.queue.GetJobState(ctx, j.ID)
		if serr != nil {
			state = "unknown"
		}
		return false, j.err(op, fmt.Errorf("%w: no lock (it expired, or the attempt ended); the job is %s", ErrLockLost, state))
	case err != nil:
		return false, j.err(op, err)
	}
	if moved {
		// The result is in Redis as far as the lock keeper and the worker
		// are concerned: the attempt ends with no write (Worker.run).
		j.run.written.Store(true)
	}
	return moved, nil
}

// parkedWith reports whether the job is in waiting-children with timeline,
// the attempt record a MoveToWaitingChildren call wrote, as its timeline:
// that call's move ran.
func (j *Job) parkedWith(ctx context.Context, timeline string) bool {
	if timeline == "" {
		return false
	}
	var score *redis.FloatCmd
	var stored *redis.StringCmd
	err := pipelineWithin(ctx, j.queue, true, func(p redis.Pipeliner) error {
		score = p.ZScore(ctx, j.queue.k.WaitingChildren(), j.ID)
		stored = p.HGet(ctx, j.queue.k.Job(j.ID), jobcodec.TimelineField)
		return nil
	})
	return err == nil && score.Err() == nil && stored.Val() == timeline
}

// ErrWaitingChildren is what a processor returns after
// Job.MoveToWaitingChildren moved its job (BullMQ's WaitingChildrenError):
// the attempt ends without a result. Returned without that move, it is an
// ordinary failure.
var ErrWaitingChildren = errors.New("drover: job is waiting for its children")

// parkedAttempt ends an attempt whose processor moved its job to
// waiting-children: nothing more is written (the move recorded the
// attempt; the job is no longer active nor locked), the slot is freed. err
// is what the processor returned; a result or an error other than
// ErrWaitingChildren is dropped with a warning.
func (w *Worker) parkedAttempt(rj *runningJob, err error, took time.Duration) {
	if err == nil || !errors.Is(err, ErrWaitingChildren) {
		w.log.Warn("processor moved its job to waiting-children but did not return ErrWaitingChildren: its result is dropped",
			slog.String(logkey.JobID, rj.job.ID), slog.Any(logkey.Error, err))
	} else {
		w.log.Debug("job waits for its children", slog.String(logkey.JobID, rj.job.ID))
	}
	w.finished(rj, Finish{Outcome: OutcomeWaitingChildren, Err: ErrWaitingChildren, Took: took})
	w.jobs.finish([]*runningJob{rj}, 0, nil)
}
