package drover

// Flows: trees of jobs over one or more queues where a parent runs after
// its children (BullMQ's FlowProducer). The data model is BullMQ's: a
// parent waits in waiting-children with the job keys of its pending
// children in "<parent>:dependencies"; a finished child moves its key to
// "<parent>:processed" (with its return value), ":failed" (ignored or
// continued failures) or ":unsuccessful" (failParentOnFailure), and the
// last one releases the parent (internal/scripts/lua/include/parent.lua).

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/bounded"
	"github.com/seed40057009/drover/internal/clock"
	"github.com/seed40057009/drover/internal/jobcodec"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/topology"
)

// ParentPolicy says what a flow child's final failure does to its parent.
// A child carries at most one (BullMQ refuses two of its four flags
// together; one value cannot hold two).
type ParentPolicy uint8

const (
	// ParentWaits, the default: the failed child stays a pending dependency
	// and the parent waits in waiting-children until the child is retried
	// and completes, or is removed.
	ParentWaits ParentPolicy = iota
	// FailParent (BullMQ's failParentOnFailure): the parent is moved to
	// wait and fails for good, without running, with the reason
	// "child <key> failed"; the child's key goes to the parent's
	// ":unsuccessful" set.
	FailParent
	// ContinueParent (continueParentOnFailure): the parent runs at once,
	// even if other children are pending; the failure is recorded in the
	// parent's ":failed" hash.
	ContinueParent
	// IgnoreDependency (ignoreDependencyOnFailure): the child no longer
	// counts; its failure is recorded in the parent's ":failed" hash
	// (Job.GetIgnoredChildrenFailures) and the parent runs once the other
	// children are done.
	IgnoreDependency
	// RemoveDependency (removeDependencyOnFailure): the child no longer
	// counts and nothing is recorded.
	RemoveDependency
)

// parentPolicyNames are the policies' names: BullMQ's option names.
var parentPolicyNames = [...]string{
	ParentWaits:      "wait",
	FailParent:       "failParentOnFailure",
	ContinueParent:   "continueParentOnFailure",
	IgnoreDependency: "ignoreDependencyOnFailure",
	RemoveDependency: "removeDependencyOnFailure",
}

// String is the policy's BullMQ option name ("wait" for ParentWaits).
func (p ParentPolicy) String() string {
	if int(p) < len(parentPolicyNames) {
		return parentPolicyNames[p]
	}
	return "ParentPolicy(" + strconv.Itoa(int(p)) + ")"
}

// JobRef names a job of any queue: a flow child's parent, or an entry of a
// parent's dependencies (whose full key ParseJobKey reads).
type JobRef struct {
	// Prefix is the queue's key prefix. "" = PrefixDefault (in a FlowJob:
	// the FlowProducer's prefix).
	Prefix string
	Queue  string
	ID     string
}

// Key is the job's hash key, "<prefix>:<queue>:<id>", the form BullMQ keeps
// in a child's parentKey and a parent's dependency sets.
func (r JobRef) Key() string { return keys.New(r.Prefix, r.Queue).Job(r.ID) }

// qualifiedQueue is "<prefix>:<queue>", BullMQ's name for a parent's queue.
func (r JobRef) qualifiedQueue() string {
	return cmp.Or(r.Prefix, PrefixDefault) + ":" + r.Queue
}

// ParseJobKey splits a job key "<prefix>:<queue>:<id>" as BullMQ does: the
// id follows the last ':', the queue the one before; the prefix, which may
// hold ':' itself, is the rest.
func ParseJobKey(key string) (JobRef, error) {
	last := strings.LastIndexByte(key, ':')
	if last <= 0 {
		return JobRef{}, fmt.Errorf("job key %q is not <prefix>:<queue>:<id>", key)
	}
	prev := strings.LastIndexByte(key[:last], ':')
	if prev <= 0 {
		return JobRef{}, fmt.Errorf("job key %q is not <prefix>:<queue>:<id>", key)
	}
	return JobRef{Prefix: key[:prev], Queue: key[prev+1 : last], ID: key[last+1:]}, nil
}

// Ref names the job, e.g. as the Parent of children a processor adds.
func (j *Job) Ref() JobRef {
	if j == nil {
		return JobRef{}
	}
	if j.queue == nil {
		return JobRef{ID: j.ID}
	}
	return JobRef{Prefix: j.queue.k.Prefix(), Queue: j.queue.name, ID: j.ID}
}

