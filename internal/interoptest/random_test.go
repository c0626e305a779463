package interoptest_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/seam"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/difftest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// Environment of TestDifferentialRandom (the Makefile's test-differential
// target sets them from SEEDS, DURATION, KNOWN and STEPS).
const (
	// seedsEnv is "N" (N seeds from a random base), "A-B" or "A,B,C".
	seedsEnv = "DIFFTEST_SEEDS"
	// durationEnv keeps generating seeds until it has passed, e.g. "30m".
	durationEnv = "DIFFTEST_DURATION"
	// knownEnv=1 generates the inputs of the known divergences too.
	knownEnv = "DIFFTEST_KNOWN"
	// stepsEnv is the program length.
	stepsEnv = "DIFFTEST_STEPS"
)

// fixedSeeds is how many seeds (1, 2, ...) run in `make test` (no
// environment): a bounded number of programs, so the test's length does not
// depend on the machine's speed.
const fixedSeeds = 60

// droverTakeTimeout is how long a drover work step waits for its worker
// to take the ready job.
const droverTakeTimeout = 10 * time.Second

// shrinkBudget bounds the program runs one shrink may take.
const shrinkBudget = 300

// TestDifferentialRandom runs seeded random programs (internal/testkit/difftest)
// twice: once with Node BullMQ doing every step, once with drover doing the
// steps the program gives it and Node the rest. After every step the
// normalised Redis states, events stream included, and the step results
// must be equal. A divergence is shrunk to a minimal program and printed as
// a ready-to-paste regression test.
func TestDifferentialRandom(t *testing.T) {
	t.Parallel()

	b := newSmallStreamNodesSetup(t)(t)
	cfg := difftest.Config{Known: os.Getenv(knownEnv) == "1"}
	if s := os.Getenv(stepsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, stepsEnv)
		cfg.Steps = n
	}
	seeds, until := campaignSeeds(t)
	if seeds == nil && until.IsZero() {
		for seed := int64(1); seed <= fixedSeeds; seed++ {
			t.Run(fmt.Sprintf("Seed%d", seed), func(t *testing.T) {
				checkProgram(t, b, difftest.Generate(seed, cfg), cfg.Known)
			})
		}
		return
	}
	campaign(t, b, cfg, seeds, until)
}

// smallStreamNodeEntries is how many entries a stream node holds on the
// server of TestDifferentialRandom (Redis's default: 100, or 4 KB): an
// events stream capped at a few entries (Program.EventsMaxLen; XADD MAXLEN
// ~ removes whole nodes only) is then trimmed within a program, and by the
// count of entries alone (no byte limit: an entry's size depends on its
// stream id, which differs between the runs), so alike in both runs.
const smallStreamNodeEntries = 4

// newSmallStreamNodesSetup is newPrivateSetup on a server whose stream
// nodes hold smallStreamNodeEntries entries and no byte limit.
func newSmallStreamNodesSetup(t *testing.T) func(t *testing.T) *bundle {
	t.Helper()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, rdb.ConfigSet(ctx, "stream-node-max-entries", strconv.Itoa(smallStreamNodeEntries)).Err())
	require.NoError(t, rdb.ConfigSet(ctx, "stream-node-max-bytes", "0").Err())
	o := bullmqoracle.Start(t, srv.Addr)
	return func(t *testing.T) *bundle {
		t.Helper()
		return newBundle(t, o, srv.Client(t), srv.Addr, redistest.UniquePrefix())
	}
}

// checkProgram runs p and, on a divergence, shrinks it and fails with the
// regression test.
func checkProgram(t *testing.T, b *bundle, p *difftest.Program, known bool) {
	t.Helper()
	d := runDifferential(t, b, p, known)
	if d == nil {
		return
	}
	t.Logf("divergence in %s\n%s", p, d)
	minimal, md := shrink(t, b, p, d, known)
	if md == nil {
		t.Fatalf("the divergence does not reproduce (flaky run?)")
	}
	if allNode(minimal) && !md.cross {
		t.Fatalf("the all-Node program diverges from itself: the harness is not deterministic here:\n%s\n%s", minimal, md)
	}
	if k := knownFor(minimal, md); k != nil {
		t.Logf("known divergence %s (%s, %s); minimal program:\n%s", k.Issue, k.Name, k.Status, minimal)
		return
	}
	t.Errorf("divergence, shrunk to %d steps:\n%s\n%s\nregression test:\n\n%s", len(minimal.Steps), minimal, md, regressionTest(minimal))
}

// allNode reports whether no step of p is drover's: a divergence of such a
// program is nondeterminism of the harness or of BullMQ, not a drover bug.
func allNode(p *difftest.Program) bool {
	for _, s := range p.Steps {
		if s.By == difftest.Drover {
			return false
		}
	}
	return true
}

// shrink reduces p to a minimal program that still diverges as d does: at
// a step of the same operation, in the same way (results, reads or state).
// Any divergence at all would let a long program that shows two bugs
// shrink to the one a known entry explains and hide the other (a
// getSchedulers read that differed shrank to a known drain divergence).
func shrink(t *testing.T, b *bundle, p *difftest.Program, d *divergence, known bool) (*difftest.Program, *divergence) {
	t.Helper()
	want := d.signature(p)
	minimal := difftest.Shrink(p, shrinkBudget, func(c *difftest.Program) bool {
		cd := runDifferential(t, b, c, known)
		return cd != nil && cd.signature(c) == want
	})
	return minimal, runDifferential(t, b, minimal, known)
}

// signature is what kind of divergence d is in p: the diverging step's
// operation and whether the results, the cross reads or the states differ.
func (d *divergence) signature(p *difftest.Program) string {
	kind := "state"
	switch {
	case d.ref != d.mix:
		kind = "result"
	case d.cross:
		kind = "cross"
	}
	return string(p.Steps[d.step].Op) + "/" + kind
}

func regressionTest(p *difftest.Program) string {
	setup := "newSetup"
	if p.EventsMaxLen != 0 {
		setup = "newSmallStreamNodesSetup"
	}
	return fmt.Sprintf(`func TestDifferentialRegressionSeed%d(t *testing.T) {
	t.Parallel()

	b := %s(t)(t)
	requireNoDivergence(t, b, &%s)
}`, p.Seed, setup, p.GoString())
}

// requireNoDivergence runs p (a regression test printed by the shrinker).
func requireNoDivergence(t *testing.T, b *bundle, p *difftest.Program) {
	t.Helper()
	if d := runDifferential(t, b, p, false); d != nil {
		t.Fatalf("divergence in %s\n%s", p, d)
	}
}

// campaignSeeds reads the campaign environment: nil and zero without one.
func campaignSeeds(t *testing.T) ([]int64, time.Time) {
	t.Helper()
	var until time.Time
	if s := os.Getenv(durationEnv); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, durationEnv)
		until = time.Now().Add(d)
	}
	s := os.Getenv(seedsEnv)
	switch {
	case s == "":
		return nil, until
	case strings.Contains(s, ","):
		var seeds []int64
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			require.NoError(t, err, seedsEnv)
			seeds = append(seeds, n)
		}
		return seeds, until
	case strings.Contains(s[1:], "-"):
		i := strings.Index(s[1:], "-") + 1
		a, err := strconv.ParseInt(s[:i], 10, 64)
		require.NoError(t, err, seedsEnv)
		z, err := strconv.ParseInt(s[i+1:], 10, 64)
		require.NoError(t, err, seedsEnv)
		var seeds []int64
		for n := a; n <= z; n++ {
			seeds = append(seeds, n)
		}
		return seeds, until
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, seedsEnv)
	base := time.Now().UnixNano() % 1_000_000_000
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = base + int64(i)
	}
	return seeds, until
}

// campaign runs the given seeds (or, with only a deadline, seeds from a
// random base) until they are done or the deadline passed, and reports
// every divergence at the end.
func campaign(t *testing.T, b *bundle, cfg difftest.Config, seeds []int64, until time.Time) {
	t.Helper()
	start := time.Now()
	next := time.Now().UnixNano() % 1_000_000_000
	var programs, steps int
	type found struct {
		seed    int64
		minimal *difftest.Program
		d       *divergence
		known   *difftest.KnownDivergence
	}
	var all []found
	for i := 0; ; i++ {
		if !until.IsZero() && time.Now().After(until) {
			break
		}
		var seed int64
		if seeds != nil {
			if i >= len(seeds) {
				break
			}
			seed = seeds[i]
		} else {
			seed = next + int64(i)
		}
		p := difftest.Generate(seed, cfg)
		programs++
		steps += len(p.Steps)
		d := runDifferential(t, b, p, cfg.Known)
		if d == nil {
			if programs%50 == 0 {
				t.Logf("campaign: %d programs, %d steps, %d divergences, %s", programs, steps, len(all), time.Since(start).Round(time.Second))
			}
			continue
		}
		minimal, md := shrink(t, b, p, d, cfg.Known)
		if md == nil {
			t.Logf("seed %d: divergence that does not reproduce (flaky run?):\n%s\n%s", seed, p, d)
			minimal, md = p, d
		}
		f := found{seed: seed, minimal: minimal, d: md, known: knownFor(minimal, md)}
		all = append(all, f)
		if allNode(minimal) && !md.cross {
			t.Logf("seed %d: NONDETERMINISTIC (all-Node program diverges from itself), minimal:\n%s\n%s", seed, minimal, md)
		} else if f.known != nil {
			t.Logf("seed %d: known divergence %s (%s), minimal:\n%s", seed, f.known.Issue, f.known.Name, minimal)
		} else {
			t.Logf("seed %d: NEW divergence, minimal:\n%s\n%s\nregression test:\n\n%s", seed, minimal, md, regressionTest(minimal))
		}
	}
	t.Logf("campaign done: %d programs, %d steps, %d divergences (%d known) in %s",
		programs, steps, len(all), countKnown(len(all), func(i int) bool { return all[i].known != nil }), time.Since(start).Round(time.Second))
	t.Logf("drover's steps by operation and result (ok / refused / nothing to take):\n%s", &droverSteps)
	for _, f := range all {
		if f.known == nil {
			t.Errorf("seed %d: divergence, minimal program:\n%s\n%s", f.seed, f.minimal, f.d)
		}
	}
}

// droverManual is the run's drover worker without a Processor of queue.
func (r *programRun) droverManual(queue string) *drover.Worker {
	r.t.Helper()
	if r.manualWorkers[queue] == nil {
		wo := &drover.WorkerOptions{Prefix: r.prefix, Name: workerName, BackoffStrategies: droverStrategies, SkipStalledCheck: true}
		if r.manual != nil {
			r.manual.Apply(wo)
		}
		w, err := drover.NewWorker(r.rdb, queue, nil, wo)
		require.NoError(r.t, err)
		r.manualWorkers[queue] = w
	}
	return r.manualWorkers[queue]
}

// takenKey names a job taken by hand: its queue and id (a job of each
// queue may have the same id).
func takenKey(queue, id string) string { return queue + "/" + id }

// splitTaken is takenKey's inverse.
func splitTaken(key string) (queue, id string) {
	queue, id, _ = strings.Cut(key, "/")
	return queue, id
}

