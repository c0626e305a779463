package interoptest_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// TestFlowsAndSchedulerThroughWorkerKilledMidFinish: flows whose parents
// are on one queue and whose children are on another, and a job scheduler
// (every 300 ms) on the children's queue, run by drover worker processes:
// one for the parents, one for the children, which reaches Redis through a
// proxy. Three times the children's worker is SIGKILLed exactly while the
// finish call of a chosen child is on its way (the proxy holds that call,
// the process dies, then the proxy lets the call through: Redis runs the
// finish of a worker that is gone) and once in the middle of its jobs; a
// new process takes over each time. Every parent must complete exactly
// once (one completed event), after its children, each of which completes
// exactly once too; the scheduler must keep exactly one next run; and both
// quiet queues must keep every queuecheck invariant.
func TestFlowsAndSchedulerThroughWorkerKilledMidFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	rdb := srv.Client(t)
	prefix := redistest.UniquePrefix()
	const kidsQueue = "kids"
	proxy, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })

	parents := startDroverProcSpec(t, soakWorkerSpec{Addr: srv.Addr, Prefix: prefix, Name: "parents"})
	// A child may be taken by two of the killed processes in a row, and a
	// second stall fails it ("job stalled more than allowable limit", as
	// BullMQ does), leaving its parent waiting for good: 1 run in 10 at
	// load 3-5. The stall limit is raised so that every child completes.
	startKids := func(i int) *droverProc {
		return startDroverProcSpec(t, soakWorkerSpec{Addr: proxy.Addr, Prefix: prefix, Name: fmt.Sprintf("kids-%d", i), Queue: kidsQueue,
			MaxStalledCount: 10})
	}
	kids := startKids(0)

	kq, err := drover.NewQueue(rdb, kidsQueue, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = kq.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 300 * time.Millisecond}, nil)
	require.NoError(t, err)
	events := map[string]*traffic.Completions{}
	for _, q := range []string{queueName, kidsQueue} {
		qe, err := drover.NewQueueEvents(srv.Client(t), q, &drover.QueueEventsOptions{Prefix: prefix, LastEventID: "0",
			BlockTimeout: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		events[q] = traffic.CountCompletions(t, qe)
	}
	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})
	require.NoError(t, err)

	var parentIDs, kidIDs []string
	addFlow := func(i int) {
		p := fmt.Sprintf("p%d", i)
		var children []drover.FlowJob
		for k := range 3 {
			id := fmt.Sprintf("%s-k%d", p, k)
			children = append(children, drover.FlowJob{Name: "kid", QueueName: kidsQueue, Opts: &drover.JobOptions{JobID: id}})
			kidIDs = append(kidIDs, id)
		}
		_, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: queueName, Opts: &drover.JobOptions{JobID: p}, Children: children})
		require.NoError(t, err)
		parentIDs = append(parentIDs, p)
	}
	next := 0
	addFlows := func(n int) {
		for range n {
			addFlow(next)
			next++
		}
	}

	addFlows(10)
	for round := range 3 {
		// The next flow's first child is the victim: its finish call (the
		// only request naming it but the take, which names no job) is held.
		victim := fmt.Sprintf("p%d-k0", next)
		proxy.BlackholeAt(victim)
		addFlows(10)
		testkit.WaitFor(t, 30*time.Second, "the finish of "+victim+" to be held", proxy.Blackholed)
		require.NoError(t, kids.Kill())
		proxy.SetBlackhole(false) // the dead worker's finish reaches Redis now
		kids = startKids(1 + round)
	}
	// And a kill in the middle of the children's jobs.
	addFlows(20)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, kids.Kill())
	kids = startKids(9)

	testkit.WaitFor(t, 90*time.Second, "every parent to complete", func() bool {
		n, err := rdb.ZCard(ctx, prefix+":"+queueName+":completed").Result()
		return err == nil && n == int64(len(parentIDs))
	})
	testkit.WaitFor(t, 30*time.Second, "a completed event for every job", func() bool {
		return len(events[queueName].Missing(parentIDs)) == 0 && len(events[kidsQueue].Missing(kidIDs)) == 0
	})
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, kids.Stop(sctx))
	require.NoError(t, parents.Stop(sctx))

	var problems []string
	for q, ids := range map[string][]string{queueName: parentIDs, kidsQueue: kidIDs} {
		st, err := queuecheck.Read(ctx, rdb, prefix, q)
		require.NoError(t, err)
		v, err := st.Violations(ctx)
		require.NoError(t, err)
		problems = append(problems, v...)
		for _, id := range ids {
			if w := st.Where[id]; len(w) != 1 || w[0] != "completed" {
				problems = append(problems, fmt.Sprintf("%s job %s is in %v", q, id, w))
			}
			if n := events[q].Of(id); n != 1 {
				problems = append(problems, fmt.Sprintf("%s job %s completed %d times", q, id, n))
			}
		}
		if q != kidsQueue {
			continue
		}
		// The scheduler's runs: exactly one not finished, and not active.
		var open []string
		for id, w := range st.Where {
			if strings.HasPrefix(id, "repeat:tick:") && w[0] != "completed" && w[0] != "failed" {
				open = append(open, id+" "+w[0])
			}
		}
		if len(open) != 1 || strings.HasSuffix(open[0], " active") {
			problems = append(problems, fmt.Sprintf("scheduler tick has %d open runs %v, want one waiting or delayed", len(open), open))
		}
	}
	// Each parent completed after its children.
	for _, p := range parentIDs {
		pf := rdb.HGet(ctx, prefix+":"+queueName+":"+p, "finishedOn").Val()
		for k := range 3 {
			kf := rdb.HGet(ctx, fmt.Sprintf("%s:%s:%s-k%d", prefix, kidsQueue, p, k), "finishedOn").Val()
			if pf < kf && len(pf) == len(kf) {
				problems = append(problems, fmt.Sprintf("parent %s finished at %s before child k%d at %s", p, pf, k, kf))
			}
		}
	}
	sort.Strings(problems)
	require.Empty(t, problems)
	t.Logf("%d flows, %d children; the children's worker killed 4 times (3 mid-finish)", len(parentIDs), len(kidIDs))
}