// FlowJob is one node of a flow tree: a job and the children it waits for
// (BullMQ's FlowJob). Children may be in other queues; on a Redis Cluster
// every queue of a tree must carry the same {hash tag}.
type FlowJob struct {
	// Name is the job's name; "" is a name, as in Queue.Add and BullMQ's
	// FlowProducer.
	Name string
	// QueueName is the queue the job is added to. Required.
	QueueName string
	// Prefix is the queue's key prefix. "" = FlowProducerOptions.Prefix.
	Prefix string
	// Data is the payload, encoded with encoding/json; nil is stored as {}.
	Data any
	// Opts are the job's options, merged over
	// FlowProducerOptions.DefaultJobOptions of its queue. Only a lone root
	// (no children, no Parent) may set Deduplication: BullMQ refuses it
	// with a parent or children. No JobID = a random UUID, as BullMQ gives
	// flow jobs.
	Opts *JobOptions
	// Children run before this job, which waits for them in
	// waiting-children. nil = a leaf.
	Children []FlowJob
	// Parent, on a tree's root only, makes the whole tree a child of an
	// existing job (BullMQ's parent option): e.g. a processor adding
	// children to its own job (Job.Ref), then waiting for them with
	// Job.MoveToWaitingChildren.
	Parent *JobRef
}

// JobNode is one job of a flow with its children: what FlowProducer.Add
// stored, or what GetFlow read.
type JobNode struct {
	// Job is the node's job. In GetFlow's trees it is nil for a child its
	// parent still lists whose job was removed (e.g. one that completed
	// with RemoveOnComplete: its return value stays with the parent), as
	// BullMQ's getFlow keeps an undefined entry for it; Ref then names it.
	Job *Job
	// Ref names the node's job: its prefix, queue and id.
	Ref JobRef
	// Outcome says what Add did with this node (zero in GetFlow's trees):
	// AddCreated; AddDuplicate when a job with its JobID existed (that job
	// is attached to the node's parent instead: its return value counts
	// if it completed, else the parent waits for it, as in BullMQ); for a
	// lone root with Deduplication, AddDeduplicated or AddReAdded as Add's.
	Outcome  AddOutcome
	Children []*JobNode
}

// FlowProducerOptions configure a FlowProducer. Nil means defaults.
type FlowProducerOptions struct {
	// Prefix is the key prefix of nodes that set none. Defaults to
	// PrefixDefault ("bull").
	Prefix string
	// DefaultJobOptions fill, per queue name, the fields a node's own
	// options leave unset (BullMQ's queuesOptions). JobID and
	// Deduplication must not be set. nil = none.
	DefaultJobOptions map[string]*JobOptions
	// BackoffTypes names the custom backoff strategies the trees' workers
	// register, as QueueOptions.BackoffTypes.
	BackoffTypes []string
	// AddRetryWindow is how long Redis keeps each Add call's reply so a
	// resend of the call is answered, not run again; see
	// QueueOptions.AddRetryWindow. Defaults to AddRetryWindowDefault.
	AddRetryWindow time.Duration
	// Logger receives warnings (a resent add, its queues' clock skew).
	// Defaults to warnings on stderr, as a Queue's.
	Logger *slog.Logger
	// Middleware runs around every Add and AddBulk (droverotel's
	// FlowMiddleware traces them), the first one outermost. nil = none.
	Middleware []FlowMiddleware
}

// FlowProducer adds flows: trees of jobs whose parents run after their
// children, each tree in one atomic script call. It is safe for concurrent
// use and holds no connection of its own: it uses the caller's client,
// which the caller closes.
type FlowProducer struct {
	rdb    redis.UniversalClient
	opts   FlowProducerOptions
	clock  clock.Clock
	closed atomic.Bool
	queues queueSet
	add    AddFlowFunc // addBulk inside the options' Middleware
	// callBudget: see Queue's.
	callBudget time.Duration
}

