package interoptest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/difftest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// waitLong bounds every wait for jobs to be processed or events to arrive.
// Only a failing test waits it out: at load 20+ on two cores (a busy CI
// machine) a Node worker took more than 20 s to take its first job.
const waitLong = 45 * time.Second

// queueName is the queue every scenario uses, under its own prefix.
const queueName = "q"

// workerName is the name of every worker (BullMQ's pb field), on both sides,
// so job hashes compare.
const workerName = "w"

// impl names the implementation that performs a step.
type impl string

const (
	nodeImpl   impl = "node"
	droverImpl impl = "drover"
)

func (i impl) other() impl {
	if i == nodeImpl {
		return droverImpl
	}
	return nodeImpl
}

// bundle is what a subtest works with: the top-level test's Node driver, a
// Redis client, a key prefix of its own and a drover Queue on it.
type bundle struct {
	oracle *bullmqoracle.Oracle
	rdb    *redis.Client
	addr   string
	prefix string
	dq     *drover.Queue
	seq    atomic.Int64
}

// newSetup starts one Node driver for the calling top-level test and returns
// a setup function handing each subtest its own prefix.
func newSetup(t *testing.T) func(t *testing.T) *bundle {
	t.Helper()
	addr := redistest.Shared(t).Addr
	o := bullmqoracle.Start(t, addr)
	return func(t *testing.T) *bundle {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		return newBundle(t, o, rdb, addr, prefix)
	}
}

// newPrivateSetup is newSetup on a redis-server of the test's own, for
// steps whose result depends on the size of the whole keyspace (a SCAN
// step's COUNT): on the shared server, parallel tests' keys change it.
func newPrivateSetup(t *testing.T) func(t *testing.T) *bundle {
	t.Helper()
	srv := redistest.Pausable(t)
	o := bullmqoracle.Start(t, srv.Addr)
	return func(t *testing.T) *bundle {
		t.Helper()
		rdb := srv.Client(t)
		prefix := redistest.UniquePrefix()
		return newBundle(t, o, rdb, srv.Addr, prefix)
	}
}

func newBundle(t *testing.T, o *bullmqoracle.Oracle, rdb *redis.Client, addr, prefix string) *bundle {
	t.Helper()
	dq, err := drover.NewQueue(rdb, queueName, &drover.QueueOptions{Prefix: prefix, BackoffTypes: customBackoffs})
	require.NoError(t, err)
	return &bundle{oracle: o, rdb: rdb, addr: addr, prefix: prefix, dq: dq}
}

// sibling is a second bundle on a fresh prefix sharing b's driver and
// client: the other half of a differential run.
func (b *bundle) sibling(t *testing.T) *bundle {
	t.Helper()
	prefix := redistest.UniquePrefix()
	t.Cleanup(func() { redistest.DeletePrefix(context.Background(), b.rdb, prefix) })
	return newBundle(t, b.oracle, b.rdb, b.addr, prefix)
}

// customBackoffs are the custom backoff strategies both sides know: Node's
// from internal/testkit/bullmqoracle/node/lib.mjs (through its "byType" strategy),
// drover's from droverStrategies.
var customBackoffs = []string{"linear100", "stop", "zero", "minus5"}

var droverStrategies = map[string]drover.BackoffFunc{
	"linear100": func(attemptsMade int, _ string, _ error, _ *drover.Job) time.Duration {
		return time.Duration(attemptsMade) * 100 * time.Millisecond
	},
	"stop":   func(int, string, error, *drover.Job) time.Duration { return drover.BackoffStop },
	"zero":   func(int, string, error, *drover.Job) time.Duration { return 0 },
	"minus5": func(int, string, error, *drover.Job) time.Duration { return -5 * time.Millisecond },
}

// jobSpec is one job to add, with the options both implementations share.
type jobSpec struct {
	name     string
	data     any
	jobID    string
	delay    time.Duration
	priority int
	lifo     bool
	attempts int
	backoff  *drover.Backoff
	// timestamp overrides the creation time (zero: now).
	timestamp time.Time
	// removeOnFail drops the job when it fails for good.
	removeOnFail bool
	// removeOnComplete drops the job when it completes.
	removeOnComplete bool
	// dedupID is a deduplication id (simple mode: until the job finishes).
	dedupID string
	// stackTraceLimit bounds the kept traces (0: unset).
	stackTraceLimit int
}

