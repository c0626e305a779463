package interoptest_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// TestMixedFleetFlappingLink shares one queue between a Node BullMQ worker
// process and a drover worker while the network to ONE of them flaps
// (every connection reset, 300 ms of latency each way, a black hole longer
// than a lock lasts, refused connections) and, in between, Redis is killed
// and restarts from its AOF. The worker on the good link recovers what the
// other one's lost locks leave behind (stalled checks). Once the producer
// stops, every job it added must complete, each exactly once (one
// completed event, in the completed set alone), and the quiet queue must
// keep every queuecheck invariant (nothing left active or locked).
//
// Run twice: with the drover worker behind the flapping link, and, as the
// baseline of what a Node-only fleet does, with the Node one behind it.
func TestMixedFleetFlappingLink(t *testing.T) {
	t.Parallel()
	for _, flaky := range []impl{droverImpl, nodeImpl} {
		t.Run(string(flaky)+" behind the flapping link", func(t *testing.T) {
			t.Parallel()
			runFlappingLink(t, flaky)
		})
	}
}

func runFlappingLink(t *testing.T, flaky impl) {
	ctx := context.Background()
	srv, err := redistest.Start("--appendonly", "yes", "--appendfsync", "always")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	proxy, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	nodeAddr, droverAddr := srv.Addr, proxy.Addr
	if flaky == nodeImpl {
		nodeAddr, droverAddr = proxy.Addr, srv.Addr
	}
	rdb := srv.Client(t)
	prefix := redistest.UniquePrefix()

	const lock, stallEvery = 2 * time.Second, 500 * time.Millisecond
	nodeW := bullmqoracle.StartWorkerProcess(t, nodeAddr, prefix, queueName, bullmqoracle.WorkerOptions{
		Name: "node", Concurrency: 4, LockDuration: lock, StalledInterval: stallEvery,
		MaxStalledCount: bullmqoracle.Ptr(1000), Behavior: bullmqoracle.Sleep(60*time.Millisecond, "node"),
	})
	wrdb := redis.NewClient(&redis.Options{Addr: droverAddr})
	t.Cleanup(func() { _ = wrdb.Close() })
	dw, err := drover.NewWorker(wrdb, queueName, drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(60 * time.Millisecond):
			return "drover", nil
		}
	}), &drover.WorkerOptions{Prefix: prefix, Name: "drover", Concurrency: 4, LockDuration: lock,
		StalledInterval: stallEvery, MaxStalledCount: 1000, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, dw.Start(ctx))
	dwClosed := false
	t.Cleanup(func() {
		if !dwClosed {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_ = dw.Close(cctx)
		}
	})

	q, err := drover.NewQueue(rdb, queueName, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	qe, err := drover.NewQueueEvents(srv.Client(t), queueName, &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", BlockTimeout: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	completions := traffic.CountCompletions(t, qe)
	prod := traffic.Produce(t, q, "j", 15*time.Millisecond, 100*time.Millisecond)

	// Two rounds of faults, about ten seconds each.
	for round := range 2 {
		time.Sleep(time.Second)
		proxy.ResetAll()
		time.Sleep(time.Second)
		proxy.SetLatency(300 * time.Millisecond)
		time.Sleep(2 * time.Second)
		proxy.SetLatency(0)
		proxy.SetBlackhole(true) // past the lock: the good side's stalled checks take the jobs back
		time.Sleep(lock + 1500*time.Millisecond)
		proxy.SetBlackhole(false)
		time.Sleep(time.Second)
		proxy.Refuse()
		proxy.ResetAll()
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, proxy.Listen())
		require.NoError(t, srv.Crash(), "round %d: restart Redis", round)
	}
	time.Sleep(time.Second)
	prod.Stop()
	added := prod.Added()
	ids := make([]string, len(added))
	for i, a := range added {
		ids[i] = a.ID
	}
	require.NotEmpty(t, ids)

	testkit.WaitFor(t, 3*time.Minute, "every added job to complete", func() bool {
		n, err := rdb.ZCard(ctx, prefix+":"+queueName+":completed").Result()
		return err == nil && n >= int64(len(ids))
	})
	testkit.WaitFor(t, time.Minute, "a completed event for every job", func() bool {
		return len(completions.Missing(ids)) == 0
	})

	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, dw.Close(cctx))
	dwClosed = true
	require.NoError(t, nodeW.Stop(cctx))

	st, err := queuecheck.Read(ctx, rdb, prefix, queueName)
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	var problems []string
	for _, id := range ids {
		if w := st.Where[id]; len(w) != 1 || w[0] != "completed" {
			problems = append(problems, fmt.Sprintf("job %s is in %v", id, w))
		}
		if n := completions.Of(id); n != 1 {
			problems = append(problems, fmt.Sprintf("job %s completed %d times", id, n))
		}
	}
	sort.Strings(problems)
	require.Empty(t, problems, "%d jobs", len(ids))
	require.Len(t, st.In("completed"), len(ids), "no job but the producer's")

	byWho, stalls := map[string]int{}, 0
	for _, id := range ids {
		byWho[st.Hashes[id]["returnvalue"]]++
	}
	for _, m := range rdb.XRange(ctx, prefix+":"+queueName+":events", "-", "+").Val() {
		if m.Values["event"] == "stalled" {
			stalls++
		}
	}
	t.Logf("%s behind the link: %d jobs, each completed once (by %v); %d stalls recovered; %d adds retried",
		flaky, len(ids), byWho, stalls, len(prod.Errors()))
}