// NewFlowProducer returns a FlowProducer. It does no I/O.
func NewFlowProducer(rdb redis.UniversalClient, opts *FlowProducerOptions) (*FlowProducer, error) {
	if rdb == nil {
		return nil, errors.New("drover: NewFlowProducer needs a Redis client, got nil")
	}
	var o FlowProducerOptions
	if opts != nil {
		o = *opts
	}
	o.Prefix = cmp.Or(o.Prefix, PrefixDefault)
	if o.Logger == nil {
		o.Logger = defaultLogger()
	}
	o.AddRetryWindow = cmp.Or(o.AddRetryWindow, AddRetryWindowDefault)
	if o.AddRetryWindow < time.Millisecond {
		return nil, optionError("FlowProducerOptions.AddRetryWindow must be at least 1ms, got %s", o.AddRetryWindow)
	}
	for name, d := range o.DefaultJobOptions {
		if d == nil {
			continue
		}
		if err := checkDefaultJobOptions(fmt.Sprintf("FlowProducerOptions.DefaultJobOptions[%q]", name), d); err != nil {
			return nil, err
		}
		if b := d.Backoff; b != nil && b.Type != BackoffFixed && b.Type != BackoffExponential && !slices.Contains(o.BackoffTypes, b.Type) {
			return nil, optionError("FlowProducerOptions.DefaultJobOptions[%q]: unknown JobOptions.Backoff.Type %q (want %q, %q or a name in FlowProducerOptions.BackoffTypes)",
				name, b.Type, BackoffFixed, BackoffExponential)
		}
	}
	for i, mw := range o.Middleware {
		if mw == nil {
			return nil, optionError("FlowProducerOptions.Middleware[%d] is nil", i)
		}
	}
	topology.Watch(rdb)
	f := &FlowProducer{rdb: rdb, opts: o, clock: clock.Real{}, callBudget: bounded.ClientBudget(rdb)}
	f.queues = queueSet{rdb: rdb, logger: o.Logger}
	o.Middleware = slices.Clone(o.Middleware)
	f.add = f.addBulk
	for i := len(o.Middleware) - 1; i >= 0; i-- {
		mw, next := o.Middleware[i], f.add
		f.add = func(ctx context.Context, flows []FlowJob) ([]*JobNode, error) { return mw(ctx, flows, next) }
	}
	return f, nil
}

// Close marks the producer closed: later calls fail with ErrClosed. It
// does not close the Redis client.
func (f *FlowProducer) Close() error {
	if f == nil {
		return errZeroValue("FlowProducer", "NewFlowProducer")
	}
	f.closed.Store(true)
	return nil
}

// queueSet hands out one *Queue per (prefix, name), for the jobs of flows.
type queueSet struct {
	rdb    redis.UniversalClient
	logger *slog.Logger
	mu     sync.Mutex
	m      map[[2]string]*Queue
}

func (s *queueSet) get(prefix, name string) (*Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.m[[2]string{prefix, name}]; ok {
		return q, nil
	}
	q, err := NewQueue(s.rdb, name, &QueueOptions{Prefix: prefix, Logger: s.logger})
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = make(map[[2]string]*Queue)
	}
	s.m[[2]string{prefix, name}] = q
	return q, nil
}

// flowNode is one validated node of a call, in the order records are sent.
type flowNode struct {
	q        *Queue
	rec      scripts.FlowRecord
	opts     JobOptions
	parent   int // index in the call's nodes; -1 for a root
	children []int
}

// Add stores a flow: every job of the tree, children in their queues and
// each parent in waiting-children, in one atomic script call (so workers
// never see part of a tree), with BullMQ's ids, fields and events. The
// tree is validated first; a bad node is an error naming it and nothing is
// written. It returns the tree of stored jobs.
//
// A node whose JobID exists is not stored again: the existing job is
// attached to the node's parent, as BullMQ does; if it is the child of
// another parent that still exists, the whole tree is refused with
// ErrParentConflict. A root's Parent that does not exist refuses it with
// ErrParentNotFound.
func (f *FlowProducer) Add(ctx context.Context, flow FlowJob) (*JobNode, error) {
	trees, err := f.AddBulk(ctx, []FlowJob{flow})
	if err != nil {
		return nil, err
	}
	return trees[0], nil
}