// manualFinish performs OpManualFinish on the oldest taken job: its result
// is BullMQ's code (0: done; drover's refusals mapped to Node's codes), or
// for "extend" whether the lock was renewed. Every outcome but "extend"
// ends the job's turn in the taken list, done or refused.
func (r *programRun) manualFinish(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	key, o := r.taken[0], s.Outcome
	queue, id := splitTaken(key)
	if o.Kind != "extend" {
		r.taken = r.taken[1:]
	}
	job := r.manualJobs[key]
	if job == nil && !node {
		// Node took it in this run: drover reads it through its manual
		// worker's queue (Worker.Queue), so that worker's options apply,
		// as they do to Node's Job.fromId(worker, id).
		var err error
		job, err = r.droverManual(queue).Queue().GetJob(ctx, id)
		if errors.Is(err, drover.ErrJobNotFound) {
			// Removed since it was taken, as on Node's side below.
			if o.Kind == "extend" {
				return "extended 0"
			}
			return fmt.Sprintf("code %d", codeMissingJob)
		}
		// Not kept in manualJobs: a handle NextJob did not return cannot
		// move the job to waiting-children (OpManualWaitChildren).
		require.NoError(r.t, err)
	}
	if node {
		var method string
		var args []any
		switch o.Kind {
		case "complete":
			method, args = "moveToCompleted", []any{o.Value, s.Token, o.FetchNext}
		case "fail", "unrecoverable":
			method, args = "moveToFailed", []any{map[string]any{"message": o.Message, "unrecoverable": o.Kind == "unrecoverable"}, s.Token, o.FetchNext}
		case "delay":
			method, args = "moveToDelayed", []any{r.stepNow + o.Delay, s.Token}
		case "wait":
			method, args = "moveToWait", []any{s.Token}
		case "extend":
			method, args = "extendLock", []any{s.Token, 30000}
		default:
			r.t.Fatalf("manual finish outcome %q", o.Kind)
		}
		if n, err := r.rdb.Exists(ctx, keys.New(r.prefix, queue).Job(id)).Result(); err != nil || n == 0 {
			// Removed since it was taken (obliterate, say): Job.fromId
			// finds nothing to call, which BullMQ's scripts answer as a
			// missing job (-1), as drover's handle does.
			require.NoError(r.t, err)
			if o.Kind == "extend" {
				return "extended 0"
			}
			return fmt.Sprintf("code %d", codeMissingJob)
		}
		out, err := r.o.ManualCall(ctx, r.prefix, queue, id, method, args...)
		require.NoError(r.t, err)
		if o.Kind == "extend" {
			require.Nil(r.t, out.Error, "Node's extendLock answers 0 or 1")
			return "extended " + string(out.Result)
		}
		if out.Error != nil {
			return fmt.Sprintf("code %d", out.Error.Code)
		}
		if o.FetchNext {
			id := nextIDOf(r.t, out.Result)
			delete(r.manualJobs, takenKey(queue, id)) // a drover handle of an earlier take is stale
			return "code 0" + r.tookNext(queue, id, s.Token)
		}
		return "code 0"
	}
	var err error
	switch o.Kind {
	case "complete":
		if o.FetchNext {
			var next *drover.Job
			next, err = job.CompleteAndNext(ctx, s.Token, o.Value)
			return r.finishedNext(queue, next, err, s.Token)
		}
		err = job.Complete(ctx, s.Token, o.Value)
	case "fail", "unrecoverable":
		err = errors.New(o.Message)
		if o.Kind == "unrecoverable" {
			err = drover.Unrecoverable(err)
		}
		if o.FetchNext {
			var next *drover.Job
			next, err = job.FailAndNext(ctx, s.Token, err)
			return r.finishedNext(queue, next, err, s.Token)
		}
		err = job.Fail(ctx, s.Token, err)
	case "delay":
		err = job.MoveToDelayed(ctx, s.Token, time.UnixMilli(r.stepNow+o.Delay))
	case "wait":
		err = job.MoveToWait(ctx, s.Token)
	case "extend":
		if err := job.ExtendLock(ctx, s.Token, 30*time.Second); err != nil {
			require.True(r.t, errors.Is(err, drover.ErrLockLost) || errors.Is(err, drover.ErrJobLocked) || errors.Is(err, drover.ErrJobNotFound), "%v", err)
			return "extended 0"
		}
		return "extended 1"
	default:
		r.t.Fatalf("manual finish outcome %q", o.Kind)
	}
	if err != nil {
		r.refused = err
		if errors.Is(err, drover.ErrInvalidJobID) {
			// A job Node stored under an id drover refuses (a queue
			// key's name): a deliberate refusal (Known), no BullMQ code.
			return "refused: " + err.Error()
		}
	}
	return fmt.Sprintf("code %d", manualCode(r.t, err))
}

// finishedNext is the result of drover's CompleteAndNext or FailAndNext:
// BullMQ's code, and the job taken from queue, which joins the taken list.
func (r *programRun) finishedNext(queue string, next *drover.Job, err error, token string) string {
	if err != nil {
		r.refused = err
		if errors.Is(err, drover.ErrInvalidJobID) {
			return "refused: " + err.Error()
		}
		return fmt.Sprintf("code %d", manualCode(r.t, err))
	}
	id := ""
	if next != nil {
		id = next.ID
		r.manualJobs[takenKey(queue, id)] = next
	}
	return "code 0" + r.tookNext(queue, id, token)
}

// tookNext notes the job of queue a finish with fetchNext took under token
// ("" for none) at the end of the taken list and renders it for the
// result.
func (r *programRun) tookNext(queue, id, token string) string {
	if id == "" {
		return " next none"
	}
	r.taken = append(r.taken, takenKey(queue, id))
	r.takenTokens[takenKey(queue, id)] = token
	return " next " + id
}

// manualWaitChildren performs OpManualWaitChildren on the oldest taken
// job, under the token it was taken with: "ok moved" ends its turn in the
// taken list, "stays" (no pending child) leaves it taken; a refusal
// (BullMQ's code, drover's mapped to it) ends its turn too. child, when
// not "", is the one child to wait for (a job of the program's queue).
func (r *programRun) manualWaitChildren(ctx context.Context, node bool, child, childQueue string) string {
	r.t.Helper()
	key := r.taken[0]
	queue, id := splitTaken(key)
	nodeOpts := map[string]any{}
	var droverOpts *drover.MoveToWaitingChildrenOptions
	if child != "" {
		nodeOpts["child"] = map[string]any{"id": child, "queue": r.prefix + ":" + childQueue}
		droverOpts = &drover.MoveToWaitingChildrenOptions{Child: &drover.JobRef{Prefix: r.prefix, Queue: childQueue, ID: child}}
	}
	token := r.takenTokens[key]
	if r.manualJobs[key] == nil {
		node = true // Node took it in this run (see manualFinish)
	}
	var res string
	if node {
		if n, err := r.rdb.Exists(ctx, keys.New(r.prefix, queue).Job(id)).Result(); err != nil || n == 0 {
			require.NoError(r.t, err)
			res = fmt.Sprintf("code %d", codeMissingJob)
		} else {
			out, err := r.o.ManualCall(ctx, r.prefix, queue, id, "moveToWaitingChildren", token, nodeOpts)
			require.NoError(r.t, err)
			switch {
			case out.Error != nil:
				res = fmt.Sprintf("code %d", out.Error.Code)
			case string(out.Result) == "true":
				res = "ok moved"
			default:
				res = "stays"
			}
		}
	} else {
		moved, err := r.manualJobs[key].MoveToWaitingChildren(ctx, droverOpts)
		switch {
		case err != nil:
			r.refused = err
			res = fmt.Sprintf("code %d", manualCode(r.t, err))
		case moved:
			res = "ok moved"
		default:
			res = "stays"
		}
	}
	if res != "stays" {
		r.taken = r.taken[1:]
	}
	return res
}

// stepTally counts drover's steps by operation and by what they did, so a
// campaign shows that each operation really ran (a step that is always
// refused, or always finds nothing, compares nothing).
type stepTally struct {
	mu sync.Mutex
	n  map[difftest.Op]*[3]int
}

var droverSteps stepTally

func (t *stepTally) note(op difftest.Op, result string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[difftest.Op]*[3]int{}
	}
	c := t.n[op]
	if c == nil {
		c = new([3]int)
		t.n[op] = c
	}
	switch {
	case strings.HasPrefix(result, "ok"), result == "code 0", result == "extended 1",
		strings.HasPrefix(result, "code 0 next") && result != "code 0 next none":
		c[0]++
	case result == "refused", strings.HasPrefix(result, "code -"), result == "extended 0":
		c[1]++
	default:
		c[2]++
	}
}

func (t *stepTally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ops := slices.Sorted(maps.Keys(t.n))
	var b strings.Builder
	for _, op := range ops {
		c := t.n[op]
		fmt.Fprintf(&b, "  %-26s %6d / %6d / %6d\n", op, c[0], c[1], c[2])
	}
	return b.String()
}

func countKnown(n int, known func(int) bool) int {
	c := 0
	for i := range n {
		if known(i) {
			c++
		}
	}
	return c
}

// divergence is the first step after which the two runs differ.
type divergence struct {
	step     int
	ref, mix string   // the step's results
	diff     []string // state differences (a = all Node, b = mixed)
	refState *statedump.Snapshot
	mixState *statedump.Snapshot
	// cross: the states were equal, the readers disagreed (crossRead).
	cross bool
	// refused is the error drover refused the step with ("refused"), if any.
	refused error
}

// knownFor returns the known divergence that explains d in p, or nil.
func knownFor(p *difftest.Program, d *divergence) *difftest.KnownDivergence {
	if d.refused != nil && !d.cross {
		// A step on OtherQueueName (an add there) may be refused by both.
		if k := difftest.KnownForRefusal(d.refused, d.ref == "refused", d.refState, d.mixState, queueName, difftest.OtherQueueName); k != nil {
			return k
		}
	}
	if d.ref != d.mix || d.cross {
		// A state mask cannot explain a difference in results or reads.
		return difftest.KnownFor(p, nil, nil, queueName)
	}
	return difftest.KnownFor(p, d.refState, d.mixState, queueName)
}

func (d *divergence) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "after step %d: results %q (Node only) vs %q (mixed)\n", d.step, d.ref, d.mix)
	for _, l := range d.diff {
		fmt.Fprintf(&s, "  %s\n", l)
	}
	if len(d.diff) > 0 {
		fmt.Fprintf(&s, "Node-only state (a):\n%s\nmixed state (b):\n%s", d.refState, d.mixState)
	}
	return s.String()
}

// runDifferential runs p once with Node doing every step and once mixed,
// each on a fresh prefix, and returns the first divergence or nil.
func runDifferential(t *testing.T, b *bundle, p *difftest.Program, known bool) *divergence {
	t.Helper()
	// Schedulers start hours after the anchor: the same instant in both
	// runs, so their runs' ids (which carry it) and due times agree.
	anchor := time.Now().UnixMilli() + 3*difftest.Hour
	ref := newProgramRun(t, b, known, anchor, p, false)
	defer ref.close()
	mix := newProgramRun(t, b, known, anchor, p, true)
	defer mix.close()
	mix.startEventReaders(context.Background())
	if p.Manual != nil {
		for _, r := range []*programRun{ref, mix} {
			r.manual = p.Manual
			for _, q := range []string{queueName, difftest.OtherQueueName} {
				require.NoError(t, r.o.ManualWorker(context.Background(), r.prefix, q, p.Manual.NodeOpts()))
			}
		}
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		by := impl(s.By)
		if s.NodeOnly() {
			by = nodeImpl // a shrunk step may have lost what drover needs
		}
		// One instant for both runs: a manual move to delayed is due at
		// the same time in both.
		ref.stepNow = time.Now().UnixMilli()
		mix.stepNow = ref.stepNow
		limited := false
		if by == droverImpl && (s.Op == difftest.OpWork || s.Op == difftest.OpManualTake || s.Op == difftest.OpStall) {
			lm := s.LimiterMax
			if s.Op == difftest.OpManualTake && p.Manual != nil {
				lm = p.Manual.LimiterMax
			}
			q, _ := mix.on(s)
			limited = mix.rateLimitedFor(context.Background(), keys.New(mix.prefix, q), lm)
		}
		began := time.Now().UnixMilli()
		var rr, mr string
		if s.Op == difftest.OpAddMixedBurst {
			// drover's group commit first: the all-Node run adds the
			// jobs in the order it committed them.
			mix.burstOrder = nil
			mr = mix.step(s, by)
			ref.burstOrder = mix.burstOrder
			rr = ref.step(s, nodeImpl)
		} else {
			rr = ref.step(s, nodeImpl)
			mr = mix.step(s, by)
		}
		if (s.Op == difftest.OpWork && s.Metrics > 0 || s.Op == difftest.OpManualFinish && p.Manual != nil && p.Manual.Metrics > 0) &&
			began/60_000 != time.Now().UnixMilli()/60_000 {
			// A minute began between the two runs' metrics writes: from
			// now on their per-minute data may differ by the clock alone
			// (see difftest.Deliberate, "metrics across a minute").
			ref.metricsSkew, mix.metricsSkew = true, true
		}
		if by == droverImpl {
			droverSteps.note(s.Op, mr)
			if s.OnOtherQueue() && s.Op != difftest.OpWork {
				// Job and queue steps on the flow children's queue.
				droverSteps.note(s.Op+" (on "+difftest.OtherQueueName+")", mr)
			}
			if s.OnAltPrefix() {
				// Job, work and queue steps under the other prefix.
				droverSteps.note(s.Op+" (under alt prefix)", mr)
			}
			if limited {
				// Takes that met an active rate limiter.
				droverSteps.note(s.Op+" (limited)", mr)
			}
			if s.Op == difftest.OpWork && s.Outcome.Kind == "rateLimited" {
				// Processors that rate-limited the queue and gave the job back.
				droverSteps.note(s.Op+" (rateLimited)", mr)
			}
			if s.Op == difftest.OpWork && s.Outcome.FetchNext && s.Concurrency <= 1 {
				// A running worker's path: "ok <id> <next id>" ran two.
				droverSteps.note(s.Op+" (fetchNext)", mr)
				if strings.Contains(strings.TrimPrefix(mr, "ok "), " ") {
					droverSteps.note(s.Op+" (fetchNext, ran 2)", mr)
				}
			}
			if s.Op == difftest.OpWork && s.Concurrency > 1 && s.Outcome.FetchNext {
				// A batch finish: "ok <taken> / <fetched>"; a fetch of
				// two or more is finishJobs' RPOP count above 1 (or its
				// general fetch of as many).
				droverSteps.note(s.Op+" (batch)", mr)
				if _, f, ok := strings.Cut(mr, " / "); ok && strings.Contains(f, " ") {
					droverSteps.note(s.Op+" (batch, fetched 2+)", mr)
				}
			} else if s.Op == difftest.OpWork && s.Concurrency == 2 {
				droverSteps.note(s.Op+" (concurrency 2)", mr)
				if strings.Contains(strings.TrimPrefix(mr, "ok "), " ") {
					droverSteps.note(s.Op+" (concurrency 2, ran 2)", mr)
				}
			}
			if s.Op == difftest.OpManualFinish && s.Outcome.FetchNext {
				// Finishes that take the next job ("code 0 next none":
				// done, nothing ready).
				droverSteps.note(s.Op+" (fetchNext)", mr)
			}
		}
		rs, ms := ref.state(), mix.state()
		diff := statedump.Diff(rs, ms)
		cross := false
		if len(diff) == 0 {
			// Same state: then both implementations must also read it
			// alike, and their QueueEvents deliver the step's events alike.
			diff = append(mix.crossRead(), mix.deliveredEvents()...)
			cross = len(diff) > 0
		}
		if rr != mr || len(diff) > 0 {
			return &divergence{step: i, ref: rr, mix: mr, diff: diff, refState: rs, mixState: ms, cross: cross, refused: mix.refused}
		}
	}
	return nil
}

