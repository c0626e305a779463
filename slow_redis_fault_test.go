package drover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestGroupCommitAddsUnderTruncatedReplies: eight producers add through
// one client (their adds share addJobs calls, the group commit) while the
// proxy cuts off the replies of add calls part way (half the answer, then a
// reset) and, for a while, delays every reply by 300 ms. No job may be
// stored twice (each add's data is unique), every add reported done must
// be stored once under the id it answered, and an add that failed must
// say whether its jobs may be stored (ErrAddInDoubt) or were not.
func TestGroupCommitAddsUnderTruncatedReplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{PoolSize: 16})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	const producers, each = 8, 80
	type outcome struct {
		id  string
		err error
	}
	results := make([][]outcome, producers)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range producers {
		results[g] = make([]outcome, each)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				res, err := q.Add(actx, "g", map[string]int{"g": g, "i": i}, nil)
				cancel()
				results[g][i].err = err
				if err == nil {
					results[g][i].id = res.Job.ID
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	// The faults, until the producers are done: an add reply cut off, then
	// 100 ms after it another (one armed at a time: armed faster than the
	// adds meet them, the cuts would pile up and every resend be cut); from
	// the second 100 ms on, replies 300 ms late for a second.
	started := time.Now()
	lagged := false
faults:
	for {
		before := proxy.Dropped()
		proxy.TruncateReplyTo("evalsha")
		for proxy.Dropped() == before {
			select {
			case <-done:
				break faults
			case <-time.After(5 * time.Millisecond):
			}
		}
		if !lagged && time.Since(started) > 100*time.Millisecond {
			lagged = true
			proxy.SetReplyLatency(300 * time.Millisecond)
			time.AfterFunc(time.Second, func() { proxy.SetReplyLatency(0) })
		}
		select {
		case <-done:
			break faults
		case <-time.After(100 * time.Millisecond):
		}
	}
	proxy.SetReplyLatency(0)
	// Every job hash, by its data.
	stored := map[string][]string{}
	iter := direct.Scan(ctx, 0, prefix+":q:*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if direct.Type(ctx, k).Val() != "hash" {
			continue
		}
		data := direct.HGet(ctx, k, "data").Val()
		if data == "" {
			continue // meta
		}
		var d struct{ G, I int }
		require.NoError(t, json.Unmarshal([]byte(data), &d), "%s data %q", k, data)
		key := fmt.Sprintf("%d/%d", d.G, d.I)
		stored[key] = append(stored[key], strings.TrimPrefix(k, prefix+":q:"))
	}
	require.NoError(t, iter.Err())

	var problems []string
	okAdds, doubt, failed := 0, 0, 0
	for g := range producers {
		for i, r := range results[g] {
			key := fmt.Sprintf("%d/%d", g, i)
			got := stored[key]
			switch {
			case len(got) > 1:
				problems = append(problems, fmt.Sprintf("add %s stored %d times: %v", key, len(got), got))
			case r.err == nil && (len(got) != 1 || got[0] != r.id):
				problems = append(problems, fmt.Sprintf("add %s answered id %s, stored as %v", key, r.id, got))
			case r.err != nil && !errors.Is(r.err, drover.ErrAddInDoubt) && len(got) > 0:
				problems = append(problems, fmt.Sprintf("add %s failed as not stored (%v), stored as %v", key, r.err, got))
			}
			switch {
			case r.err == nil:
				okAdds++
			case errors.Is(r.err, drover.ErrAddInDoubt):
				if doubt == 0 {
					t.Logf("an add in doubt: %v (stored %d times)", r.err, len(got))
				}
				doubt++
			default:
				failed++
			}
		}
	}
	sort.Strings(problems)
	require.Empty(t, problems)
	require.NotZero(t, okAdds, "some adds got through")
	require.NotZero(t, proxy.Dropped(), "replies were cut off")
	require.Equal(t, int64(len(stored)), direct.LLen(ctx, prefix+":q:wait").Val(), "each stored job waits once")
	t.Logf("%d adds done, %d in doubt, %d failed; %d replies cut off", okAdds, doubt, failed, proxy.Dropped())
}