// AddBulk stores several flows in one atomic script call: all of them or,
// when one is refused or the call fails, none. As BullMQ's addBulk, it
// stores them level by level across the trees: every root in order, then
// every root's children, and so on (the order of their wait entries and
// events). On a Redis Cluster every
// tree must then share one hash tag (call Add per tree otherwise). When ctx
// ends while the call has no answer (Redis paused), the error wraps
// ErrAddInDoubt and ctx.Err(): all or none may be stored; with custom
// JobIDs, adding again attaches the stored jobs instead of doubling them.
func (f *FlowProducer) AddBulk(ctx context.Context, flows []FlowJob) ([]*JobNode, error) {
	if f == nil || f.rdb == nil {
		return nil, errZeroValue("FlowProducer", "NewFlowProducer")
	}
	if f.closed.Load() {
		return nil, fmt.Errorf("flow producer: %w", ErrClosed)
	}
	if ctx == nil {
		return nil, errNilContext
	}
	if len(flows) == 0 {
		return nil, nil
	}
	if len(f.opts.Middleware) == 0 {
		return f.addBulk(ctx, flows)
	}
	trees, err := f.add(ctx, slices.Clone(flows))
	if err != nil {
		return trees, err
	}
	if err := chainResults("FlowMiddleware", trees, len(flows), "tree", "flow"); err != nil {
		return nil, fmt.Errorf("add flow: %w", err)
	}
	return trees, nil
}

// addBulk is AddBulk inside the middleware.
func (f *FlowProducer) addBulk(ctx context.Context, flows []FlowJob) ([]*JobNode, error) {
	if len(flows) == 0 {
		return nil, nil
	}
	now := f.clock.Now()
	nodes, roots, err := f.prepare(flows, now)
	if err != nil {
		return nil, err
	}
	recs := make([]scripts.FlowRecord, len(nodes))
	for i := range nodes {
		recs[i] = nodes[i].rec
	}
	first := nodes[0].q
	outcomes, err := sendAdd(ctx, ctx, f.opts.AddRetryWindow, f.callBudget, f.opts.Logger, func(ctx context.Context, call scripts.Call) ([]scripts.AddOutcome, error) {
		return scripts.AddFlow(ctx, f.rdb, first.k, call, now.UnixMilli(), recs)
	})
	if err != nil {
		var refused *scripts.FlowRefusedError
		if errors.As(err, &refused) && refused.Record >= 0 && refused.Record < len(nodes) {
			n := &nodes[refused.Record]
			what := "its id exists as the child of another parent"
			if errors.Is(err, ErrParentNotFound) {
				what = fmt.Sprintf("its parent %s does not exist", n.rec.ParentKey)
			}
			return nil, fmt.Errorf("add flow: job %q (id %q) of queue %q: %s: %w", n.rec.Name, n.rec.ID, n.q.name, what, refused.Err)
		}
		return nil, fmt.Errorf("add flow to queue %q: %w", first.name, err)
	}
	if len(outcomes) != len(nodes) {
		return nil, fmt.Errorf("add flow to queue %q: %d results for %d jobs", first.name, len(outcomes), len(nodes))
	}
	if !first.evictionChecked.Load() {
		// As a Queue's first add: warn once when Redis may evict keys.
		first.checkEviction(ctx, f.opts.Logger.With(slog.String(logkey.Queue, first.name)))
	}
	built := make([]*JobNode, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		n := &nodes[i]
		r := &n.rec
		p := prepared{opts: n.opts, rec: scripts.AddRecord{
			ID: r.ID, Name: r.Name, Timestamp: r.Timestamp, Data: r.Data, Opts: r.Opts,
			Delay: r.Delay, Priority: r.Priority, LIFO: r.LIFO, DedupID: r.DedupID,
		}}
		res := n.q.addResult(&p, outcomes[i], n.q.existingJobs(ctx, outcomes[i:i+1]))
		jn := &JobNode{Job: res.Job, Ref: res.Job.Ref(), Outcome: res.Outcome}
		if res.Outcome == AddCreated || res.Outcome == AddReAdded {
			if r.ParentKey != "" {
				ref, _ := ParseJobKey(r.ParentKey)
				jn.Job.Parent = &ref
			} else if n.parent >= 0 {
				ref := JobRef{Prefix: nodes[n.parent].q.Prefix(), Queue: nodes[n.parent].q.name, ID: nodes[n.parent].rec.ID}
				jn.Job.Parent = &ref
			}
		}
		for _, c := range n.children {
			jn.Children = append(jn.Children, built[c])
		}
		built[i] = jn
	}
	out := make([]*JobNode, len(roots))
	for i, r := range roots {
		out[i] = built[r]
	}
	return out, nil
}