// programRun is one run of a program on its own prefix.
type programRun struct {
	t      *testing.T
	o      *bullmqoracle.Oracle
	rdb    *redis.Client
	prefix string
	k      keys.Queue
	dq     *drover.Queue
	// dqOther is drover's Queue of OtherQueueName (Step.OnOtherQueue).
	dqOther *drover.Queue
	// otherIDs are the ids of the jobs added in OtherQueueName.
	otherIDs map[string]bool
	// altIDs are the ids of the flow children added under
	// difftest.AltPrefixOf's prefix, by add name, and altQueueOf their
	// queues there; altQueues are drover's Queues there, by name (made on
	// first use).
	altIDs     map[string]string
	altQueueOf map[string]string
	altQueues  map[string]*drover.Queue
	// fp adds OpAddFlows' trees (no defaults: BullMQ's FlowProducer.addBulk
	// takes no queuesOptions); fpDefaults adds OpAddFlow's trees and the
	// parent-linked adds with each queue's default job options, as Node's
	// FlowProducer.add with queuesOptions and Queue.add do.
	fp, fpDefaults *drover.FlowProducer
	// defaults are the program's default job options (nil: none);
	// otherDefaults are OtherQueueName's.
	defaults, otherDefaults *difftest.Add
	ids                     map[string]string // add name -> job id
	start                   int64
	anchor                  int64 // ms; schedulers start from it (runDifferential)
	workRan                 bool
	jitter                  bool
	known                   bool
	// cascades are the ranges of the events stream written by
	// steps that remove a flow's jobs (see difftest.Deliberate).
	cascades []difftest.EventRange
	// otherCascades are the same ranges of the other queues' events
	// streams, by their names in the dump: OtherQueueName's, and both
	// queues' under difftest.AltPrefixOf's prefix ("alt:q", "alt:q2"),
	// where a cascade reaches flow children there (campaign seed 2001919).
	otherCascades map[string][]difftest.EventRange
	// refused is drover's error when the last step was refused, else nil.
	refused error
	// stepNow is the instant (ms) runDifferential gave the current step,
	// the same in both runs.
	stepNow int64
	// taken are the jobs OpManualTake took and no OpManualFinish ended yet
	// (takenKey: queue and id), oldest first; manualJobs are drover's
	// handles of them by the same key, and manualWorkers are drover's
	// workers without a Processor, one per queue (made on first use).
	taken         []string
	manualJobs    map[string]*drover.Job
	manualWorkers map[string]*drover.Worker
	// takenTokens are the tokens OpManualTake took each job with, by
	// takenKey.
	takenTokens map[string]string
	// events are the mixed run's QueueEvents readers, one pair per
	// queue (none in the all-Node run).
	events []*eventReaders
	// metricsSkew: a metrics work step's two runs straddled a minute.
	metricsSkew bool
	// burstOrder is the order in which the mixed run's drover committed
	// the last OpAddMixedBurst's jobs (indexes of Step.Children); the
	// all-Node run adds them in that order.
	burstOrder []int
	// manual are the program's manual workers' options (nil: none).
	manual *difftest.ManualWorker
}

// newProgramRun starts a run of a program on a fresh prefix. eventsMaxLen
// (Program.EventsMaxLen), when not 0, caps both queues' events streams:
// with Node's streams.events.maxLen QueueOption, or, with droverCap, with
// drover's Queue.SetEventsMaxLen after Node's Queues wrote the default.
func newProgramRun(t *testing.T, b *bundle, known bool, anchor int64, prog *difftest.Program, droverCap bool) *programRun {
	t.Helper()
	defaults, otherDefaults, eventsMaxLen := prog.Defaults, prog.OtherDefaults, int64(prog.EventsMaxLen)
	prefix := redistest.UniquePrefix()
	qo := &drover.QueueOptions{Prefix: prefix, BackoffTypes: customBackoffs, AddBulkChunk: prog.AddChunk}
	qoOther := &drover.QueueOptions{Prefix: prefix, BackoffTypes: customBackoffs, AddBulkChunk: prog.AddChunk}
	fpo := &drover.FlowProducerOptions{Prefix: prefix, BackoffTypes: customBackoffs}
	byQueue := map[string]*drover.JobOptions{}
	if defaults != nil {
		qo.DefaultJobOptions = defaults.DroverOpts()
		byQueue[queueName] = defaults.DroverOpts()
	}
	if otherDefaults != nil {
		qoOther.DefaultJobOptions = otherDefaults.DroverOpts()
		byQueue[difftest.OtherQueueName] = otherDefaults.DroverOpts()
	}
	dq, err := drover.NewQueue(b.rdb, queueName, qo)
	require.NoError(t, err)
	dqOther, err := drover.NewQueue(b.rdb, difftest.OtherQueueName, qoOther)
	require.NoError(t, err)
	fp, err := drover.NewFlowProducer(b.rdb, fpo)
	require.NoError(t, err)
	fpDefaults := fp
	if len(byQueue) > 0 {
		fpd := *fpo
		fpd.DefaultJobOptions = byQueue
		fpDefaults, err = drover.NewFlowProducer(b.rdb, &fpd)
		require.NoError(t, err)
	}
	r := &programRun{
		t: t, o: b.oracle, rdb: b.rdb, prefix: prefix, k: keys.New(prefix, queueName), dq: dq, dqOther: dqOther, otherIDs: map[string]bool{},
		fp: fp, fpDefaults: fpDefaults,
		altIDs: map[string]string{}, altQueueOf: map[string]string{}, altQueues: map[string]*drover.Queue{},
		ids: map[string]string{}, start: time.Now().UnixMilli(), anchor: anchor, known: known, takenTokens: map[string]string{},
		manualJobs: map[string]*drover.Job{}, manualWorkers: map[string]*drover.Worker{},
		defaults: defaults, otherDefaults: otherDefaults,
	}
	nodeCap := eventsMaxLen
	if droverCap {
		nodeCap = 0
	}
	if defaults != nil || nodeCap != 0 {
		var opts map[string]any
		if defaults != nil {
			opts = defaults.NodeOpts()
		}
		require.NoError(t, r.o.OpenQueueCapped(context.Background(), prefix, queueName, opts, nodeCap))
	}
	if otherDefaults != nil || nodeCap != 0 {
		var opts map[string]any
		if otherDefaults != nil {
			opts = otherDefaults.NodeOpts()
		}
		require.NoError(t, r.o.OpenQueueCapped(context.Background(), prefix, difftest.OtherQueueName, opts, nodeCap))
	}
	// A Node app has the queues open from the start: its Queue writes meta.
	_, err = r.o.GetJobCounts(context.Background(), prefix, queueName)
	require.NoError(t, err)
	_, err = r.o.GetJobCounts(context.Background(), prefix, difftest.OtherQueueName)
	require.NoError(t, err)
	if usesAltPrefix(prog) {
		// Steps under the other prefix open Node's Queues there, which
		// write their meta: open them from the start in both runs.
		for _, q := range []string{queueName, difftest.OtherQueueName} {
			_, err = r.o.GetJobCounts(context.Background(), difftest.AltPrefixOf(prefix), q)
			require.NoError(t, err)
		}
	}
	if droverCap && eventsMaxLen != 0 {
		require.NoError(t, dq.SetEventsMaxLen(context.Background(), eventsMaxLen))
		require.NoError(t, dqOther.SetEventsMaxLen(context.Background(), eventsMaxLen))
	}
	return r
}

func (r *programRun) close() {
	ctx := context.Background()
	for _, w := range r.manualWorkers {
		require.NoError(r.t, w.Close(ctx))
	}
	require.NoError(r.t, r.o.Forget(ctx, r.prefix, queueName))
	require.NoError(r.t, r.o.Forget(ctx, r.prefix, difftest.OtherQueueName))
	require.NoError(r.t, r.o.Forget(ctx, difftest.AltPrefixOf(r.prefix), queueName))
	require.NoError(r.t, r.o.Forget(ctx, difftest.AltPrefixOf(r.prefix), difftest.OtherQueueName))
	redistest.DeletePrefix(ctx, r.rdb, r.prefix)
}

// usesAltPrefix reports whether a step of p acts under
// difftest.AltPrefixOf's prefix.
func usesAltPrefix(p *difftest.Program) bool {
	for i := range p.Steps {
		if p.Steps[i].OnAltPrefix() {
			return true
		}
	}
	return false
}

// altQueue is drover's Queue of queue under difftest.AltPrefixOf's prefix.
func (r *programRun) altQueue(queue string) *drover.Queue {
	r.t.Helper()
	if q := r.altQueues[queue]; q != nil {
		return q
	}
	q, err := drover.NewQueue(r.rdb, queue, &drover.QueueOptions{Prefix: difftest.AltPrefixOf(r.prefix), BackoffTypes: customBackoffs})
	require.NoError(r.t, err)
	r.altQueues[queue] = q
	return q
}

// target is the queue s acts on (its name and drover's Queue) and the id
// of its job: under the other prefix with s.OnAltPrefix, the flow child
// there in the queue it was added to.
func (r *programRun) target(s *difftest.Step) (string, *drover.Queue, string) {
	q, dq := r.on(s)
	if !s.OnAltPrefix() {
		return q, dq, r.id(s.Job)
	}
	if aq, ok := r.altQueueOf[s.Job]; ok && s.Job != "" {
		q, dq = aq, r.altQueue(aq)
	}
	return q, dq, cmp.Or(r.altIDs[s.Job], "nosuch")
}

// prefixOf is the key prefix s acts under: difftest.AltPrefixOf's when
// s.OnAltPrefix, else the run's.
func (r *programRun) prefixOf(s *difftest.Step) string {
	if s.OnAltPrefix() {
		return difftest.AltPrefixOf(r.prefix)
	}
	return r.prefix
}

func (r *programRun) state() *statedump.Snapshot {
	r.t.Helper()
	raw, err := statedump.Dump(context.Background(), r.rdb, r.prefix)
	require.NoError(r.t, err)
	s, err := difftest.Comparable(raw, difftest.NormContext{
		// The queues of flow children under AltPrefixOf(prefix) are
		// the run's alt:<queue>.
		Queue: queueName, Others: []string{difftest.OtherQueueName, "alt:" + queueName, "alt:" + difftest.OtherQueueName}, StartMs: r.start, WorkRan: r.workRan, Jitter: r.jitter, Known: r.known, SortedEvents: r.cascades,
		OthersSortedEvents: r.otherCascades, MetricsSkew: r.metricsSkew,
	})
	require.NoError(r.t, err)
	return s
}

// noteCascade starts a step that may remove a flow's jobs in both queues;
// the function it returns records the events the step wrote, in each
// queue's stream, as compared sorted.
func (r *programRun) noteCascade() func() {
	main := r.k.Events()
	others := map[string]string{
		difftest.OtherQueueName:          keys.New(r.prefix, difftest.OtherQueueName).Events(),
		"alt:" + queueName:               keys.New(difftest.AltPrefixOf(r.prefix), queueName).Events(),
		"alt:" + difftest.OtherQueueName: keys.New(difftest.AltPrefixOf(r.prefix), difftest.OtherQueueName).Events(),
	}
	from, added := r.lastEventID(main), r.eventsAdded(main)
	froms := make(map[string]string, len(others))
	addeds := make(map[string]int64, len(others))
	for name, stream := range others {
		froms[name], addeds[name] = r.lastEventID(stream), r.eventsAdded(stream)
	}
	return func() {
		r.cascades = append(r.cascades, difftest.EventRange{After: from, Upto: r.lastEventID(main), Written: int(r.eventsAdded(main) - added)})
		if r.otherCascades == nil {
			r.otherCascades = make(map[string][]difftest.EventRange)
		}
		for name, stream := range others {
			r.otherCascades[name] = append(r.otherCascades[name], difftest.EventRange{After: froms[name], Upto: r.lastEventID(stream),
				Written: int(r.eventsAdded(stream) - addeds[name])})
		}
	}
}

// eventsAdded is how many entries were ever added to an events stream
// (XINFO STREAM entries-added; 0 for a stream that does not exist).
func (r *programRun) eventsAdded(stream string) int64 {
	r.t.Helper()
	info, err := r.rdb.XInfoStream(context.Background(), stream).Result()
	if err != nil && strings.Contains(err.Error(), "no such key") {
		return 0
	}
	require.NoError(r.t, err)
	return info.EntriesAdded
}