func (s jobSpec) nodeOpts() map[string]any {
	m := map[string]any{}
	if s.jobID != "" {
		m["jobId"] = s.jobID
	}
	if s.delay > 0 {
		m["delay"] = s.delay.Milliseconds()
	}
	if s.priority != 0 {
		m["priority"] = s.priority
	}
	if s.lifo {
		m["lifo"] = true
	}
	if s.attempts != 0 {
		m["attempts"] = s.attempts
	}
	if !s.timestamp.IsZero() {
		m["timestamp"] = s.timestamp.UnixMilli()
	}
	if s.removeOnFail {
		m["removeOnFail"] = true
	}
	if s.removeOnComplete {
		m["removeOnComplete"] = true
	}
	if s.dedupID != "" {
		m["deduplication"] = map[string]any{"id": s.dedupID}
	}
	if s.stackTraceLimit != 0 {
		m["stackTraceLimit"] = s.stackTraceLimit
	}
	if bo := s.backoff; bo != nil {
		// Always with its delay: drover stores backoff.delay even when it is
		// 0, so the Node side passes it explicitly to store the same opts.
		m["backoff"] = map[string]any{"type": bo.Type, "delay": bo.Delay.Milliseconds()}
	}
	return m
}

func (s jobSpec) droverOpts() *drover.JobOptions {
	o := &drover.JobOptions{
		JobID: s.jobID, Delay: s.delay, Priority: s.priority, LIFO: s.lifo,
		Attempts: s.attempts, Backoff: s.backoff, Timestamp: s.timestamp,
		StackTraceLimit: s.stackTraceLimit,
	}
	if s.removeOnFail {
		o.RemoveOnFail = &drover.Retention{Remove: true}
	}
	if s.removeOnComplete {
		o.RemoveOnComplete = &drover.Retention{Remove: true}
	}
	if s.dedupID != "" {
		o.Deduplication = &drover.Deduplication{ID: s.dedupID}
	}
	return o
}

// add adds one job with the given implementation and returns its id.
func (b *bundle) add(t *testing.T, by impl, s jobSpec) string {
	t.Helper()
	ctx := context.Background()
	if by == nodeImpl {
		id, err := b.oracle.Add(ctx, b.prefix, queueName, s.name, s.data, s.nodeOpts())
		require.NoError(t, err)
		return id
	}
	res, err := b.dq.Add(ctx, s.name, s.data, s.droverOpts())
	require.NoError(t, err)
	return res.Job.ID
}

// addBulk adds jobs in one bulk call (Queue.addBulk / Queue.AddBulk).
func (b *bundle) addBulk(t *testing.T, by impl, specs []jobSpec) []string {
	t.Helper()
	ctx := context.Background()
	if by == nodeImpl {
		jobs := make([]bullmqoracle.BulkJob, len(specs))
		for i, s := range specs {
			jobs[i] = bullmqoracle.BulkJob{Name: s.name, Data: s.data, Opts: s.nodeOpts()}
		}
		ids, err := b.oracle.AddBulk(ctx, b.prefix, queueName, jobs)
		require.NoError(t, err)
		return ids
	}
	jobs := make([]drover.BulkJob, len(specs))
	for i, s := range specs {
		jobs[i] = drover.BulkJob{Name: s.name, Data: s.data, Opts: s.droverOpts()}
	}
	res, err := b.dq.AddBulk(ctx, jobs)
	require.NoError(t, err)
	ids := make([]string, len(res))
	for i, r := range res {
		require.Equal(t, drover.AddCreated, r.Outcome)
		ids[i] = r.Job.ID
	}
	return ids
}

// setGlobalConcurrency sets the queue's global concurrency on either side.
func (b *bundle) setGlobalConcurrency(t *testing.T, by impl, n int) {
	t.Helper()
	if by == nodeImpl {
		require.NoError(t, b.oracle.SetGlobalConcurrency(context.Background(), b.prefix, queueName, n))
		return
	}
	require.NoError(t, b.dq.SetGlobalConcurrency(context.Background(), n))
}