// prepare validates the trees and lays them out as records, breadth first
// across the trees (BullMQ's insertion order). roots are the trees'
// indexes.
func (f *FlowProducer) prepare(flows []FlowJob, now time.Time) (nodes []flowNode, roots []int, err error) {
	_, cluster := f.rdb.(*redis.ClusterClient)
	type item struct {
		fj     *FlowJob
		parent int
		path   string
	}
	seen := make(map[string]string) // job key -> path of the node that has it
	var slot int
	var slotOf string
	// Level by level across the trees: every root, then every root's
	// children, and so on, the order in which BullMQ's FlowProducer.addBulk
	// stores a batch's jobs (and so the order of their wait entries and
	// events).
	queue := make([]item, 0, len(flows))
	for t := range flows {
		queue = append(queue, item{fj: &flows[t], parent: -1, path: fmt.Sprintf("flows[%d]", t)})
	}
	if len(flows) == 1 {
		queue[0].path = "root"
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		n, err := f.prepareNode(it.fj, it.parent, nodes, now)
		if err != nil {
			return nil, nil, fmt.Errorf("add flow: %s (job %q of queue %q): %w", it.path, it.fj.Name, it.fj.QueueName, err)
		}
		key := n.rec.Base + n.rec.ID
		if other, dup := seen[key]; dup {
			return nil, nil, fmt.Errorf("add flow: %s (job %q of queue %q): %w: id %q is also the id of %s",
				it.path, it.fj.Name, it.fj.QueueName, ErrInvalidJobID, n.rec.ID, other)
		}
		seen[key] = it.path
		if cluster {
			s := keys.Slot(n.rec.Base)
			if slotOf == "" {
				slot, slotOf = s, fmt.Sprintf("queue %q (prefix %q)", n.q.name, n.q.Prefix())
			} else if s != slot {
				return nil, nil, optionError("add flow: %s: queue %q (prefix %q) is in hash slot %d and %s in slot %d: "+
					"on a Redis Cluster every queue of a flow (and of one AddBulk call) must carry the same {hash tag} "+
					"in its prefix or name, as BullMQ requires", it.path, n.q.name, n.q.Prefix(), s, slotOf, slot)
			}
			if n.rec.ParentKey != "" && keys.Slot(n.rec.ParentKey) != slot {
				return nil, nil, optionError("add flow: %s: its Parent %s is not in hash slot %d of %s: "+
					"on a Redis Cluster a flow and its parent must carry the same {hash tag}", it.path, n.rec.ParentKey, slot, slotOf)
			}
		}
		idx := len(nodes)
		if it.parent >= 0 {
			nodes[it.parent].children = append(nodes[it.parent].children, idx)
		} else {
			roots = append(roots, idx)
		}
		nodes = append(nodes, n)
		for c := range it.fj.Children {
			queue = append(queue, item{fj: &it.fj.Children[c], parent: idx, path: fmt.Sprintf("%s.Children[%d]", it.path, c)})
		}
	}
	return nodes, roots, nil
}