// lastEventID is the id of the last entry of an events stream, "0-0" when
// it has none.
func (r *programRun) lastEventID(stream string) string {
	r.t.Helper()
	xs, err := r.rdb.XRevRangeN(context.Background(), stream, "+", "-", 1).Result()
	require.NoError(r.t, err)
	if len(xs) == 0 {
		return "0-0"
	}
	return xs[0].ID
}

func (r *programRun) id(name string) string {
	if name == difftest.TakenJob {
		if len(r.taken) == 0 {
			return "nosuch"
		}
		_, id := splitTaken(r.taken[0])
		return id
	}
	if id, ok := r.ids[name]; ok {
		return id
	}
	return "nosuch"
}

// result renders a step's outcome for comparison: what it returned, or
// "refused" when it failed with an error of the implementation (the texts
// differ by design). Other errors (the oracle's process, Redis) fail the
// test.
func (r *programRun) result(v string, err error) string {
	r.t.Helper()
	if err == nil {
		return "ok " + v
	}
	var ne *bullmqoracle.NodeError
	if errors.As(err, &ne) {
		return "refused"
	}
	var de *drover.JobError
	if errors.As(err, &de) || drover.IsRefusal(err) || errors.Is(err, drover.ErrInvalidOption) ||
		errors.Is(err, drover.ErrInvalidData) || errors.Is(err, drover.ErrInvalidJobID) ||
		errors.Is(err, drover.ErrSchedulerJob) || errors.Is(err, drover.ErrActiveJobs) || errors.Is(err, drover.ErrQueueNotPaused) ||
		errors.Is(err, drover.ErrParentNotFound) || errors.Is(err, drover.ErrParentConflict) {
		r.refused = err
		return "refused"
	}
	r.t.Fatalf("step failed outside the implementations: %v", err)
	return ""
}

func behaviorOf(o *difftest.Outcome) bullmqoracle.Behavior {
	switch o.Kind {
	case "fail":
		return bullmqoracle.Fail(o.Message)
	case "unrecoverable":
		return bullmqoracle.Unrecoverable(o.Message)
	case "delay":
		return bullmqoracle.MoveToDelayed(time.Duration(o.Delay)*time.Millisecond, 1<<30, nil)
	case "rateLimited":
		return bullmqoracle.RateLimited(time.Duration(o.Delay)*time.Millisecond, 1<<30, nil)
	}
	return bullmqoracle.Return(o.Value)
}

func (r *programRun) noteJitter(a *difftest.Add) {
	if a.Backoff != nil && a.Backoff.Jitter > 0 {
		r.jitter = true
	}
}

// parentQueue is the queue of a's parent: the queue of the oldest job
// taken by hand for difftest.TakenJob.
func (r *programRun) parentQueue(a *difftest.Add) string {
	if a.Parent == difftest.TakenJob && len(r.taken) > 0 {
		queue, _ := splitTaken(r.taken[0])
		return queue
	}
	if a.ParentInOther {
		return difftest.OtherQueueName
	}
	return queueName
}

// nodeOpts are a's options for Node, with its parent link and timestamp
// resolved.
func (r *programRun) nodeOpts(a *difftest.Add) map[string]any {
	m := a.NodeOpts()
	if a.Parent != "" {
		m["parent"] = map[string]any{"id": r.id(a.Parent), "queue": r.prefix + ":" + r.parentQueue(a)}
	}
	if a.TimestampAgo != 0 {
		m["timestamp"] = r.stepNow - a.TimestampAgo
	}
	return m
}

// droverOpts are a's options for drover, with its timestamp resolved.
func (r *programRun) droverOpts(a *difftest.Add) *drover.JobOptions {
	o := a.DroverOpts()
	if a.TimestampAgo != 0 {
		o.Timestamp = time.UnixMilli(r.stepNow - a.TimestampAgo)
	}
	return o
}

// readyIn reports whether a worker of the queue of k would take a job
// now: the queue is not paused, its global concurrency (if any) is not
// reached by the active jobs (stalled ones included), and wait or
// prioritized holds one (nothing delayed is ever due).
func (r *programRun) readyIn(ctx context.Context, k keys.Queue) bool {
	return r.readyFor(ctx, k, 0)
}

// awaitTakes waits until full says the worker's processors hold what the
// step wants, or nothing was ready for ten 10 ms looks in a row (a take
// arriving starts the count again), or droverTakeTimeout passed.
func (r *programRun) awaitTakes(ctx context.Context, wk keys.Queue, limiterMax int, arrived <-chan struct{}, full func() bool) {
	idle := 0
	for deadline := time.Now().Add(droverTakeTimeout); idle < 10 && time.Now().Before(deadline); {
		if full() {
			return
		}
		select {
		case <-arrived:
			idle = 0
			continue
		case <-time.After(10 * time.Millisecond):
		}
		if r.readyFor(ctx, wk, limiterMax) {
			idle = 0
		} else {
			idle++
		}
	}
}

// readyFor is readyIn for a worker whose limiter allows limiterMax takes
// per window (0: none).
func (r *programRun) readyFor(ctx context.Context, k keys.Queue, limiterMax int) bool {
	r.t.Helper()
	paused, err := r.rdb.HExists(ctx, k.Meta(), "paused").Result()
	require.NoError(r.t, err)
	if c, err := r.rdb.HGet(ctx, k.Meta(), "concurrency").Int64(); err == nil {
		active, err := r.rdb.LLen(ctx, k.Active()).Result()
		require.NoError(r.t, err)
		if active >= c {
			return false
		}
	} else if !errors.Is(err, redis.Nil) {
		require.NoError(r.t, err)
	}
	if r.rateLimitedFor(ctx, k, limiterMax) {
		return false
	}
	n, err := r.rdb.LLen(ctx, k.Wait()).Result()
	require.NoError(r.t, err)
	m, err := r.rdb.ZCard(ctx, k.Prioritized()).Result()
	require.NoError(r.t, err)
	return !paused && n+m > 0
}

// rateLimitedFor reports whether the limiter refuses takes now to a worker
// whose limiter allows limiterMax takes per window (0: none), as BullMQ's
// moveToActive decides: a global rate limit (meta max, which wins over the
// worker's) or the worker's is set and the limiter key counts at least max
// takes and still has time to live.
func (r *programRun) rateLimitedFor(ctx context.Context, k keys.Queue, limiterMax int) bool {
	r.t.Helper()
	max, err := r.rdb.HGet(ctx, k.Meta(), "max").Float64()
	if errors.Is(err, redis.Nil) {
		if limiterMax == 0 {
			return false
		}
		max, err = float64(limiterMax), nil
	}
	require.NoError(r.t, err)
	used, err := r.rdb.Get(ctx, k.Limiter()).Float64()
	if errors.Is(err, redis.Nil) {
		used = 0
	} else {
		require.NoError(r.t, err)
	}
	if max > used {
		return false
	}
	pttl, err := r.rdb.PTTL(ctx, k.Limiter()).Result()
	require.NoError(r.t, err)
	return pttl > 0
}

// on is the queue s acts on, its name and drover's Queue:
// OtherQueueName's when s.OnOtherQueue, else the program's.
func (r *programRun) on(s *difftest.Step) (string, *drover.Queue) {
	if s.OnAltPrefix() {
		q := queueName
		if s.OtherQueue {
			q = difftest.OtherQueueName
		}
		return q, r.altQueue(q)
	}
	if s.OnOtherQueue() {
		return difftest.OtherQueueName, r.dqOther
	}
	return queueName, r.dq
}

// step performs s with the given implementation and returns its result.
func (r *programRun) step(s *difftest.Step, by impl) string {
	r.t.Helper()
	r.refused = nil
	switch s.Op {
	case difftest.OpRemove, difftest.OpDrain, difftest.OpClean, difftest.OpObliterate, difftest.OpRemoveUnprocessedChildren:
		// (removeUnprocessedChildren walks the dependencies set too:
		// campaign C seed 20360.)
		defer r.noteCascade()()
	}
	return r.do(s, by)
}