// TestFinishBatchesUnderTruncatedReplies: a worker at concurrency 40
// writes its results in batched finishJobs calls (which also fetch the
// next jobs) while the proxy cuts off the replies of those calls part way
// again and again. No finish may be lost: every job completes, exactly
// once (one completed event), none is left active or locked, and the quiet
// queue keeps every queuecheck invariant.
func TestFinishBatchesUnderTruncatedReplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{PoolSize: 60})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	const jobs = 600
	bulk := make([]drover.BulkJob, jobs)
	for i := range bulk {
		bulk[i] = drover.BulkJob{Name: "j", Opts: &drover.JobOptions{JobID: fmt.Sprintf("j%d", i)}}
	}
	_, err = q.AddBulk(ctx, bulk)
	require.NoError(t, err)

	var runs atomic.Int64
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		runs.Add(1)
		time.Sleep(50 * time.Millisecond)
		// The result's text marks the finish calls, for the proxy's rule.
		return "finish-mark", nil
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 40, LockDuration: 3 * time.Second,
		StalledInterval: 500 * time.Millisecond, MaxStalledCount: 100, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	closed := false
	t.Cleanup(func() {
		if !closed {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		}
	})
	completed := func() int64 { return direct.ZCard(ctx, prefix+":q:completed").Val() }
	// One cut armed at a time (armed faster than finishes meet them, the
	// cuts would pile up and cut every finish from then on), until a
	// quarter of the jobs is left.
	for completed() < jobs*3/4 {
		before := proxy.Dropped()
		proxy.TruncateReplyTo("finish-mark")
		testkit.WaitFor(t, 30*time.Second, "a finish reply to be cut off", func() bool { return proxy.Dropped() > before })
		time.Sleep(30 * time.Millisecond)
	}
	testkit.WaitFor(t, 60*time.Second, "every job to complete", func() bool { return completed() == jobs })
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, w.Close(cctx))
	closed = true

	completions, stalls := map[string]int{}, 0
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		switch m.Values["event"] {
		case "completed":
			completions[fmt.Sprint(m.Values["jobId"])]++
		case "stalled":
			stalls++
		}
	}
	require.Len(t, completions, jobs)
	for id, n := range completions {
		require.Equal(t, 1, n, "job %s completed once", id)
	}
	st, err := queuecheck.Read(ctx, direct, prefix, "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Len(t, st.In("completed"), jobs)
	require.NotZero(t, proxy.Dropped(), "finish replies were cut off")
	t.Logf("%d finish replies cut off; %d runs for %d jobs, %d stalls", proxy.Dropped(), runs.Load(), jobs, stalls)
}

// TestLockHeldUnderSlowReplies: every reply from Redis to worker A comes
// 1.5 s late (its requests arrive at once: a slow return path), with
// locks of 4 s. A's connections are all open and past their handshake
// beforehand, and the scripts loaded, so no call pays extra round trips.
// Eight jobs arrive 350 ms apart and run 4.5 s: healthy jobs, each of whose
// renewals reaches Redis at once. A learns of each take 1.5 s after its
// lock was set, and must renew it then, not at its next round (up to
// 1.5 s later, whose answer would come past the lock's end and cancel the
// job as if its lock had been lost). Worker B, on a good link and started
// once A holds every job, checks for stalled jobs every 200 ms. No lock may
// be lost, no job stalled; each completes once, by A, on its first attempt.
func TestLockHeldUnderSlowReplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	const conns = 16
	proxy, viaProxy := faultproxy.StartClient(t, srv.Addr, redis.Options{PoolSize: conns})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	// Every connection of A's pool opened and through its handshake (a
	// connection is set up at its first command): at the same time, each
	// holding its connection for 100 ms.
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = viaProxy.Do(ctx, "BLPOP", prefix+":nothing", "0.1").Err()
		}()
	}
	wg.Wait()
	require.EqualValues(t, conns, viaProxy.PoolStats().TotalConns)
	require.NoError(t, scripts.Load(ctx, direct))

	var lost atomic.Value
	const jobs = 8
	a, err := drover.NewWorker(viaProxy, "q", drover.ProcessorFunc(func(ctx context.Context, _ *drover.Job) (any, error) {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(4500 * time.Millisecond):
			return "a", nil
		}
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: jobs, LockDuration: 4 * time.Second, StalledInterval: time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Hooks:  &drover.WorkerHooks{LockLost: func(j *drover.Job, why string) { lost.Store(j.ID + ": " + why) }}})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	b, err := drover.NewWorker(direct, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return "b", nil
	}), &drover.WorkerOptions{Prefix: prefix, StalledInterval: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, w := range []*drover.Worker{a, b} {
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = w.Close(cctx)
		})
	}
	proxy.SetReplyLatency(1500 * time.Millisecond)
	for i := range jobs {
		_, err := q.Add(ctx, "j", nil, &drover.JobOptions{JobID: fmt.Sprintf("j%d", i)})
		require.NoError(t, err)
		time.Sleep(350 * time.Millisecond)
	}
	testkit.WaitFor(t, 30*time.Second, "A to take every job", func() bool {
		n := direct.LLen(ctx, prefix+":q:active").Val() + direct.ZCard(ctx, prefix+":q:completed").Val()
		return n == jobs && direct.LLen(ctx, prefix+":q:wait").Val() == 0
	})
	require.NoError(t, b.Start(ctx))
	testkit.WaitFor(t, 60*time.Second, "every job to complete", func() bool {
		return direct.ZCard(ctx, prefix+":q:completed").Val() == jobs
	})
	proxy.SetReplyLatency(0)
	require.Nil(t, lost.Load(), "a lock was lost")
	for _, m := range direct.XRange(ctx, prefix+":q:events", "-", "+").Val() {
		require.NotEqual(t, "stalled", m.Values["event"], "job %v stalled", m.Values["jobId"])
	}
	for i := range jobs {
		h := direct.HGetAll(ctx, fmt.Sprintf("%s:q:j%d", prefix, i)).Val()
		require.Equal(t, `"a"`, h["returnvalue"], "job j%d", i)
		require.Equal(t, "1", h["atm"], "job j%d", i)
	}
}