// prepareNode validates one node and builds its record. parent indexes
// nodes (-1 for a root).
func (f *FlowProducer) prepareNode(fj *FlowJob, parent int, nodes []flowNode, now time.Time) (flowNode, error) {
	q, err := f.queues.get(cmp.Or(fj.Prefix, f.opts.Prefix), fj.QueueName)
	if err != nil {
		return flowNode{}, err
	}
	o := fj.Opts.merged(f.opts.DefaultJobOptions[fj.QueueName])
	if err := o.validate(); err != nil {
		return flowNode{}, err
	}
	if b := o.Backoff; b != nil && b.Type != BackoffFixed && b.Type != BackoffExponential && !slices.Contains(f.opts.BackoffTypes, b.Type) {
		return flowNode{}, optionError("unknown JobOptions.Backoff.Type %q (want %q, %q or a name in FlowProducerOptions.BackoffTypes)",
			b.Type, BackoffFixed, BackoffExponential)
	}
	if !o.RunAt.IsZero() && len(fj.Children) > 0 {
		return flowNode{}, optionError("JobOptions.RunAt cannot be used on a flow job with children: a parent's delay counts from when its last child finishes (BullMQ's rule), so it would not run at RunAt; use Delay")
	}
	if o.Deduplication != nil && (len(fj.Children) > 0 || parent >= 0 || fj.Parent != nil) {
		return flowNode{}, optionError("JobOptions.Deduplication cannot be used on a flow job with children or a parent (BullMQ refuses it too)")
	}
	data, err := jobcodec.EncodeData(fj.Data)
	if err != nil {
		return flowNode{}, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	if o.SizeLimit > 0 && len(data) > o.SizeLimit {
		return flowNode{}, fmt.Errorf("%w: data is %d bytes, over SizeLimit %d", ErrInvalidData, len(data), o.SizeLimit)
	}
	id := o.JobID
	if id == "" {
		id = newUUID()
	}
	ts := now
	if !o.Timestamp.IsZero() {
		ts = o.Timestamp
	}
	o = o.scheduledFrom(ts)
	stored := o.stored()
	rec := scripts.FlowRecord{
		Base: q.k.Base(), ID: id, Name: fj.Name, Timestamp: ts.UnixMilli(), Data: string(data),
		Delay: o.Delay.Milliseconds(), Priority: o.Priority, LIFO: o.LIFO, HasChildren: len(fj.Children) > 0,
	}
	var pref *JobRef
	switch {
	case parent >= 0:
		if fj.Parent != nil {
			return flowNode{}, optionError("FlowJob.Parent is for a tree's root only: a child's parent is the node above it")
		}
		p := &nodes[parent]
		pref = &JobRef{Prefix: p.q.Prefix(), Queue: p.q.name, ID: p.rec.ID}
		rec.ParentIndex = parent + 1
	case fj.Parent != nil:
		r := *fj.Parent
		r.Prefix = cmp.Or(r.Prefix, f.opts.Prefix)
		if err := keys.ValidateName(r.Queue); err != nil {
			return flowNode{}, optionError("FlowJob.Parent.Queue: %v", err)
		}
		if r.ID == "" {
			return flowNode{}, fmt.Errorf("%w: FlowJob.Parent.ID must not be empty", ErrInvalidJobID)
		}
		// A parent id naming a queue key ("meta", "wait", ...) passed the
		// existence check and made that key a parent: the tree's root was
		// added under "<key>:dependencies".
		if err := storedIDError(r.ID); err != nil {
			return flowNode{}, fmt.Errorf("FlowJob.Parent.ID: %w", err)
		}
		pref = &r
		rec.ParentKey = r.Key()
	}
	if pref != nil {
		stored.Parent = &jobcodec.Parent{ID: pref.ID, Queue: pref.qualifiedQueue()}
		rec.ParentJSON = parentField(pref, o.ParentPolicy)
	}
	rec.Opts = string(stored.AppendJSON(make([]byte, 0, 64)))
	if d := o.Deduplication; d != nil {
		rec.DedupID, rec.DedupTTL, rec.DedupFlags = d.ID, d.TTL.Milliseconds(), d.flags()
	}
	return flowNode{q: q, rec: rec, opts: o, parent: parent}, nil
}

// parentField is a child's "parent" hash field, which the finish scripts
// read: {"id", "queueKey"} and the stored flag of its policy, if any.
func parentField(p *JobRef, policy ParentPolicy) string {
	v := struct {
		ID       string `json:"id"`
		QueueKey string `json:"queueKey"`
		FPOF     bool   `json:"fpof,omitempty"`
		CPOF     bool   `json:"cpof,omitempty"`
		IDOF     bool   `json:"idof,omitempty"`
		RDOF     bool   `json:"rdof,omitempty"`
	}{
		ID: p.ID, QueueKey: p.qualifiedQueue(),
		FPOF: policy == FailParent, CPOF: policy == ContinueParent,
		IDOF: policy == IgnoreDependency, RDOF: policy == RemoveDependency,
	}
	b, _ := json.Marshal(v) // strings and bools only: cannot fail
	return string(b)
}

// newUUID returns a random (version 4) UUID, the id BullMQ gives a flow job
// without a JobID.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