func (r *programRun) do(s *difftest.Step, by impl) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	node := by == nodeImpl
	o, p := r.o, r.prefixOf(s)
	q, dq, id := r.target(s)
	switch s.Op {
	case difftest.OpAdd:
		a := s.Add
		r.noteJitter(a)
		var got string
		var err error
		if node {
			got, err = o.Add(ctx, p, q, a.JobNameOf(), a.Payload(), r.nodeOpts(a))
		} else if a.Parent != "" {
			// A parent link from Go: a lone flow root with a Parent.
			var n *drover.JobNode
			n, err = r.fpDefaults.Add(ctx, drover.FlowJob{Name: a.JobNameOf(), QueueName: q, Data: a.Payload(), Opts: r.droverOpts(a),
				Parent: &drover.JobRef{Prefix: p, Queue: r.parentQueue(a), ID: r.id(a.Parent)}})
			if err == nil {
				got = n.Job.ID
			}
		} else {
			var res *drover.AddResult
			res, err = dq.Add(ctx, a.JobNameOf(), a.Payload(), r.droverOpts(a))
			if err == nil {
				got = res.Job.ID
			}
		}
		if err == nil {
			r.ids[a.Name] = got
			if s.OnOtherQueue() {
				r.otherIDs[got] = true
			}
		}
		return r.result(got, err)
	case difftest.OpAddBurst:
		return r.addBurst(ctx, s, node)
	case difftest.OpAddMixedBurst:
		return r.addMixedBurst(ctx, s, node)
	case difftest.OpSetIDCounter:
		// The harness's, alike in both runs.
		require.NoError(r.t, r.rdb.Set(ctx, r.k.ID(), s.Delay, 0).Err())
		return "ok"
	case difftest.OpStaleHash:
		// The harness's, alike in both runs: a hash at the next
		// generated id's key.
		c, err := r.rdb.Get(ctx, r.k.ID()).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			require.NoError(r.t, err)
		}
		next := strconv.FormatInt(c+1, 10)
		// Stamps as a job that finished two hours ago left them (13
		// digits: BullMQ's clean compares them to its cut-off as text).
		old := r.stepNow - 2*difftest.Hour
		fields := []any{"name", "stale", "data", `{"stale":true}`, "returnvalue", "7", "processedOn", old - 1000, "finishedOn", old,
			"atm", "2", "ats", "3", "failedReason", "old", "stale", "x"}
		if s.Limit == 1 {
			fields = append(fields, "parentKey", r.k.Job("gone"), "parent", fmt.Sprintf(`{"id":"gone","queueKey":%q}`, r.k.Base()[:len(r.k.Base())-1]))
		}
		require.NoError(r.t, r.rdb.HSet(ctx, r.k.Job(next), fields...).Err())
		return "ok " + next
	case difftest.OpAddBulk:
		var ids []string
		var err error
		if node {
			jobs := make([]bullmqoracle.BulkJob, len(s.Children))
			for i, a := range s.Children {
				r.noteJitter(a)
				jobs[i] = bullmqoracle.BulkJob{Name: a.JobNameOf(), Data: a.Payload(), Opts: r.nodeOpts(a)}
			}
			ids, err = o.AddBulk(ctx, p, q, jobs)
		} else {
			jobs := make([]drover.BulkJob, len(s.Children))
			for i, a := range s.Children {
				r.noteJitter(a)
				jobs[i] = drover.BulkJob{Name: a.JobNameOf(), Data: a.Payload(), Opts: r.droverOpts(a)}
			}
			var res []*drover.AddResult
			res, err = dq.AddBulk(ctx, jobs)
			for _, x := range res {
				if x != nil && x.Job != nil {
					ids = append(ids, x.Job.ID)
				}
			}
		}
		if err == nil {
			for i, a := range s.Children {
				r.ids[a.Name] = ids[i]
			}
		}
		return r.result(fmt.Sprint(ids), err)
	case difftest.OpAddFlow:
		root := *s.Add // the tree: the step's parent with its children
		root.Children = s.Children
		return r.addFlows(ctx, []*difftest.Add{&root}, node, false)
	case difftest.OpAddFlows:
		return r.addFlows(ctx, s.Children, node, true)
	case difftest.OpUpsertScheduler:
		a, c := s.Add, s.Scheduler
		r.noteJitter(a)
		start := r.anchor + c.Start
		var got string
		var err error
		if node {
			repeat := map[string]any{"every": c.Every, "startDate": start}
			if c.Pattern != "" {
				repeat = map[string]any{"pattern": c.Pattern, "startDate": start}
			}
			if c.Limit > 0 {
				repeat["limit"] = c.Limit
			}
			if c.End != 0 {
				repeat["endDate"] = r.anchor + c.End
			}
			if c.Immediately {
				repeat["immediately"] = true
			}
			if c.TZ != "" {
				repeat["tz"] = c.TZ
			}
			if c.Offset != 0 {
				repeat["offset"] = c.Offset
			}
			got, err = o.UpsertJobScheduler(ctx, p, q, c.ID, repeat, map[string]any{"name": a.JobNameOf(), "data": a.Payload(), "opts": r.nodeOpts(a)})
		} else {
			ro := drover.RepeatOptions{
				Every: time.Duration(c.Every) * time.Millisecond, Pattern: c.Pattern, StartDate: time.UnixMilli(start), Limit: c.Limit,
			}
			if c.End != 0 {
				ro.EndDate = time.UnixMilli(r.anchor + c.End)
			}
			ro.Immediately = c.Immediately
			ro.TZ, ro.Offset = c.TZ, time.Duration(c.Offset)*time.Millisecond
			var job *drover.Job
			job, err = dq.UpsertJobScheduler(ctx, c.ID, ro, &drover.JobTemplate{Name: a.JobNameOf(), Data: a.Payload(), Opts: a.DroverOpts()})
			if job != nil {
				got = job.ID
			}
		}
		if err == nil && got != "" {
			r.ids[a.Name] = got
		}
		return r.result(got, err)
	case difftest.OpRemoveScheduler:
		var ok bool
		var err error
		if node {
			ok, err = o.RemoveJobScheduler(ctx, p, q, s.Scheduler.ID)
		} else {
			ok, err = dq.RemoveJobScheduler(ctx, s.Scheduler.ID)
		}
		return r.result(strconv.FormatBool(ok), err)
	case difftest.OpWork:
		r.workRan = true
		// (The program's queue, OtherQueueName's with Step.OtherQueue,
		// under the other prefix with Step.AltPrefix.)
		wq, wk := q, keys.New(p, q)
		if !r.readyFor(ctx, wk, s.LimiterMax) {
			return "none"
		}
		if node {
			wo := bullmqoracle.StepWorkerOpts{MaxDataPoints: s.Metrics, MaxStartedAttempts: s.MaxStarted}
			if s.LimiterMax > 0 {
				wo.Limiter = difftest.NodeLimiter(s.LimiterMax)
			}
			if k := s.WorkerRemoveOnComplete; k != nil {
				wo.RemoveOnComplete, _ = k.Node().(map[string]any)
			}
			if k := s.WorkerRemoveOnFail; k != nil {
				wo.RemoveOnFail, _ = k.Node().(map[string]any)
			}
			wo.FetchNext, wo.Concurrency = s.Outcome.FetchNext, s.Concurrency
			if s.Concurrency > 1 && s.Outcome.FetchNext {
				wo.FetchNext, wo.Concurrency, wo.Batch = false, 0, s.Concurrency
				// The batch's jobs share the call's time (finishedOn,
				// their finished set's score) on both sides; moves to
				// delayed, due from each attempt's end in drover's and
				// from that one time in Node's step, keep the order taken
				// either way (drover's processors return in that order).
				wo.SameMs = true
			}
			got, err := o.StepWorkOpts(ctx, p, wq, behaviorOf(s.Outcome), wo)
			return r.result(got, err)
		}
		if s.Concurrency > 1 && s.Outcome.FetchNext {
			if got := r.droverWorkBatch(ctx, wk, wq, behaviorOf(s.Outcome), s); got != "took none" {
				return r.result(got, nil)
			}
			return "took none"
		}
		if s.Concurrency == 2 {
			if got := r.droverWorkPair(ctx, wk, wq, behaviorOf(s.Outcome), s); got != "took none" {
				return r.result(got, nil)
			}
			return "took none"
		}
		if s.Outcome.FetchNext {
			if got := r.droverWorkNext(ctx, wq, behaviorOf(s.Outcome), s); got != "took none" {
				return r.result(got, nil)
			}
			return "took none"
		}
		if got := r.droverWork(ctx, wq, behaviorOf(s.Outcome), s); got != "took none" {
			return r.result(got, nil)
		}
		return "took none"
	case difftest.OpStall:
		r.workRan = true
		k := keys.New(p, q)
		if !r.readyIn(ctx, k) {
			return "none"
		}
		var got string
		if node {
			var err error
			got, err = o.StepTake(ctx, p, q)
			require.NoError(r.t, err)
		} else {
			f, err := scripts.MoveToActive(ctx, r.rdb, k, scripts.FetchArgs{
				Now: time.Now().UnixMilli(), Count: 1, Token: "dead:1", LockDuration: 30000, WorkerName: workerName,
			})
			require.NoError(r.t, err)
			if len(f.Jobs) == 0 {
				// A job was ready (Node's worker would take it): a
				// divergence, compared and shrunk like any other.
				return fmt.Sprintf("took none (rate limit %d ms)", f.RateLimitTTL)
			}
			got = f.Jobs[0].ID
			// A drover worker makes a scheduler's next run before
			// anything else, as Node's getNextJob does: then it dies.
			w, err := drover.NewWorker(r.rdb, q, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
				&drover.WorkerOptions{Prefix: p, Name: workerName})
			require.NoError(r.t, err)
			require.NoError(r.t, seam.AdvanceScheduler(ctx, w, got, f.Jobs[0].Hash))
		}
		// The worker died: its lock expires.
		require.NoError(r.t, r.rdb.Del(ctx, k.Lock(got)).Err())
		return "ok " + got
	case difftest.OpCheckStalled:
		r.workRan = true
		k := keys.New(p, q)
		// Each check is a new interval.
		require.NoError(r.t, r.rdb.Del(ctx, k.StalledCheck()).Err())
		var ids []string
		// WorkerOptions.MaxStalledCount's reading: 0 the default, below 0 none.
		maxStalled := max(cmp.Or(s.Limit, drover.MaxStalledCountDefault), 0)
		if node {
			var err error
			ids, err = o.StepCheckStalledMax(ctx, p, q, maxStalled)
			require.NoError(r.t, err)
		} else {
			_, moved, err := scripts.MoveStalledJobsToWait(ctx, r.rdb, k, time.Now().UnixMilli(), 30000, maxStalled)
			require.NoError(r.t, err)
			for _, m := range moved {
				ids = append(ids, m.ID)
			}
		}
		slices.Sort(ids)
		return fmt.Sprintf("ok %v", ids)
	case difftest.OpRetry:
		if node {
			return r.result("", o.RetryJob(ctx, p, q, id, s.State, s.ResetMade, s.ResetStarted))
		}
		return r.result("", dq.Job(id).Retry(ctx, drover.JobState(s.State),
			&drover.RetryOptions{ResetAttemptsMade: s.ResetMade, ResetAttemptsStarted: s.ResetStarted}))
	case difftest.OpRetryJobs:
		var before int64 // 0: now, both sides' default
		if s.Delay != 0 {
			before = r.stepNow + s.Delay
		}
		if node {
			return r.result("", o.RetryJobs(ctx, p, q, bullmqoracle.RetryJobsOptions{State: s.State, Count: s.Limit, Timestamp: before}))
		}
		ro := &drover.RetryJobsOptions{State: drover.JobState(s.State), Count: s.Limit}
		if before != 0 {
			ro.OlderThan = time.UnixMilli(before)
		}
		_, err := dq.RetryJobs(ctx, ro)
		return r.result("", err)
	case difftest.OpPromote:
		if node {
			return r.result("", o.Promote(ctx, p, q, id))
		}
		return r.result("", dq.Job(id).Promote(ctx))
	case difftest.OpPromoteJobs:
		if node {
			return r.result("", o.PromoteJobs(ctx, p, q, s.Limit))
		}
		_, err := dq.PromoteJobs(ctx, s.Limit)
		return r.result("", err)
	case difftest.OpChangeDelay:
		if node {
			return r.result("", o.ChangeDelay(ctx, p, q, id, s.Delay))
		}
		return r.result("", dq.Job(id).ChangeDelay(ctx, time.Duration(s.Delay)*time.Millisecond))
	case difftest.OpChangePriority:
		if node {
			return r.result("", o.ChangePriority(ctx, p, q, id, s.Priority, s.LIFO))
		}
		return r.result("", dq.Job(id).ChangePriority(ctx, s.Priority, s.LIFO))
	case difftest.OpRemove:
		if node {
			remove := o.Remove
			if s.KeepChildren {
				remove = o.RemoveKeepChildren
			}
			code, err := remove(ctx, p, q, id)
			if err == nil && code == 0 {
				return "refused"
			}
			return r.result("", err)
		}
		err := dq.Job(id).Remove(ctx, &drover.RemoveOptions{KeepChildren: s.KeepChildren})
		if errors.Is(err, drover.ErrJobNotFound) {
			err = nil // Node's Queue.remove returns 1 for a missing job (see difftest.Deliberate)
		}
		return r.result("", err)
	case difftest.OpDrain:
		if node {
			return r.result("", o.Drain(ctx, p, q, s.Delayed))
		}
		_, err := dq.Drain(ctx, s.Delayed)
		return r.result("", err)
	case difftest.OpClean:
		var ids []string
		var err error
		if node {
			ids, err = o.Clean(ctx, p, q, s.Delay, s.Limit, s.State)
		} else {
			st := drover.JobState(s.State)
			if s.State == "wait" || s.State == "waiting" {
				st = drover.StateWaiting // Node's clean takes both names
			}
			ids, err = dq.Clean(ctx, time.Duration(s.Delay)*time.Millisecond, s.Limit, st)
		}
		slices.Sort(ids)
		return r.result(fmt.Sprint(ids), err)
	case difftest.OpObliterate:
		if node {
			return r.result("", o.ObliterateCount(ctx, p, q, !s.NoForce, s.Limit))
		}
		return r.result("", dq.Obliterate(ctx, &drover.ObliterateOptions{Force: !s.NoForce, Count: s.Limit}))
	case difftest.OpPause:
		if node {
			return r.result("", o.Pause(ctx, p, q))
		}
		return r.result("", dq.Pause(ctx))
	case difftest.OpResume:
		if node {
			return r.result("", o.Resume(ctx, p, q))
		}
		return r.result("", dq.Resume(ctx))
	case difftest.OpProgress:
		if node {
			return r.result("", o.UpdateProgress(ctx, p, q, id, s.Value))
		}
		return r.result("", dq.Job(id).UpdateProgress(ctx, s.Value))
	case difftest.OpUpdateData:
		if node {
			return r.result("", o.UpdateData(ctx, p, q, id, s.Value))
		}
		return r.result("", dq.Job(id).UpdateData(ctx, s.Value))
	case difftest.OpLog:
		if node {
			n, err := o.Log(ctx, p, q, id, s.Line)
			return r.result(strconv.FormatInt(n, 10), err)
		}
		j, err := dq.GetJob(ctx, id)
		if err != nil {
			return r.result("", err)
		}
		n, err := j.Log(ctx, s.Line)
		return r.result(strconv.Itoa(n), err)
	case difftest.OpManualTake:
		r.workRan = true // as a work step, it consumes markers
		var id string
		if node {
			// BullMQ's worker remembers a rate limit it met and takes
			// nothing until it passes, even once the limiter key is gone;
			// drover's NextJob asks Redis each time (difftest.Deliberate).
			var err error
			id, err = o.ManualNextForgetLimit(ctx, p, q, s.Token, nil)
			require.NoError(r.t, err)
			delete(r.manualJobs, takenKey(q, id)) // a drover handle of an earlier take is stale
		} else {
			job, err := r.droverManual(q).NextJob(ctx, s.Token, 0)
			require.NoError(r.t, err)
			if job != nil {
				id = job.ID
				r.manualJobs[takenKey(q, id)] = job
			}
		}
		if id == "" {
			return "none"
		}
		r.taken = append(r.taken, takenKey(q, id))
		r.takenTokens[takenKey(q, id)] = s.Token
		return "ok " + id
	case difftest.OpManualFinish:
		r.workRan = true
		if len(r.taken) == 0 {
			return "none"
		}
		return r.manualFinish(ctx, s, node)
	case difftest.OpManualWaitChildren:
		r.workRan = true
		if len(r.taken) == 0 {
			return "none"
		}
		child := ""
		if s.Job != "" {
			child = r.id(s.Job)
		}
		return r.manualWaitChildren(ctx, node, child, q)
	case difftest.OpSetGlobalRateLimit:
		if node {
			return r.result("", o.QueueCall(ctx, p, q, "setGlobalRateLimit", nil, s.Limit, s.Delay))
		}
		return r.result("", dq.SetGlobalRateLimit(ctx, s.Limit, time.Duration(s.Delay)*time.Millisecond))
	case difftest.OpRemoveGlobalRateLimit:
		if node {
			return r.result("", o.QueueCall(ctx, p, q, "removeGlobalRateLimit", nil))
		}
		return r.result("", dq.RemoveGlobalRateLimit(ctx))
	case difftest.OpRateLimit:
		if node {
			return r.result("", o.QueueCall(ctx, p, q, "rateLimit", nil, s.Delay))
		}
		return r.result("", dq.RateLimit(ctx, time.Duration(s.Delay)*time.Millisecond))
	case difftest.OpRemoveRateLimitKey:
		var ok bool
		var err error
		if node {
			var n int
			err = o.QueueCall(ctx, p, q, "removeRateLimitKey", &n)
			ok = n > 0
		} else {
			ok, err = dq.RemoveRateLimitKey(ctx)
		}
		return r.result(strconv.FormatBool(ok), err)
	case difftest.OpGetCounts:
		types := []string{"active", "completed", "delayed", "failed", "paused", "prioritized", "wait", "waiting-children"}
		got := map[string]int64{}
		var err error
		if node {
			got, err = o.GetJobCounts(ctx, p, q, types...)
		} else {
			var counts map[drover.JobState]int64
			counts, err = dq.GetJobCounts(ctx, droverStates(types)...)
			for st, n := range counts {
				got[nodeStateName(st)] = n
			}
		}
		parts := make([]string, 0, len(got))
		for k, n := range got {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(parts)
		return r.result(strings.Join(parts, " "), err)
	case difftest.OpGetJobs, difftest.OpGetJobIDs:
		end := -1
		if s.Limit > 0 {
			end = s.Priority + s.Limit - 1
		}
		var ids []string
		var err error
		types := []string{s.State}
		if len(s.Types) > 0 {
			types = s.Types
		}
		switch {
		case node && s.Op == difftest.OpGetJobIDs:
			ids, err = o.GetRanges(ctx, p, q, types, s.Priority, end, !s.LIFO)
		case node:
			ids, err = o.GetJobs(ctx, p, q, types, s.Priority, end, !s.LIFO)
		case s.Op == difftest.OpGetJobIDs:
			ids, err = dq.GetJobIDs(ctx, droverStates(types), int64(s.Priority), int64(end), !s.LIFO)
		default:
			var jobs []*drover.Job
			jobs, err = dq.GetJobs(ctx, droverStates(types), int64(s.Priority), int64(end), !s.LIFO)
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
		}
		return r.result(fmt.Sprint(ids), err)
	case difftest.OpGetScheduler, difftest.OpGetSchedulers, difftest.OpGetDedupJobID, difftest.OpGetRateLimitTTL,
		difftest.OpGetCountsPerPriority, difftest.OpGetLimits, difftest.OpFlowRead, difftest.OpGetJob,
		difftest.OpGetLogs, difftest.OpGetCountByTypes, difftest.OpIsPaused, difftest.OpGetFlow, difftest.OpGetMetrics,
		difftest.OpGetMeta, difftest.OpGetSchedulersCount, difftest.OpExportMetrics:
		return r.read(ctx, s, node)
	case difftest.OpWaitFinished:
		return r.waitFinished(ctx, s, node, id)
	case difftest.OpOrphan:
		// The harness's, alike in both runs: the sets lose the id, the
		// job's keys stay.
		n := r.rdb.ZRem(ctx, r.k.Completed(), id).Val() + r.rdb.ZRem(ctx, r.k.Failed(), id).Val()
		return fmt.Sprintf("ok %d", n)
	case difftest.OpAgeFinished:
		// The harness's, alike in both runs: finished jobs age.
		n := 0
		for _, k := range []keys.Queue{r.k, keys.New(p, difftest.OtherQueueName)} {
			for _, set := range []string{k.Completed(), k.Failed()} {
				zs, err := r.rdb.ZRangeWithScores(ctx, set, 0, -1).Result()
				require.NoError(r.t, err)
				for _, z := range zs {
					id := z.Member.(string)
					require.NoError(r.t, r.rdb.ZAdd(ctx, set, redis.Z{Score: z.Score - float64(difftest.AgeShift), Member: id}).Err())
					for _, f := range []string{"timestamp", "processedOn", "finishedOn"} {
						v, err := r.rdb.HGet(ctx, k.Job(id), f).Int64()
						if errors.Is(err, redis.Nil) {
							continue
						}
						require.NoError(r.t, err)
						require.NoError(r.t, r.rdb.HSet(ctx, k.Job(id), f, v-difftest.AgeShift).Err())
					}
					n++
				}
			}
		}
		return fmt.Sprintf("ok %d", n)
	case difftest.OpRemoveOrphanedJobs:
		var n int
		var err error
		if node {
			err = o.QueueCall(ctx, p, q, "removeOrphanedJobs", &n, s.Priority, s.Limit)
		} else {
			n, err = dq.RemoveOrphanedJobs(ctx, s.Priority, s.Limit)
		}
		return r.result(strconv.Itoa(n), err)
	case difftest.OpUpdateJobProgress:
		if node {
			return r.result("", o.QueueCall(ctx, p, q, "updateJobProgress", nil, id, s.Value))
		}
		return r.result("", dq.Job(id).UpdateProgress(ctx, s.Value))
	case difftest.OpTrimEvents:
		// Node answers how many entries it trimmed, drover nothing: the
		// stream itself is compared.
		var err error
		if node {
			err = o.QueueCall(ctx, p, q, "trimEvents", nil, s.Limit)
		} else {
			err = dq.TrimEvents(ctx, int64(s.Limit))
		}
		return r.result("", err)
	case difftest.OpSetGlobalConcurrency:
		if node {
			return r.result("", o.QueueCall(ctx, p, q, "setGlobalConcurrency", nil, s.Limit))
		}
		return r.result("", dq.SetGlobalConcurrency(ctx, s.Limit))
	case difftest.OpRemoveGlobalConcurrency:
		if node {
			return r.result("", o.QueueCall(ctx, p, q, "removeGlobalConcurrency", nil))
		}
		return r.result("", dq.RemoveGlobalConcurrency(ctx))
	case difftest.OpClearLogs:
		if node {
			return r.result("", o.JobCall(ctx, p, q, id, "clearLogs", nil, s.Limit))
		}
		j, err := dq.GetJob(ctx, id)
		if err != nil {
			return r.result("", err)
		}
		return r.result("", j.ClearLogs(ctx, s.Limit))
	case difftest.OpRemoveChildDependency:
		var ok bool
		if node {
			err := o.JobCall(ctx, p, q, id, "removeChildDependency", &ok)
			return r.result(strconv.FormatBool(ok), err)
		}
		j, err := dq.GetJob(ctx, id)
		if err != nil {
			return r.result("", err)
		}
		ok, err = j.RemoveChildDependency(ctx)
		return r.result(strconv.FormatBool(ok), err)
	case difftest.OpRemoveUnprocessedChildren:
		defer r.noteCascade()()
		if node {
			return r.result("", o.JobCall(ctx, p, q, id, "removeUnprocessedChildren", nil))
		}
		j, err := dq.GetJob(ctx, id)
		if err != nil {
			return r.result("", err)
		}
		_, err = j.RemoveUnprocessedChildren(ctx)
		return r.result("", err)
	case difftest.OpRemoveDedupKey:
		var n int
		var err error
		if node {
			err = o.QueueCall(ctx, p, q, "removeDeduplicationKey", &n, s.DedupID)
		} else {
			n, err = dq.RemoveDeduplicationKey(ctx, s.DedupID)
		}
		return r.result(strconv.Itoa(n), err)
	case difftest.OpJobRemoveDedupKey:
		var ok bool
		if node {
			err := o.JobCall(ctx, p, q, id, "removeDeduplicationKey", &ok)
			return r.result(strconv.FormatBool(ok), err)
		}
		j, err := dq.GetJob(ctx, id)
		if err != nil {
			return r.result("", err)
		}
		ok, err = j.RemoveDeduplicationKey(ctx)
		return r.result(strconv.FormatBool(ok), err)
	}
	r.t.Fatalf("unknown op %q", s.Op)
	return ""
}