// removeJobScheduler removes job scheduler id on either side.
func (b *bundle) removeJobScheduler(t *testing.T, by impl, id string) {
	t.Helper()
	var err error
	if by == nodeImpl {
		_, err = b.oracle.RemoveJobScheduler(context.Background(), b.prefix, queueName, id)
	} else {
		_, err = b.dq.RemoveJobScheduler(context.Background(), id)
	}
	require.NoError(t, err)
}

func (b *bundle) pause(t *testing.T, by impl) {
	t.Helper()
	if by == nodeImpl {
		require.NoError(t, b.oracle.Pause(context.Background(), b.prefix, queueName))
		return
	}
	require.NoError(t, b.dq.Pause(context.Background()))
}

func (b *bundle) resume(t *testing.T, by impl) {
	t.Helper()
	if by == nodeImpl {
		require.NoError(t, b.oracle.Resume(context.Background(), b.prefix, queueName))
		return
	}
	require.NoError(t, b.dq.Resume(context.Background()))
}

// workerSpec says what a worker does. The zero value echoes each job's data
// as its return value, one job at a time, with default timings.
type workerSpec struct {
	// name is the worker's name (pb); "" is workerName.
	name        string
	concurrency int
	// behavior is what the processor does, on either side (zero: Echo):
	// Node runs it in internal/testkit/bullmqoracle/node/lib.mjs, drover in
	// droverBehavior.
	behavior bullmqoracle.Behavior
	// drover, when set, replaces the drover worker's processor.
	drover drover.ProcessorFunc
	// Timings, zero for each side's default.
	lockDuration    time.Duration
	stalledInterval time.Duration
	// maxStalledCount, when set, is BullMQ's maxStalledCount (0 allowed).
	maxStalledCount *int
	// skipStalledCheck turns the worker's stalled checks off.
	skipStalledCheck bool
}

// droverBehavior is a drover processor doing what runBehavior in
// internal/testkit/bullmqoracle/node/lib.mjs does for a Node worker, so one scripted
// behaviour runs on both sides. The zero Behavior echoes the job's data. rdb
// serves the kinds that read Redis (waitKey).
func droverBehavior(bh bullmqoracle.Behavior, rdb redis.UniversalClient) drover.ProcessorFunc {
	return func(ctx context.Context, job *drover.Job) (any, error) {
		if bh.Kind == "" {
			return job.Data, nil
		}
		return runBehavior(ctx, bh, job, rdb)
	}
}

func runBehavior(ctx context.Context, bh bullmqoracle.Behavior, job *drover.Job, rdb redis.UniversalClient) (any, error) {
	next := func() (any, error) {
		if bh.Then != nil {
			return runBehavior(ctx, *bh.Then, job, rdb)
		}
		return nil, nil
	}
	msg := func(def string) string {
		if bh.Message != "" {
			return bh.Message
		}
		return def
	}
	switch bh.Kind {
	case "", "return":
		return bh.Value, nil
	case "echo":
		return job.Data, nil
	case "fail":
		return nil, errors.New(msg("oracle failure"))
	case "failTimes":
		if job.AttemptsMade < bh.Times {
			return nil, errors.New(msg("oracle failure"))
		}
		return bh.Value, nil
	case "unrecoverable":
		return nil, drover.Unrecoverable(errors.New(msg("oracle unrecoverable")))
	case "sleep":
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(time.Duration(bh.MS) * time.Millisecond):
		}
		if bh.Then != nil {
			return runBehavior(ctx, *bh.Then, job, rdb)
		}
		return bh.Value, nil
	case "waitKey":
		ms := cmp.Or(bh.MS, 20000)
		deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
		for time.Now().Before(deadline) {
			n, err := rdb.Exists(ctx, bh.Key).Result()
			if err != nil {
				return nil, err
			}
			if n > 0 {
				break
			}
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(20 * time.Millisecond):
			}
		}
		if bh.Then != nil {
			return runBehavior(ctx, *bh.Then, job, rdb)
		}
		return bh.Value, nil
	case "progress":
		if err := job.UpdateProgress(ctx, bh.Value); err != nil {
			return nil, err
		}
		return next()
	case "log":
		if _, err := job.Log(ctx, bh.Line); err != nil {
			return nil, err
		}
		return next()
	case "rateLimit":
		if job.AttemptsStarted <= cmp.Or(bh.Times, 1) {
			if err := job.Queue().RateLimit(ctx, time.Duration(bh.MS)*time.Millisecond); err != nil {
				return nil, err
			}
			return nil, drover.ErrRateLimited
		}
		return next()
	case "moveToDelayed":
		if job.AttemptsStarted <= bh.Times {
			return nil, drover.Delay(time.Duration(bh.MS) * time.Millisecond)
		}
		return next()
	case "waitChildren":
		moved, err := job.MoveToWaitingChildren(ctx, nil)
		if err != nil {
			return nil, err
		}
		if moved {
			return nil, drover.ErrWaitingChildren
		}
		return next()
	case "childrenValues":
		values, err := job.GetChildrenValues(ctx)
		if err != nil {
			return nil, err
		}
		out := []json.RawMessage{}
		for _, k := range slices.Sorted(maps.Keys(values)) {
			out = append(out, values[k])
		}
		return out, nil
	case "sequence":
		if len(bh.Steps) == 0 {
			return nil, nil
		}
		i := min(max(job.AttemptsStarted-1, 0), len(bh.Steps)-1)
		return runBehavior(ctx, bh.Steps[i], job, rdb)
	case "fromData":
		field := cmp.Or(bh.Field, "behavior")
		var data map[string]json.RawMessage
		var inner bullmqoracle.Behavior
		if json.Unmarshal(job.Data, &data) == nil && data[field] != nil {
			if err := json.Unmarshal(data[field], &inner); err != nil {
				return nil, fmt.Errorf("behavior in job data: %w", err)
			}
		}
		return runBehavior(ctx, inner, job, rdb)
	}
	return nil, fmt.Errorf("unknown behavior kind %q", bh.Kind)
}

