package interoptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropFlowStorm: three-level flows over two queues of one prefix and
// a queue of another prefix, half added by Node's FlowProducer and half by
// drover's while the trees run, are worked by Node and drover workers side
// by side (concurrency 4 each, on every queue) racing on siblings. Leaves
// complete, fail once then complete on their retry, or fail under
// ignoreDependencyOnFailure, removeDependencyOnFailure or (one tree in
// five) failParentOnFailure, which fails their middle job and, through
// the middle job's own failParentOnFailure, the root. Every job must end
// completed or failed as BullMQ's rules say, no parent left waiting, and
// each completed parent must hold exactly its children's values.
//
//	go test -count=1 -run 'TestInteropFlowStorm' ./internal/interoptest/
func TestInteropFlowStorm(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	b2 := b.sibling(t) // the other prefix
	ctx := context.Background()
	const trees, leaves = 24, 6

	by := bullmqoracle.FromData("behavior")
	values := bullmqoracle.Behavior{Kind: "childrenValues"}
	type spot struct {
		b     *bundle
		queue string
	}
	spots := []spot{{b, queueName}, {b, partsQueue}, {b2, partsQueue}}
	for _, s := range spots {
		for _, impl := range []impl{nodeImpl, droverImpl} {
			s.b.startWorkerOn(t, impl, s.queue, workerSpec{behavior: by, concurrency: 4})
		}
	}

	leafQueue := func(k int) (prefix, queue string) {
		if k%2 == 0 {
			return b.prefix, partsQueue
		}
		return b2.prefix, partsQueue
	}
	mk := func(id, prefix, queue string, bh bullmqoracle.Behavior, opts map[string]any, children ...bullmqoracle.FlowJob) bullmqoracle.FlowJob {
		f := node(id, queue, &bh, opts, children...)
		f.Prefix = prefix
		return f
	}
	type want struct {
		prefix, queue, id, state string
		processed, ignored       int
	}
	var wants []want
	var flows []bullmqoracle.FlowJob
	for i := range trees {
		fpofTree := i%5 == 0
		var mids []bullmqoracle.FlowJob
		for m, at := range []spot{{b, queueName}, {b, partsQueue}, {b2, partsQueue}} {
			var ls []bullmqoracle.FlowJob
			processed, ignored := 0, 0
			for k := range leaves {
				id := fmt.Sprintf("l%d-%d-%d", i, m, k)
				p, q := leafQueue(k + m)
				switch k {
				case 0, 4:
					ls = append(ls, mk(id, p, q, bullmqoracle.Sleep(time.Duration(k)*time.Millisecond, id), nil))
					wants = append(wants, want{p, q, id, "completed", 0, 0})
					processed++
				case 1:
					ls = append(ls, mk(id, p, q, bullmqoracle.FailTimes(1, "once", id), map[string]any{"attempts": 2}))
					wants = append(wants, want{p, q, id, "completed", 0, 0})
					processed++
				case 2:
					ls = append(ls, mk(id, p, q, bullmqoracle.Fail("ignored"), map[string]any{"ignoreDependencyOnFailure": true}))
					wants = append(wants, want{p, q, id, "failed", 0, 0})
					ignored++
				case 3:
					ls = append(ls, mk(id, p, q, bullmqoracle.Fail("removed"), map[string]any{"removeDependencyOnFailure": true}))
					wants = append(wants, want{p, q, id, "failed", 0, 0})
				case 5:
					if fpofTree && m == 0 {
						ls = append(ls, mk(id, p, q, bullmqoracle.Fail("fatal"), map[string]any{"failParentOnFailure": true}))
						wants = append(wants, want{p, q, id, "failed", 0, 0})
					} else {
						ls = append(ls, mk(id, p, q, bullmqoracle.Return(id), nil))
						wants = append(wants, want{p, q, id, "completed", 0, 0})
						processed++
					}
				}
			}
			id := fmt.Sprintf("m%d-%d", i, m)
			opts := map[string]any{}
			if fpofTree && m == 0 {
				opts["failParentOnFailure"] = true
				wants = append(wants, want{at.b.prefix, at.queue, id, "failed", -1, -1})
			} else {
				wants = append(wants, want{at.b.prefix, at.queue, id, "completed", processed, ignored})
			}
			mids = append(mids, mk(id, at.b.prefix, at.queue, values, opts, ls...))
		}
		id := fmt.Sprintf("r%d", i)
		if fpofTree {
			wants = append(wants, want{b.prefix, queueName, id, "failed", -1, -1})
		} else {
			wants = append(wants, want{b.prefix, queueName, id, "completed", 3, 0})
		}
		flows = append(flows, mk(id, b.prefix, queueName, values, nil, mids...))
	}

	// Add the trees while the workers run: odd ones from Go.
	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, trees)
	for i, f := range flows {
		wg.Add(1)
		go func() { // owned by wg
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = b.oracle.AddFlow(ctx, b.prefix, f)
			} else {
				_, err = fp.Add(ctx, droverFlow(t, f))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	stateOf := func(w want) string {
		for _, st := range []string{"completed", "failed", "delayed", "waiting-children", "prioritized"} {
			if _, err := b.rdb.ZScore(ctx, w.prefix+":"+w.queue+":"+st, w.id).Result(); err == nil {
				return st
			}
		}
		for _, st := range []string{"wait", "active", "paused"} {
			if _, err := b.rdb.LPos(ctx, w.prefix+":"+w.queue+":"+st, w.id, redis.LPosArgs{}).Result(); err == nil {
				return st
			}
		}
		return "missing"
	}
	settled := func() bool {
		for _, w := range wants {
			if st := stateOf(w); st != "completed" && st != "failed" {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !settled() {
		var stuck []string
		for _, w := range wants {
			if st := stateOf(w); st != "completed" && st != "failed" {
				deps, _ := b.rdb.SMembers(ctx, w.prefix+":"+w.queue+":"+w.id+":dependencies").Result()
				stuck = append(stuck, fmt.Sprintf("%s:%s:%s is %s (pending %v)", w.prefix, w.queue, w.id, st, deps))
			}
		}
		t.Fatalf("%d jobs not finished:\n%s", len(stuck), strings.Join(stuck, "\n"))
	}
	var bad []string
	for _, w := range wants {
		st := stateOf(w)
		if st != w.state {
			reason, _ := b.rdb.HGet(ctx, w.prefix+":"+w.queue+":"+w.id, "failedReason").Result()
			bad = append(bad, fmt.Sprintf("%s:%s is %s, want %s (%s)", w.queue, w.id, st, w.state, reason))
			continue
		}
		if w.processed < 0 {
			continue
		}
		key := w.prefix + ":" + w.queue + ":" + w.id
		processed, err := b.rdb.HLen(ctx, key+":processed").Result()
		require.NoError(t, err)
		ignored, err := b.rdb.HLen(ctx, key+":failed").Result()
		require.NoError(t, err)
		if int(processed) != w.processed || int(ignored) != w.ignored {
			bad = append(bad, fmt.Sprintf("%s:%s has %d processed and %d ignored children, want %d and %d", w.queue, w.id, processed, ignored, w.processed, w.ignored))
		}
		if w.processed > 0 {
			rv, err := b.rdb.HGet(ctx, key, "returnvalue").Result()
			require.NoError(t, err)
			var got []json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(rv), &got), "%s returnvalue", w.id)
			if len(got) != w.processed {
				bad = append(bad, fmt.Sprintf("%s:%s returned %d values, want %d: %s", w.queue, w.id, len(got), w.processed, rv))
			}
		}
	}
	sort.Strings(bad)
	require.Empty(t, bad)
}

// TestInteropFlowWaitChildrenRace: parents that add children while they run
// and then wait for them (moveToWaitingChildren), with the children worked
// at once by Node and drover workers (concurrency 4 each), so a child often
// finishes before, while or after its parent parks. Drover parents add
// their children with drover's FlowProducer from the processor; Node
// parents get theirs from the test while they sleep, then call
// job.moveToWaitingChildren. Every parent must complete, on its first run
// (every child already done) or its second, with all its children's values.
//
//	go test -count=1 -run 'TestInteropFlowWaitChildrenRace' ./internal/interoptest/
func TestInteropFlowWaitChildrenRace(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	const parents, children = 30, 3
	const droverParents, nodeParents = "pa", "pb"

	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	var kidsMade []string // parents given children, to vary the sleeps
	var kidsMu sync.Mutex
	kids := func(parent drover.JobRef) []drover.FlowJob {
		kidsMu.Lock()
		defer kidsMu.Unlock()
		kidsMade = append(kidsMade, parent.ID)
		var out []drover.FlowJob
		for c := range children {
			id := fmt.Sprintf("%s-c%d", parent.ID, c)
			bh := bullmqoracle.Return(id)
			if c == 0 {
				// 0 to 290 ms: before, while or after the parent parks.
				bh = bullmqoracle.Sleep(time.Duration(len(kidsMade)*37%300)*time.Millisecond, id)
			}
			out = append(out, drover.FlowJob{Name: "child", QueueName: partsQueue, Parent: &parent,
				Data: map[string]any{"behavior": bh}, Opts: &drover.JobOptions{JobID: id}})
		}
		return out
	}
	addKids := func(parent drover.JobRef) error {
		for _, k := range kids(parent) {
			if _, err := fp.Add(ctx, k); err != nil {
				return err
			}
		}
		return nil
	}
	childValues := func(ctx context.Context, job *drover.Job) (any, error) {
		vals, err := job.GetChildrenValues(ctx)
		if err != nil {
			return nil, err
		}
		out := []json.RawMessage{}
		for _, k := range sortedKeys(vals) {
			out = append(out, vals[k])
		}
		return out, nil
	}
	b.startWorkerOn(t, droverImpl, droverParents, workerSpec{concurrency: 4, drover: func(ctx context.Context, job *drover.Job) (any, error) {
		if job.AttemptsStarted == 1 {
			if err := addKids(job.Ref()); err != nil {
				return nil, err
			}
			moved, err := job.MoveToWaitingChildren(ctx, nil)
			if err != nil {
				return nil, err
			}
			if moved {
				return nil, drover.ErrWaitingChildren
			}
		}
		return childValues(ctx, job)
	}})
	values := bullmqoracle.Behavior{Kind: "childrenValues"}
	park := bullmqoracle.Behavior{Kind: "waitChildren", Then: &values}
	b.startWorkerOn(t, nodeImpl, nodeParents, workerSpec{concurrency: 4,
		behavior: bullmqoracle.Sequence(bullmqoracle.SleepThen(150*time.Millisecond, park), values)})
	for _, impl := range []impl{nodeImpl, droverImpl} {
		b.startWorkerOn(t, impl, partsQueue, workerSpec{concurrency: 4, behavior: bullmqoracle.FromData("behavior")})
	}

	pa, err := drover.NewQueue(b.rdb, droverParents, &drover.QueueOptions{Prefix: b.prefix})
	require.NoError(t, err)
	for i := range parents {
		_, err := pa.Add(ctx, "parent", nil, &drover.JobOptions{JobID: fmt.Sprintf("a%d", i)})
		require.NoError(t, err)
		id := fmt.Sprintf("b%d", i)
		b.nodeAddTo(t, nodeParents, id)
		require.NoError(t, addKids(drover.JobRef{Prefix: b.prefix, Queue: nodeParents, ID: id}))
	}

	check := func(queue, id string) string {
		key := b.prefix + ":" + queue + ":" + id
		if _, err := b.rdb.ZScore(ctx, b.prefix+":"+queue+":completed", id).Result(); err != nil {
			st := "not completed"
			if _, err := b.rdb.ZScore(ctx, b.prefix+":"+queue+":waiting-children", id).Result(); err == nil {
				deps, _ := b.rdb.SMembers(ctx, key+":dependencies").Result()
				st = fmt.Sprintf("in waiting-children, pending %v", deps)
			}
			reason, _ := b.rdb.HGet(ctx, key, "failedReason").Result()
			return fmt.Sprintf("%s:%s is %s (%s)", queue, id, st, reason)
		}
		rv, _ := b.rdb.HGet(ctx, key, "returnvalue").Result()
		var got []string
		if err := json.Unmarshal([]byte(rv), &got); err != nil || len(got) != children {
			return fmt.Sprintf("%s:%s returned %s", queue, id, rv)
		}
		return ""
	}
	deadline := time.Now().Add(time.Minute)
	var bad []string
	for {
		bad = bad[:0]
		for i := range parents {
			for _, x := range []struct{ q, id string }{{droverParents, fmt.Sprintf("a%d", i)}, {nodeParents, fmt.Sprintf("b%d", i)}} {
				if msg := check(x.q, x.id); msg != "" {
					bad = append(bad, msg)
				}
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Empty(t, bad)
	// How often each side parked its parent (else the race was not run).
	for _, q := range []string{droverParents, nodeParents} {
		parked := 0
		for _, e := range readQueueEvents(t, b.rdb, b.prefix, q, 0, nil, time.Second) {
			if e.Name == drover.EventWaitingChildren {
				parked++
			}
		}
		t.Logf("%s: %d of %d parents parked", q, parked, parents)
		require.Positive(t, parked, "%s: no parent parked", q)
	}
}

// nodeAddTo adds a job with id to queue with Node.
func (b *bundle) nodeAddTo(t *testing.T, queue, id string) {
	t.Helper()
	_, err := b.oracle.Add(context.Background(), b.prefix, queue, "parent", map[string]any{}, map[string]any{"jobId": id})
	require.NoError(t, err)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestInteropFlowOneQueueRetention: flows whose parents and children share
// one queue, the children removed or trimmed when they complete
// (removeOnComplete true, {count: 3}, {age: 1}), worked by a Node and a
// drover worker at concurrency 8 each: a child's completion, its removal,
// its siblings' in the same call and its parent's release and run
// interleave. Every parent must complete with all its children's values.
//
//	go test -count=1 -run 'TestInteropFlowOneQueueRetention' ./internal/interoptest/
func TestInteropFlowOneQueueRetention(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	const flows, children = 20, 10
	values := bullmqoracle.Behavior{Kind: "childrenValues"}
	by := bullmqoracle.FromData("behavior")
	for _, impl := range []impl{nodeImpl, droverImpl} {
		b.startWorkerOn(t, impl, queueName, workerSpec{behavior: by, concurrency: 8})
	}
	fp, err := drover.NewFlowProducer(b.rdb, &drover.FlowProducerOptions{Prefix: b.prefix})
	require.NoError(t, err)
	retention := []any{true, map[string]any{"count": 3}, map[string]any{"age": 1}}
	for i := range flows {
		var kids []bullmqoracle.FlowJob
		for c := range children {
			id := fmt.Sprintf("c%d-%d", i, c)
			kids = append(kids, node(id, queueName, &[]bullmqoracle.Behavior{bullmqoracle.Return(id)}[0],
				map[string]any{"removeOnComplete": retention[(i+c)%len(retention)]}))
		}
		f := node(fmt.Sprintf("p%d", i), queueName, &values, nil, kids...)
		if i%2 == 0 {
			_, err = b.oracle.AddFlow(ctx, b.prefix, f)
		} else {
			_, err = fp.Add(ctx, droverFlow(t, f))
		}
		require.NoError(t, err)
	}
	// The parents too are trimmed by their children's retention (it
	// applies to the queue's whole completed set): their completed events
	// carry what they returned.
	done := map[string]string{}
	deadline := time.Now().Add(time.Minute)
	for len(done) < flows && time.Now().Before(deadline) {
		for _, e := range readQueueEvents(t, b.rdb, b.prefix, queueName, 0, nil, time.Second) {
			if e.Name == drover.EventCompleted && strings.HasPrefix(e.JobID, "p") {
				done[e.JobID] = string(e.ReturnValue)
			}
		}
	}
	var bad []string
	for i := range flows {
		id := fmt.Sprintf("p%d", i)
		rv, ok := done[id]
		if !ok {
			key := b.prefix + ":" + queueName + ":" + id
			deps, _ := b.rdb.SMembers(ctx, key+":dependencies").Result()
			reason, _ := b.rdb.HGet(ctx, key, "failedReason").Result()
			bad = append(bad, fmt.Sprintf("%s not completed (pending %v, %q)", id, deps, reason))
			continue
		}
		var got []string
		if err := json.Unmarshal([]byte(rv), &got); err != nil || len(got) != children {
			bad = append(bad, fmt.Sprintf("%s returned %s", id, rv))
		}
	}
	require.Empty(t, bad)
}