// crossRead compares what Node's and drover's readers say about the run's
// queue: getJobCounts() vs GetJobCounts, and getState vs GetJobState of
// every job the program added (and of one that never existed).
func (r *programRun) crossRead() []string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	ids := []string{"nosuch"}
	for _, id := range r.ids {
		ids = append(ids, id)
	}
	out := r.crossReadQueue(ctx, r.prefix, queueName, r.dq, ids)
	if len(r.otherIDs) > 0 {
		// The flow children in OtherQueueName, read in their queue.
		other := []string{"nosuch"}
		for id := range r.otherIDs {
			other = append(other, id)
		}
		out = append(out, r.crossReadQueue(ctx, r.prefix, difftest.OtherQueueName, r.dqOther, other)...)
	}
	if len(r.altQueues) > 0 {
		// The flow children under the other prefix, once a step
		// reached them there (its Node Queues are open).
		byQueue := map[string][]string{}
		for name, id := range r.altIDs {
			byQueue[r.altQueueOf[name]] = append(byQueue[r.altQueueOf[name]], id)
		}
		for q, ids := range byQueue {
			out = append(out, r.crossReadQueue(ctx, difftest.AltPrefixOf(r.prefix), q, r.altQueue(q), append(ids, "nosuch"))...)
		}
	}
	slices.Sort(out)
	return out
}

// crossReadQueue is crossRead of one queue: its counts and the states of
// the jobs ids.
func (r *programRun) crossReadQueue(ctx context.Context, prefix, queue string, dq *drover.Queue, ids []string) []string {
	r.t.Helper()
	var out []string
	nc, err := r.o.GetJobCounts(ctx, prefix, queue)
	require.NoError(r.t, err)
	dc, err := dq.GetJobCounts(ctx)
	require.NoError(r.t, err)
	for st, n := range nc {
		if dc[drover.JobState(st)] != n {
			out = append(out, fmt.Sprintf("%s: count of %s: Node getJobCounts %d, drover GetJobCounts %d", queue, st, n, dc[drover.JobState(st)]))
		}
	}
	if len(dc) != len(nc) {
		out = append(out, fmt.Sprintf("%s: count states: Node %v, drover %v", queue, nc, dc))
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		ns, err := r.o.GetState(ctx, prefix, queue, id)
		require.NoError(r.t, err)
		ds, err := dq.GetJobState(ctx, id)
		require.NoError(r.t, err)
		if ns != string(ds) {
			out = append(out, fmt.Sprintf("%s: state of job %s: Node getState %q, drover GetJobState %q", queue, id, ns, ds))
		}
	}
	return out
}

// droverWork runs one job on a drover Worker, as Node's step does with
// getNextJob + processJob (no next fetch): the worker writes results without
// fetching a next job (seam.NoFetchOnFinish), and the processor holds the
// job until the worker is closing, so the worker takes no second job once
// the first one's slot is free; then it does what bh says. The worker's
// metrics and retention options are the step's.
func (r *programRun) droverWork(ctx context.Context, queue string, bh bullmqoracle.Behavior, s *difftest.Step) string {
	r.t.Helper()
	got := make(chan string, 1)
	release := make(chan struct{})
	var once sync.Once
	var calls atomic.Int32
	proc := droverBehavior(bh, r.rdb)
	opts := r.stepWorkerOptions(s)
	stepCtx := ctx
	w, err := drover.NewWorker(r.rdb, queue, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		calls.Add(1)
		once.Do(func() { got <- job.ID })
		select {
		case <-release:
		case <-ctx.Done():
			// Close gave up on a second job (generated ids that repeat
			// let the worker take one: "ran 2 jobs").
		}
		return proc(ctx, job)
	}), withHooks(opts, &drover.WorkerHooks{JobFinished: func(job *drover.Job, _ drover.Outcome, _ time.Duration, _ error) {
		// A job with a deferred failure (a failed child's
		// failParentOnFailure) fails without running the processor,
		// as in BullMQ, and its result is written (fetching nothing)
		// before the worker closes: hold its slot until the worker is
		// closing, as the processor does, so no next job is taken.
		once.Do(func() { got <- job.ID })
		select {
		case <-release:
		case <-stepCtx.Done(): // the step gave up (see above)
		}
	}}))
	require.NoError(r.t, err)
	seam.NoFetchOnFinish(w)
	require.NoError(r.t, w.Start(ctx))
	var id string
	select {
	case id = <-got:
	case <-time.After(droverTakeTimeout):
		// A job was ready (Node's worker would take it) and drover's took
		// none: a divergence, compared and shrunk like any other.
		close(release)
		require.NoError(r.t, w.Close(ctx))
		return "took none"
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close(ctx) }()
	// Start refuses once Close has begun: from then on the worker fetches
	// nothing more.
	for w.Start(ctx) == nil {
		time.Sleep(time.Millisecond)
	}
	close(release)
	require.NoError(r.t, <-closed)
	if n := calls.Load(); n > 1 {
		return fmt.Sprintf("ran %d jobs", n)
	}
	return id
}

// droverWorkNext is droverWork for a step whose finish fetches the next
// job, as Node's step does with processJob(job, token, fetchNext): the
// worker writes its first result fetching the next job in the same call,
// as a running drover Worker does, and when that write is done (its
// JobFinished hook) the worker begins to close, so the job it fetched, if
// any, runs and is written fetching none. It returns the ids it ran,
// space-separated.
func (r *programRun) droverWorkNext(ctx context.Context, queue string, bh bullmqoracle.Behavior, s *difftest.Step) string {
	r.t.Helper()
	proc := droverBehavior(bh, r.rdb)
	opts := r.stepWorkerOptions(s)
	var (
		mu       sync.Mutex
		finished []string
		w        *drover.Worker
	)
	first := make(chan struct{})
	closed := make(chan error, 1)
	var once sync.Once
	opts.Hooks = &drover.WorkerHooks{JobFinished: func(job *drover.Job, _ drover.Outcome, _ time.Duration, _ error) {
		mu.Lock()
		finished = append(finished, job.ID)
		mu.Unlock()
		once.Do(func() {
			// The first result is written, with the next job's fetch:
			// close now, before that job runs, so that its write fetches
			// none. Start refuses once Close has begun.
			go func() { closed <- w.Close(ctx) }()
			for w.Start(ctx) == nil {
				time.Sleep(time.Millisecond)
			}
			// The fetched job starts once this hook returns: its finish
			// in another millisecond.
			finishGap()
			close(first)
		})
	}}
	var err error
	w, err = drover.NewWorker(r.rdb, queue, proc, opts)
	require.NoError(r.t, err)
	require.NoError(r.t, w.Start(ctx))
	select {
	case <-first:
	case <-time.After(droverTakeTimeout):
		require.NoError(r.t, w.Close(ctx))
		return "took none"
	}
	require.NoError(r.t, <-closed)
	mu.Lock()
	defer mu.Unlock()
	return strings.Join(finished, " ")
}