// startWorker starts a worker of the given implementation on b's queue and
// returns a function that stops it gracefully (also run at cleanup).
func (b *bundle) startWorker(t *testing.T, by impl, spec workerSpec) (stop func()) {
	t.Helper()
	return b.startWorkerOn(t, by, queueName, spec)
}

// startWorkerOn is startWorker on another queue under b's prefix.
func (b *bundle) startWorkerOn(t *testing.T, by impl, queue string, spec workerSpec) (stop func()) {
	t.Helper()
	ctx := context.Background()
	var once sync.Once
	if by == nodeImpl {
		behavior := spec.behavior
		if behavior.Kind == "" {
			behavior = bullmqoracle.Echo()
		}
		id := fmt.Sprintf("%s-w%d", b.prefix, b.seq.Add(1))
		require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queue, bullmqoracle.WorkerOptions{
			ID: id, Name: cmp.Or(spec.name, workerName), Concurrency: spec.concurrency, Behavior: behavior,
			LockDuration: spec.lockDuration, StalledInterval: spec.stalledInterval,
			MaxStalledCount: spec.maxStalledCount, BackoffStrategy: "byType",
			SkipStalledCheck: spec.skipStalledCheck,
		}))
		stop = func() {
			once.Do(func() { require.NoError(t, b.oracle.StopWorker(ctx, id, false)) })
		}
	} else {
		proc := spec.drover
		if proc == nil {
			proc = droverBehavior(spec.behavior, b.rdb)
		}
		o := &drover.WorkerOptions{
			Prefix: b.prefix, Name: cmp.Or(spec.name, workerName), Concurrency: spec.concurrency,
			LockDuration: spec.lockDuration, StalledInterval: spec.stalledInterval,
			BackoffStrategies: droverStrategies, SkipStalledCheck: spec.skipStalledCheck,
		}
		if spec.maxStalledCount != nil {
			o.MaxStalledCount = *spec.maxStalledCount
			if o.MaxStalledCount == 0 {
				o.MaxStalledCount = -1 // drover's spelling of BullMQ's 0
			}
		}
		w, err := drover.NewWorker(b.rdb, queue, proc, o)
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		stop = func() {
			once.Do(func() {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				require.NoError(t, w.Close(cctx))
			})
		}
	}
	t.Cleanup(stop)
	return stop
}

// allCounts is Node's getJobCounts() shape: every default state, zero unless
// given in kv (state, count pairs).
func allCounts(kv ...any) map[string]int64 {
	m := map[string]int64{}
	for _, s := range drover.DefaultCountStates {
		m[string(s)] = 0
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = int64(kv[i+1].(int))
	}
	return m
}

// agreed is what both implementations agreed on.
type agreed struct {
	counts map[string]int64
	states map[string]string
}

// assertAgree requires Node's getJobCounts() and drover's GetJobCounts to be
// equal, and Node's getState and drover's GetJobState of every id to be
// equal, and returns what they agreed on. Call it when the queue is
// quiescent (no worker mid-transition), or the two reads may straddle one.
func assertAgree(t *testing.T, b *bundle, ids ...string) agreed {
	t.Helper()
	ctx := context.Background()
	nodeCounts, err := b.oracle.GetJobCounts(ctx, b.prefix, queueName)
	require.NoError(t, err)
	dc, err := b.dq.GetJobCounts(ctx)
	require.NoError(t, err)
	droverCounts := make(map[string]int64, len(dc))
	for s, n := range dc {
		droverCounts[string(s)] = n
	}
	require.Equal(t, nodeCounts, droverCounts, "Node getJobCounts() vs drover GetJobCounts")
	a := agreed{counts: nodeCounts, states: make(map[string]string, len(ids))}
	for _, id := range ids {
		ns, err := b.oracle.GetState(ctx, b.prefix, queueName, id)
		require.NoError(t, err)
		ds, err := b.dq.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, ns, string(ds), "Node getState vs drover GetJobState of job %s", id)
		a.states[id] = ns
	}
	return a
}

// statesOf maps each id to state, for comparing with agreed.states.
func statesOf(state string, ids ...string) map[string]string {
	m := make(map[string]string, len(ids))
	for _, id := range ids {
		m[id] = state
	}
	return m
}