// droverWorkPair runs a work step at concurrency 2, as Node's step does
// with two getNextJob calls before it runs either job: a drover Worker at
// Concurrency 2 writing results without fetching, whose processors hold
// their jobs until the worker is closing; a job that must not run (a
// deferred failure) is failed as soon as it is taken, and its slot takes
// another. Once two jobs are held, or fewer and no other is ready, the
// worker begins to close and the held jobs are released one at a time in
// the order taken (the later
// take is nearer the head of active), each written before the next is
// released. It returns the ids it ran, sorted and space-separated.
func (r *programRun) droverWorkPair(ctx context.Context, wk keys.Queue, queue string, bh bullmqoracle.Behavior, s *difftest.Step) string {
	r.t.Helper()
	proc := droverBehavior(bh, r.rdb)
	opts := r.stepWorkerOptions(s)
	opts.Concurrency = 2
	var (
		mu      sync.Mutex
		seen    = map[string]bool{}
		held    = map[string]chan struct{}{}
		written = map[string]chan struct{}{}
		// frozen: the release order is read; a processor called later
		// (a divergence: the take was not seen in time) does not wait.
		frozen bool
	)
	arrived := make(chan struct{}, 8)
	note := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[id] {
			seen[id] = true
			select {
			case arrived <- struct{}{}:
			default: // the waiter polls the held jobs too
			}
		}
		if written[id] == nil {
			written[id] = make(chan struct{})
		}
	}
	opts.Hooks = &drover.WorkerHooks{JobFinished: func(job *drover.Job, _ drover.Outcome, _ time.Duration, _ error) {
		note(job.ID)
		mu.Lock()
		close(written[job.ID])
		mu.Unlock()
	}}
	w, err := drover.NewWorker(r.rdb, queue, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		release := make(chan struct{})
		mu.Lock()
		if !frozen {
			held[job.ID] = release
		} else {
			close(release) // after the release order was read: run now
		}
		mu.Unlock()
		note(job.ID)
		select {
		case <-release:
		case <-ctx.Done():
			// Close gave up on a job the step holds twice under one id
			// (generated ids that repeat): a divergence, not a hang.
		}
		return proc(ctx, job)
	}), opts)
	require.NoError(r.t, err)
	seam.NoFetchOnFinish(w)
	require.NoError(r.t, w.Start(ctx))
	select {
	case <-arrived:
	case <-time.After(droverTakeTimeout):
		require.NoError(r.t, w.Close(ctx))
		return "took none"
	}
	// Two jobs held by processors (a job that must not run fails at once
	// and its slot takes another), or fewer once nothing is ready for a
	// while.
	r.awaitTakes(ctx, wk, s.LimiterMax, arrived, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(held) >= 2
	})
	// A job the last fetch took reaches its processor within moments.
	select {
	case <-arrived:
	case <-time.After(50 * time.Millisecond):
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close(ctx) }()
	for w.Start(ctx) == nil {
		time.Sleep(time.Millisecond)
	}
	// Held jobs in the order taken: active has the later take first.
	active, err := r.rdb.LRange(ctx, wk.Active(), 0, -1).Result()
	require.NoError(r.t, err)
	mu.Lock()
	frozen = true
	var order []string
	for i := len(active) - 1; i >= 0; i-- {
		// (An id taken twice, by generated ids that repeat, is
		// held and released once.)
		if held[active[i]] != nil && !slices.Contains(order, active[i]) {
			order = append(order, active[i])
		}
	}
	mu.Unlock()
	for k, id := range order {
		mu.Lock()
		release, done, refused := held[id], written[id], len(seen) > len(order)
		mu.Unlock()
		if k > 0 || refused {
			finishGap() // each finish in a millisecond of its own
		}
		close(release)
		select {
		case <-done:
		case <-time.After(droverTakeTimeout):
			r.t.Fatalf("drover pair step: job %s not written", id)
		}
	}
	require.NoError(r.t, <-closed)
	mu.Lock()
	defer mu.Unlock()
	ids := slices.Sorted(maps.Keys(seen))
	return strings.Join(ids, " ")
}