// assertJobAgree requires Node's Queue.getJob and drover's GetJob to read
// job id the same way, and returns Node's view.
func assertJobAgree(t *testing.T, b *bundle, id string) *bullmqoracle.NodeJob {
	t.Helper()
	ctx := context.Background()
	nj, err := b.oracle.GetJob(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.NotNil(t, nj, "Node finds job %s", id)
	require.Empty(t, nj.NonFinite, "Node parses every numeric field of job %s", id)
	dj, err := b.dq.GetJob(ctx, id)
	require.NoError(t, err)

	require.Equal(t, nj.ID, dj.ID)
	require.Equal(t, nj.Name, dj.Name)
	require.JSONEq(t, string(nj.Data), string(dj.Data), "data of job %s", id)
	require.Equal(t, nj.Timestamp, dj.Timestamp.UnixMilli(), "timestamp of job %s", id)
	require.Equal(t, nj.Delay, dj.Delay.Milliseconds(), "delay of job %s", id)
	require.Equal(t, nj.Priority, int64(dj.Priority), "priority of job %s", id)
	require.Equal(t, nj.AttemptsMade, int64(dj.AttemptsMade), "attemptsMade of job %s", id)
	require.Equal(t, nj.AttemptsStarted, int64(dj.AttemptsStarted), "attemptsStarted of job %s", id)
	require.Equal(t, nj.StalledCounter, int64(dj.StalledCount), "stalledCounter of job %s", id)
	require.Equal(t, msOrZero(nj.ProcessedOn), msOf(dj.ProcessedOn), "processedOn of job %s", id)
	require.Equal(t, msOrZero(nj.FinishedOn), msOf(dj.FinishedOn), "finishedOn of job %s", id)
	if len(nj.ReturnValue) > 0 && string(nj.ReturnValue) != "null" {
		require.JSONEq(t, string(nj.ReturnValue), string(dj.ReturnValue), "returnvalue of job %s", id)
	}
	require.Equal(t, nj.FailedReason, dj.FailedReason, "failedReason of job %s", id)
	require.Len(t, dj.Stacktrace, len(nj.Stacktrace), "stacktrace of job %s", id)
	require.Equal(t, nj.ProcessedBy, dj.ProcessedBy, "processedBy of job %s", id)
	require.Equal(t, nj.DeferredFailure, dj.DeferredFailure, "deferredFailure of job %s", id)

	// Options as Node decodes them vs drover's decoding.
	num := func(k string) int64 {
		f, _ := nj.Opts[k].(float64)
		return int64(f)
	}
	require.Equal(t, num("attempts"), int64(dj.Opts.Attempts), "opts.attempts of job %s", id)
	require.Equal(t, num("delay"), dj.Opts.Delay.Milliseconds(), "opts.delay of job %s", id)
	require.Equal(t, num("priority"), int64(dj.Opts.Priority), "opts.priority of job %s", id)
	lifo, _ := nj.Opts["lifo"].(bool)
	require.Equal(t, lifo, dj.Opts.LIFO, "opts.lifo of job %s", id)
	jobID, _ := nj.Opts["jobId"].(string)
	require.Equal(t, jobID, dj.Opts.JobID, "opts.jobId of job %s", id)
	if bo, ok := nj.Opts["backoff"].(map[string]any); ok {
		require.NotNil(t, dj.Opts.Backoff, "opts.backoff of job %s", id)
		require.Equal(t, bo["type"], dj.Opts.Backoff.Type)
		d, _ := bo["delay"].(float64)
		require.Equal(t, int64(d), dj.Opts.Backoff.Delay.Milliseconds())
	} else {
		require.Nil(t, dj.Opts.Backoff, "opts.backoff of job %s", id)
	}
	return nj
}

func msOrZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// events reads b's whole events stream with drover's QueueEvents.
func (b *bundle) events(t *testing.T) []drover.Event {
	t.Helper()
	return readEvents(t, b.rdb, b.prefix, 0, nil, 0)
}

// waitEvents reads b's events stream from the start until count events
// match, and returns the whole stream read so far.
func (b *bundle) waitEvents(t *testing.T, count int, match func(drover.Event) bool) []drover.Event {
	t.Helper()
	return readEvents(t, b.rdb, b.prefix, count, match, waitLong)
}

// waitEventsWithin is waitEvents with its own timeout.
func (b *bundle) waitEventsWithin(t *testing.T, timeout time.Duration, count int, match func(drover.Event) bool) []drover.Event {
	t.Helper()
	return readEvents(t, b.rdb, b.prefix, count, match, timeout)
}

// waitFinal waits until job id has a completed or failed event count times.
func (b *bundle) waitFinal(t *testing.T, id string, count int) []drover.Event {
	t.Helper()
	return b.waitEvents(t, count, func(e drover.Event) bool {
		return e.JobID == id && (e.Name == drover.EventCompleted || e.Name == drover.EventFailed)
	})
}

func readEvents(t *testing.T, rdb *redis.Client, prefix string, count int, match func(drover.Event) bool, timeout time.Duration) []drover.Event {
	t.Helper()
	return readQueueEvents(t, rdb, prefix, queueName, count, match, timeout)
}

// readQueueEvents is readEvents for any queue under prefix.
func readQueueEvents(t *testing.T, rdb *redis.Client, prefix, queue string, count int, match func(drover.Event) bool, timeout time.Duration) []drover.Event {
	t.Helper()
	qe, err := drover.NewQueueEvents(rdb, queue, &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", BlockTimeout: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	var out []drover.Event
	matched := 0
	var deadline time.Time
	if count > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		// Once count events matched (or with count 0), drain what is there.
		wait := 100 * time.Millisecond
		if matched < count {
			wait = time.Until(deadline)
			if wait <= 0 {
				require.FailNowf(t, "timed out", "waiting for %d matching events, got %d; stream: %v", count, matched, eventLines(out))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		ev, err := qe.Next(ctx)
		cancel()
		if err != nil {
			if matched >= count {
				return out
			}
			continue
		}
		out = append(out, ev)
		if match != nil && match(ev) {
			matched++
		}
	}
}

// eventLines renders events as "name jobId [prev=...]" lines, the part of an
// event that is the same in every run of a scenario.
func eventLines(evs []drover.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		s := string(e.Name)
		if e.JobID != "" {
			s += " " + e.JobID
		}
		if e.Prev != "" {
			s += " prev=" + e.Prev
		}
		out = append(out, s)
	}
	return out
}

// activeOrder lists the job ids of the active events, in stream order: the
// order the jobs were taken.
func activeOrder(evs []drover.Event) []string {
	var ids []string
	for _, e := range evs {
		if e.Name == drover.EventActive {
			ids = append(ids, e.JobID)
		}
	}
	return ids
}

// dumpOptions select the exclusions comparableDump applies beyond the
// always-on ones.
type dumpOptions struct {
	// workersRan drops the marker keys. Markers are wake-up hints that
	// blocked workers consume with BZPOPMIN, so after workers ran, whether
	// one is left depends on when each worker last blocked; and drover's
	// fetch writes its cascade marker only when more jobs are ready
	// (include/fetch.lua, deliberate: fewer wake-ups), where BullMQ writes
	// one on every activation. After adds alone the marker is compared.
	// It drops the stalled-check keys too: each is the lock of the queue's
	// periodic stalled check, alive for one stalledInterval after the last
	// check, so whether a dump still sees it depends on how long the
	// workers took to stop.
	workersRan bool
	// rewrite, when set, edits the raw dump before the exclusions below
	// (e.g. to name job scheduler runs by rank instead of by due time).
	rewrite func(raw *statedump.Snapshot)
	// workerRunning drops every queue's stalled set: a worker's first
	// stalled check runs when it starts and marks whatever is active at that
	// moment, so a job that becomes active just before or just after it is
	// or is not listed. For checkpoints taken while a worker holds a job.
	workerRunning bool
}

// comparableDump dumps the keys under prefix and removes what legitimately
// differs between a Node BullMQ run and a drover run of one scenario. Each
// exclusion, and why it is not a format difference:
//
//   - meta field "version": Node's Queue constructor writes
//     "bullmq:<version>"; drover writes none. Spec §7: informational only,
//     nothing parses it.
//   - job hash field "drover.attempts": drover's attempt timeline (spec
//     §2.1 allows extra fields; Node ignores unknown fields and deletes it
//     with the job hash).
//   - job hash field "stacktrace": the entries are each language's stack
//     dumps (a JS Error.stack vs a Go error's text). The number of entries
//     is kept and compared.
//   - every queue's marker and stalled-check keys after workers ran (see
//     dumpOptions.workersRan).
//   - drover's add call records, "<queue>:add:<token>" strings that expire
//     after QueueOptions.AddRetryWindow (difftest.DropAddRecords).
//   - the order of the completed and failed sets (of every queue): their scores are
//     finishedOn ms and become "<ts>"; jobs finished in the same
//     millisecond are ordered by member name, so the order depends on how
//     fast the worker was. The members are compared as sets; the finishing
//     order is compared through the events stream.
//
// Then statedump.Normalize replaces timestamps, stream ids and lock tokens,
// re-encodes JSON canonically (opts key order is free, spec §2.2) and
// reduces delayed scores to their due-time order (the seq bits of
// same-millisecond jobs are kept as order).
func comparableDump(t *testing.T, rdb *redis.Client, prefix string, o dumpOptions) *statedump.Snapshot {
	t.Helper()
	raw, err := statedump.Dump(context.Background(), rdb, prefix)
	require.NoError(t, err)
	difftest.DropAddRecords(raw, queueName)
	if o.rewrite != nil {
		o.rewrite(raw)
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
			if st != "{}" { // cjson writes an empty array as {}
				require.NoError(t, json.Unmarshal([]byte(st), &traces), "stacktrace of %s", name)
			}
			k.Hash["stacktrace"] = fmt.Sprintf("<%d traces>", len(traces))
		}
	}
	for name := range raw.Keys {
		if (o.workersRan && (strings.HasSuffix(name, ":marker") || strings.HasSuffix(name, ":stalled-check"))) || (o.workerRunning && strings.HasSuffix(name, ":stalled")) {
			delete(raw.Keys, name)
		}
	}
	norm, err := statedump.Normalize(raw, &statedump.NormalizeOptions{DelayedScores: statedump.ScoreOrder})
	require.NoError(t, err)
	for name, k := range norm.Keys {
		if k.Type == statedump.TypeZSet && (strings.HasSuffix(name, ":completed") || strings.HasSuffix(name, ":failed")) {
			slices.SortFunc(k.ZSet, func(a, b statedump.ZMember) int {
				return cmp.Or(strings.Compare(a.Score, b.Score), strings.Compare(a.Member, b.Member))
			})
		}
	}
	return norm
}

// requireSameState requires two comparable dumps to be equal, printing both
// when they are not.
func requireSameState(t *testing.T, node, drv *statedump.Snapshot) {
	t.Helper()
	if diff := statedump.Diff(node, drv); len(diff) > 0 {
		t.Logf("Node BullMQ state (a):\n%s", node)
		t.Logf("drover state (b):\n%s", drv)
		require.Empty(t, diff, "Redis state after the same operations: a = Node BullMQ, b = drover")
	}
}