// droverWorkBatch runs a batch finish step, as Node's step does with up
// to Step.Concurrency getNextJob calls, the finishes one call each (the
// last fetching) and more takes for the freed slots: a drover Worker at
// that concurrency takes up to that many jobs in one fetch, its
// processors hold them until every one is taken (or nothing more is
// ready), and then all return at once; seam.FinishBatch makes the worker
// write their results in one finishJobs call, which fetches the next
// jobs for every slot (an RPOP count above 1 when that many wait). When
// that call is written (its JobFinished hooks) the worker begins to
// close, so the jobs it fetched run, held and released one at a time in
// the order taken, each written fetching none. It returns "<taken> /
// <fetched>", each list sorted.
func (r *programRun) droverWorkBatch(ctx context.Context, wk keys.Queue, queue string, bh bullmqoracle.Behavior, s *difftest.Step) string {
	r.t.Helper()
	proc := droverBehavior(bh, r.rdb)
	opts := r.stepWorkerOptions(s)
	opts.Concurrency = s.Concurrency
	before, err := r.rdb.LRange(ctx, wk.Active(), 0, -1).Result()
	require.NoError(r.t, err)
	var (
		mu sync.Mutex
		// phase 0: the first takes; 1: their finishes written, the
		// fetched jobs arrive.
		phase   int
		held    = [2]map[string]chan struct{}{{}, {}}
		written = map[string]chan struct{}{}
		first   []string // the jobs of the batch, as the hooks saw them
		w       *drover.Worker
	)
	arrived := make(chan struct{}, 16)
	batchDone := make(chan struct{})
	closed := make(chan error, 1)
	var n int // the batch's size, set before its release
	opts.Hooks = &drover.WorkerHooks{JobFinished: func(job *drover.Job, _ drover.Outcome, _ time.Duration, _ error) {
		mu.Lock()
		if written[job.ID] != nil {
			close(written[job.ID])
		}
		ph := phase
		if ph == 0 {
			first = append(first, job.ID)
		}
		last := ph == 0 && len(first) == n
		if last {
			phase = 1
		}
		mu.Unlock()
		if last {
			// The batch's call is written, with its fetch: close now,
			// before the fetched jobs' finishes, so that they fetch none.
			go func() { closed <- w.Close(ctx) }()
			for w.Start(ctx) == nil {
				time.Sleep(time.Millisecond)
			}
			close(batchDone)
		}
	}}
	w, err = drover.NewWorker(r.rdb, queue, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		release := make(chan struct{})
		mu.Lock()
		ph := phase
		if n > 0 {
			// Taken after the batch was set: fetched by its calls (a
			// batch the worker split writes in more than one).
			ph = 1
		}
		held[ph][job.ID] = release
		written[job.ID] = make(chan struct{})
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			// Close gave up on a job the step never released (a
			// divergence: it took a job it did not see).
		}
		return proc(ctx, job)
	}), opts)
	require.NoError(r.t, err)
	require.NoError(r.t, w.Start(ctx))
	select {
	case <-arrived:
	case <-time.After(droverTakeTimeout):
		require.NoError(r.t, w.Close(ctx))
		return "took none"
	}
	// Every slot's job held, or fewer once nothing is ready for a while.
	r.awaitTakes(ctx, wk, s.LimiterMax, arrived, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(held[0]) >= s.Concurrency
	})
	// The batch in the order taken: active has the later take first.
	active, err := r.rdb.LRange(ctx, wk.Active(), 0, -1).Result()
	require.NoError(r.t, err)
	mu.Lock()
	var inOrder []string
	for i := len(active) - 1; i >= 0; i-- {
		if held[0][active[i]] != nil && !slices.Contains(inOrder, active[i]) {
			inOrder = append(inOrder, active[i])
		}
	}
	n = len(held[0]) // the hooks read it under mu
	taken := slices.Sorted(maps.Keys(held[0]))
	var releases []chan struct{}
	for _, id := range inOrder {
		releases = append(releases, held[0][id])
	}
	for id, release := range held[0] {
		if !slices.Contains(inOrder, id) {
			releases = append(releases, release) // (not seen in active: a divergence)
		}
	}
	mu.Unlock()
	seam.FinishBatch(w, inOrder)
	// The processors return in the order taken, each in a millisecond
	// of its own, as Node's finishes one after another: a move to
	// delayed is due from its attempt's end, and the delayed set orders
	// same-minute due times by it (campaign seed 1421).
	for k, release := range releases {
		if k > 0 {
			finishGap()
		}
		close(release)
	}
	select {
	case <-batchDone:
	case <-time.After(droverTakeTimeout):
		r.t.Fatalf("drover batch step: the batch of %v was not written (finished: %v)", taken, first)
	}
	// The fetched jobs: those in active now that were not there before
	// the step, each reaching its processor within moments.
	var order []string
	stuck := false
	for deadline := time.Now().Add(droverTakeTimeout); ; {
		active, err := r.rdb.LRange(ctx, wk.Active(), 0, -1).Result()
		require.NoError(r.t, err)
		order = order[:0]
		missing := false
		mu.Lock()
		// Later takes are nearer the head of active.
		for i := len(active) - 1; i >= 0; i-- {
			id := active[i]
			if slices.Contains(before, id) || slices.Contains(order, id) {
				continue
			}
			order = append(order, id)
			if held[1][id] == nil {
				missing = true
			}
		}
		mu.Unlock()
		if !missing {
			break
		}
		if time.Now().After(deadline) {
			// A job in active that no processor of the step holds: a
			// divergence (the result says so), compared and shrunk.
			mu.Lock()
			for id, release := range held[1] {
				if !slices.Contains(order, id) {
					close(release)
				}
			}
			order = slices.DeleteFunc(order, func(id string) bool { return held[1][id] == nil })
			mu.Unlock()
			stuck = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, id := range order {
		mu.Lock()
		release, done := held[1][id], written[id]
		mu.Unlock()
		finishGap() // each finish in a millisecond of its own
		close(release)
		select {
		case <-done:
		case <-time.After(droverTakeTimeout):
			r.t.Fatalf("drover batch step: fetched job %s not written", id)
		}
	}
	require.NoError(r.t, <-closed)
	mu.Lock()
	defer mu.Unlock()
	if stuck || len(held[1]) != len(order) {
		// A job reached a processor that the active list did not show.
		return fmt.Sprintf("%s / %s (ran %d)", strings.Join(taken, " "), strings.Join(slices.Sorted(slices.Values(order)), " "), len(held[1]))
	}
	return strings.Join(taken, " ") + " / " + strings.Join(slices.Sorted(slices.Values(order)), " ")
}

// finishGap waits 2 ms, so that a work step's second finish never shares
// the first one's finishedOn: the completed and failed sets order ties by
// member and count retention trims by that order, so a shared millisecond
// made a program's state depend on speed (all-Node campaign seeds
// 693515568, 693515608 diverged from themselves). Node's step waits alike.
func finishGap() { time.Sleep(2 * time.Millisecond) }

// withHooks is o with hooks h.
func withHooks(o *drover.WorkerOptions, h *drover.WorkerHooks) *drover.WorkerOptions {
	o.Hooks = h
	return o
}

// stepWorkerOptions are a work step's drover worker options: its metrics,
// retention, limiter and maxStartedAttempts.
func (r *programRun) stepWorkerOptions(s *difftest.Step) *drover.WorkerOptions {
	o := &drover.WorkerOptions{
		Prefix: r.prefixOf(s), Name: workerName, SkipStalledCheck: true, BackoffStrategies: droverStrategies, MaxStartedAttempts: s.MaxStarted,
	}
	if s.Metrics > 0 {
		o.Metrics = &drover.MetricsOptions{MaxDataPoints: s.Metrics}
	}
	if k := s.WorkerRemoveOnComplete; k != nil {
		o.RemoveOnComplete = k.Drover()
	}
	if k := s.WorkerRemoveOnFail; k != nil {
		o.RemoveOnFail = k.Drover()
	}
	if s.LimiterMax > 0 {
		o.Limiter = difftest.DroverLimiter(s.LimiterMax)
	}
	return o
}

// TestDifferentialRegressionRetryResetsAttempts is the tester's own proof:
// with Job.Retry's ResetAttemptsMade broken on purpose it found this
// program (seed 8), shrunk from 24 steps, and printed this test.
func TestDifferentialRegressionRetryResetsAttempts(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	requireNoDivergence(t, b, &difftest.Program{Seed: 8, Steps: []difftest.Step{
		{Op: difftest.OpAdd, By: difftest.Node, Add: &difftest.Add{Name: "j6", Data: map[string]any{"n": 6}}},
		{Op: difftest.OpWork, By: difftest.Node, Outcome: &difftest.Outcome{Kind: "complete"}},
		{Op: difftest.OpRetry, By: difftest.Drover, Job: "j6", State: "completed", ResetMade: true},
	}})
}

// droverStates are BullMQ's state names as drover's JobStates ("wait" is
// StateWaiting).
func droverStates(names []string) []drover.JobState {
	out := make([]drover.JobState, len(names))
	for i, n := range names {
		out[i] = drover.JobState(n)
		if n == "wait" {
			out[i] = drover.StateWaiting
		}
	}
	return out
}

// nodeStateName is BullMQ's name of a drover state ("wait" for waiting).
func nodeStateName(st drover.JobState) string {
	if st == drover.StateWaiting {
		return "wait"
	}
	return string(st)
}

// addFlows adds the trees under roots: one with FlowProducer.add /
// FlowProducer.Add, or, with bulk, all in one call with addBulk / AddBulk.
// Its result is the ids in the order of the trees, depth first.
func (r *programRun) addFlows(ctx context.Context, roots []*difftest.Add, node, bulk bool) string {
	r.t.Helper()
	q := queueName
	// A FlowProducer gives a job without a custom id a random UUID,
	// which would make the two runs differ: each gets "f<name>" instead.
	flowOpts := func(a *difftest.Add) map[string]any {
		m := r.nodeOpts(a)
		if a.JobID == "" {
			m["jobId"] = "f" + a.Name
		}
		return m
	}
	queueOf := func(a *difftest.Add) string {
		if a.OtherQueue {
			return difftest.OtherQueueName
		}
		return q
	}
	// The parents of a call with more than one get timestamps a ms
	// apart, in the order of the trees, each root first: Node's
	// FlowProducer stamps each job as it builds it and drover's stamps a
	// call at once, and the timestamp orders a queue's waiting-children
	// set.
	var stamps map[*difftest.Add]int64
	var parents []*difftest.Add
	for _, root := range roots {
		if len(root.Children) > 0 {
			parents = append(parents, root)
		}
		for _, c := range root.Children {
			if len(c.Children) > 0 {
				parents = append(parents, c)
			}
		}
	}
	if len(parents) > 1 {
		base := time.Now().UnixMilli()
		stamps = map[*difftest.Add]int64{}
		for i, a := range parents {
			stamps[a] = base + int64(i)
		}
	}
	var nodeFlow func(a *difftest.Add, queue string) bullmqoracle.FlowJob
	nodeFlow = func(a *difftest.Add, queue string) bullmqoracle.FlowJob {
		f := bullmqoracle.FlowJob{Name: a.JobNameOf(), QueueName: queue, Data: a.Payload(), Opts: flowOpts(a)}
		if a.AltPrefix {
			f.Prefix = difftest.AltPrefixOf(r.prefix)
		}
		if ts, ok := stamps[a]; ok {
			f.Opts["timestamp"] = ts
		}
		for _, c := range a.Children {
			f.Children = append(f.Children, nodeFlow(c, queueOf(c)))
		}
		return f
	}
	var droverFlow func(a *difftest.Add, queue string) drover.FlowJob
	droverFlow = func(a *difftest.Add, queue string) drover.FlowJob {
		o := r.droverOpts(a)
		if o.JobID == "" {
			o.JobID = "f" + a.Name
		}
		if ts, ok := stamps[a]; ok {
			o.Timestamp = time.UnixMilli(ts)
		}
		f := drover.FlowJob{Name: a.JobNameOf(), QueueName: queue, Data: a.Payload(), Opts: o}
		if a.AltPrefix {
			f.Prefix = difftest.AltPrefixOf(r.prefix)
		}
		if a.Parent != "" {
			// A tree's root with a parent link (OpAddFlow).
			f.Parent = &drover.JobRef{Prefix: r.prefix, Queue: r.parentQueue(a), ID: r.id(a.Parent)}
		}
		for _, c := range a.Children {
			f.Children = append(f.Children, droverFlow(c, queueOf(c)))
		}
		return f
	}
	// got are the ids in the order of the trees, depth first, named by
	// the adds in the same order (names).
	var got, names []string
	var inOther, alt []bool
	var walk func(a *difftest.Add)
	walk = func(a *difftest.Add) {
		r.noteJitter(a) // both runs: the comparison reads it
		names = append(names, a.Name)
		inOther = append(inOther, a.OtherQueue)
		alt = append(alt, a.AltPrefix)
		for _, c := range a.Children {
			walk(c)
		}
	}
	for _, root := range roots {
		walk(root)
	}
	if node {
		var trees []bullmqoracle.FlowIDs
		var err error
		if bulk {
			flows := make([]bullmqoracle.FlowJob, len(roots))
			for i, root := range roots {
				flows[i] = nodeFlow(root, queueOf(root))
			}
			trees, err = r.o.AddFlows(ctx, r.prefix, flows)
		} else {
			var ids *bullmqoracle.FlowIDs
			var fo map[string]any
			qo := map[string]any{}
			if r.defaults != nil {
				qo[q] = map[string]any{"defaultJobOptions": r.defaults.NodeOpts()}
			}
			if r.otherDefaults != nil {
				qo[difftest.OtherQueueName] = map[string]any{"defaultJobOptions": r.otherDefaults.NodeOpts()}
			}
			if len(qo) > 0 {
				fo = map[string]any{"queuesOptions": qo}
			}
			ids, err = r.o.AddFlowOpts(ctx, r.prefix, nodeFlow(roots[0], queueOf(roots[0])), fo)
			if ids != nil {
				trees = []bullmqoracle.FlowIDs{*ids}
			}
		}
		if err != nil {
			return r.result("", err)
		}
		var collect func(n *bullmqoracle.FlowIDs)
		collect = func(n *bullmqoracle.FlowIDs) {
			got = append(got, n.ID)
			for i := range n.Children {
				collect(&n.Children[i])
			}
		}
		for i := range trees {
			collect(&trees[i])
		}
	} else {
		var trees []*drover.JobNode
		var err error
		if bulk {
			flows := make([]drover.FlowJob, len(roots))
			for i, root := range roots {
				flows[i] = droverFlow(root, queueOf(root))
			}
			trees, err = r.fp.AddBulk(ctx, flows)
		} else {
			var n *drover.JobNode
			n, err = r.fpDefaults.Add(ctx, droverFlow(roots[0], queueOf(roots[0])))
			trees = []*drover.JobNode{n}
		}
		if err != nil {
			return r.result("", err)
		}
		var collect func(n *drover.JobNode)
		collect = func(n *drover.JobNode) {
			got = append(got, n.Job.ID)
			for _, c := range n.Children {
				collect(c)
			}
		}
		for _, n := range trees {
			collect(n)
		}
	}
	if len(got) != len(names) {
		return fmt.Sprintf("ok %v (%d ids for %d jobs)", got, len(got), len(names))
	}
	for i, name := range names {
		if alt[i] {
			// Under another prefix: the steps with Step.AltPrefix
			// name it.
			r.altIDs[name] = got[i]
			r.altQueueOf[name] = queueName
			if inOther[i] {
				r.altQueueOf[name] = difftest.OtherQueueName
			}
			continue
		}
		r.ids[name] = got[i]
		if inOther[i] {
			r.otherIDs[got[i]] = true
		}
	}
	return r.result(fmt.Sprint(got), nil)
}

// waitFinishedFor is how long OpWaitFinished waits for a job that has not
// finished: both sides answer a finished job at once, from its hash.
const waitFinishedFor = 150 * time.Millisecond

// waitFinished performs OpWaitFinished on the job with id: "ok completed
// <value>" (the value as canonical JSON), "ok failed <reason>", "ok
// pending" when it did not finish within waitFinishedFor, "missing" without a job
// hash (asked of neither side: BullMQ's waitUntilFinished rejects such a
// job, drover's reads a removed job's finish event from the stream).
func (r *programRun) waitFinished(ctx context.Context, s *difftest.Step, node bool, id string) string {
	r.t.Helper()
	q, dq := r.on(s)
	n, err := r.rdb.Exists(ctx, keys.New(r.prefix, q).Job(id)).Result()
	require.NoError(r.t, err)
	if n == 0 {
		return "missing"
	}
	canon := func(raw []byte) string {
		if len(raw) == 0 {
			return "null"
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		require.NoError(r.t, d.Decode(&v), "return value %s", raw)
		out, err := json.Marshal(v)
		require.NoError(r.t, err)
		return string(out)
	}
	if node {
		res, err := r.o.WaitUntilFinished(ctx, r.prefix, q, id, waitFinishedFor)
		switch {
		case err != nil && strings.Contains(err.Error(), "timed out before finishing"):
			return "ok pending"
		case err != nil:
			return r.result("", err)
		case res.State == "failed":
			return "ok failed " + res.FailedReason
		}
		return "ok completed " + canon(res.ReturnValue)
	}
	wctx, cancel := context.WithTimeout(ctx, waitFinishedFor)
	defer cancel()
	v, err := dq.WaitUntilFinished(wctx, id)
	var fe *drover.JobFailedError
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return "ok pending"
	case errors.As(err, &fe):
		return "ok failed " + fe.Reason
	case err != nil:
		return r.result("", err)
	}
	return "ok completed " + canon(v)
}

// addMixedBurst performs OpAddMixedBurst: Node adds s.Children one after
// another, in r.burstOrder when set (drover's commit order in the other
// run), else in their order; drover adds them from as many goroutines
// released together and sets r.burstOrder to the order its group commit
// wrote them, read from the events stream (each add's "added" or, for a
// taken custom id, "duplicated" event). Its result is the ids in the
// order of s.Children.
func (r *programRun) addMixedBurst(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	q, dq := r.on(s)
	n := len(s.Children)
	ids := make([]string, n)
	errs := make([]error, n)
	if node {
		order := r.burstOrder
		if order == nil {
			for i := range n {
				order = append(order, i)
			}
		}
		require.Len(r.t, order, n, "harness: the commit order names every job of the burst")
		for _, i := range order {
			a := s.Children[i]
			ids[i], errs[i] = r.o.Add(ctx, r.prefix, q, a.JobNameOf(), a.Payload(), r.nodeOpts(a))
		}
	} else {
		events := keys.New(r.prefix, q).Events()
		last := "0-0"
		xs, err := r.rdb.XRevRangeN(ctx, events, "+", "-", 1).Result()
		require.NoError(r.t, err)
		if len(xs) > 0 {
			last = xs[0].ID
		}
		r.addAtOnce(ctx, dq, s.Children, ids, errs)
		item := make(map[string]int, n)
		for i, id := range ids {
			if errs[i] == nil {
				if j, dup := item[id]; dup {
					r.t.Fatalf("harness: jobs %d and %d of a mixed burst have the same id %q (generated ids repeat: the generator gives such bursts to Node)", j, i, id)
				}
				item[id] = i
			}
		}
		xs, err = r.rdb.XRange(ctx, events, "("+last, "+").Result()
		require.NoError(r.t, err)
		r.burstOrder = nil
		for _, x := range xs {
			if ev := x.Values["event"]; ev != "added" && ev != "duplicated" {
				continue
			}
			id, _ := x.Values["jobId"].(string)
			if i, ok := item[id]; ok {
				r.burstOrder = append(r.burstOrder, i)
				delete(item, id)
			}
		}
		// Refused adds (none are generated) go last: they wrote nothing.
		for i := range n {
			if errs[i] != nil {
				r.burstOrder = append(r.burstOrder, i)
			}
		}
		require.Empty(r.t, item, "harness: every job of the burst has its event in the stream")
	}
	for i, a := range s.Children {
		if errs[i] == nil {
			r.ids[a.Name] = ids[i]
		}
	}
	if err := errors.Join(errs...); err != nil {
		return r.result("", err)
	}
	return r.result(fmt.Sprint(ids), nil)
}

// addAtOnce adds adds[i] with drover from one goroutine each, all released
// together (Queue.Add's group commit batches them), into ids[i] and errs[i].
func (r *programRun) addAtOnce(ctx context.Context, dq *drover.Queue, adds []*difftest.Add, ids []string, errs []error) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, a := range adds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := dq.Add(ctx, a.JobNameOf(), a.Payload(), r.droverOpts(a))
			if err == nil {
				ids[i] = res.Job.ID
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
}

// addBurst performs OpAddBurst: s.Limit copies of s.Add, Node's one after
// another, drover's from as many goroutines released together (Queue.Add's
// group commit batches them). Its result is the ids, sorted; the copies'
// label names the first of them.
func (r *programRun) addBurst(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	a := s.Add
	q, dq := r.on(s)
	ids := make([]string, s.Limit)
	errs := make([]error, s.Limit)
	if node {
		for i := range ids {
			ids[i], errs[i] = r.o.Add(ctx, r.prefix, q, a.JobNameOf(), a.Payload(), r.nodeOpts(a))
		}
	} else {
		r.addAtOnce(ctx, dq, slices.Repeat([]*difftest.Add{a}, len(ids)), ids, errs)
	}
	if err := errors.Join(errs...); err != nil {
		return r.result("", err)
	}
	slices.SortFunc(ids, func(x, y string) int {
		if len(x) != len(y) {
			return len(x) - len(y)
		}
		return strings.Compare(x, y)
	})
	if len(ids) > 0 {
		// (A shrunk step may add none.)
		r.ids[a.Name] = ids[0]
	}
	return r.result(fmt.Sprint(ids), nil)
}
