package drover_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/scripts"
)

// TestCleanFinishedInSmallCalls: a clean of 2500 completed jobs removes
// them all, in script calls of at most 1000 (SLOWLOG, on a server of the
// test's own, logging every call): one call removed up to 10000 jobs and
// held Redis for about 50 ms. It writes one "cleaned" event of 2500, as
// BullMQ's one call does (TestDifferentialCleanedEvents); it wrote one per
// call, [1000 1000 500].
func TestCleanFinishedInSmallCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := ownCleanServer(t)
	k := b.prefix + ":q:"
	const n = 2500
	p := b.rdb.Pipeline()
	for i := range n {
		id := strconv.Itoa(i + 1)
		p.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000+i, "returnvalue", "1", "finishedOn", 2000+i)
		p.ZAdd(ctx, k+"completed", redis.Z{Score: float64(2000 + i), Member: id})
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
	ids, err := b.queue.Clean(ctx, 0, 0, drover.StateCompleted)
	require.NoError(t, err)
	require.Len(t, ids, n)
	require.Equal(t, "1", ids[0], "oldest first")
	left, err := b.rdb.ZCard(ctx, k+"completed").Result()
	require.NoError(t, err)
	require.Zero(t, left)
	require.Equal(t, []int{1000, 1000, 1000}, cleanCallLimits(t, b))
	require.Equal(t, []int{2500}, cleanedCounts(t, b))

	// A limit is still never exceeded.
	for i := range 1500 {
		p.HSet(ctx, k+"l"+strconv.Itoa(i), "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000+i, "failedReason", "x", "finishedOn", 2000+i)
		p.ZAdd(ctx, k+"failed", redis.Z{Score: float64(2000 + i), Member: "l" + strconv.Itoa(i)})
	}
	_, err = p.Exec(ctx)
	require.NoError(t, err)
	ids, err = b.queue.Clean(ctx, 0, 1200, drover.StateFailed)
	require.NoError(t, err)
	require.Len(t, ids, 1200)
}

// TestCleanWaitingInSmallCalls: a clean of 2500 old waiting (delayed,
// prioritized) jobs removes them all, in script calls that examine at most
// 1000 jobs each (SLOWLOG): one call examined BullMQ's whole window of up
// to 10000 jobs. It writes BullMQ's one "cleaned" event of 2500 (it wrote
// one per call). Which jobs a limited clean removes stays BullMQ's:
// TestDifferentialCleanWaitingStatesInParts.
func TestCleanWaitingInSmallCalls(t *testing.T) {
	t.Parallel()
	for _, state := range []drover.JobState{drover.StateWaiting, drover.StateDelayed, drover.StatePrioritized} {
		t.Run(string(state), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := ownCleanServer(t)
			const n = 2500
			fillOld(t, b, state, n)
			ids, err := b.queue.Clean(ctx, 0, 0, state)
			require.NoError(t, err)
			require.Len(t, ids, n)
			counts, err := b.queue.GetJobCounts(ctx, state)
			require.NoError(t, err)
			require.Zero(t, counts[state])
			for _, limit := range cleanCallLimits(t, b) {
				require.LessOrEqual(t, limit, 1000, "jobs one call examines")
			}
			require.Equal(t, []int{2500}, cleanedCounts(t, b))
		})
	}
}

// TestCleanWaitingPingLatency prints the longest PING round trip seen
// while Queue.Clean removes 50000 old waiting jobs, and the longest clean
// script call as Redis timed it (SLOWLOG, on a server of the test's own):
// the time one call holds Redis. No assertion on either: the numbers
// depend on the machine and its load (PING's most).
func TestCleanWaitingPingLatency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, q := ownServer(t, nil, "--slowlog-log-slower-than", "1000", "--slowlog-max-len", "1000")
	b := &testBundle{rdb: rdb, prefix: "bull", name: "q", queue: q}
	const n = 50000
	fillOld(t, b, drover.StateWaiting, n)
	require.NoError(t, rdb.SlowLogReset(ctx).Err())
	done := make(chan struct{})
	var maxPing time.Duration
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			if err := b.rdb.Ping(ctx).Err(); err != nil {
				return
			}
			maxPing = max(maxPing, time.Since(start))
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	ids, err := b.queue.Clean(ctx, 0, 0, drover.StateWaiting)
	took := time.Since(start)
	close(done)
	<-pinged
	require.NoError(t, err)
	require.Len(t, ids, n)
	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	require.NoError(t, err)
	var durations []time.Duration
	for _, l := range logs {
		if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "evalsha") {
			durations = append(durations, l.Duration)
		}
	}
	require.NotEmpty(t, durations)
	slices.Sort(durations)
	t.Logf("clean of %d waiting jobs: %s, %d script calls, call time median %s max %s (SLOWLOG), max PING latency %s",
		n, took.Round(time.Millisecond), len(durations), durations[len(durations)/2].Round(100*time.Microsecond),
		durations[len(durations)-1].Round(100*time.Microsecond), maxPing.Round(100*time.Microsecond))
}

// fillOld writes n jobs added long ago into state of b's queue.
func fillOld(t *testing.T, b *testBundle, state drover.JobState, n int) {
	t.Helper()
	ctx := context.Background()
	k := b.prefix + ":q:"
	p := b.rdb.Pipeline()
	for i := range n {
		id := strconv.Itoa(i + 1)
		p.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", 1000+i, "delay", 0, "priority", 0)
		switch state {
		case drover.StateWaiting:
			p.LPush(ctx, k+"wait", id)
		case drover.StateDelayed:
			p.ZAdd(ctx, k+"delayed", redis.Z{Score: float64((int64(1e13) + int64(i)) * 0x1000), Member: id})
		case drover.StatePrioritized:
			p.ZAdd(ctx, k+"prioritized", redis.Z{Score: float64(int64(1)<<32 + int64(i)), Member: id})
		}
		if i%5000 == 4999 {
			_, err := p.Exec(ctx)
			require.NoError(t, err)
		}
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
}

// cleanedCounts is the count of each "cleaned" event of b's queue.
func cleanedCounts(t *testing.T, b *testBundle) []int {
	t.Helper()
	var counts []int
	for _, e := range b.events(t) {
		if e.Name == "cleaned" {
			counts = append(counts, e.Count)
		}
	}
	return counts
}

// ownCleanServer is a queue "q" on a redis-server of the test's own whose
// SLOWLOG keeps every command, for cleanCallLimits.
func ownCleanServer(t *testing.T) *testBundle {
	t.Helper()
	rdb, q := ownServer(t, nil, "--slowlog-log-slower-than", "0", "--slowlog-max-len", "100000")
	return &testBundle{rdb: rdb, prefix: "bull", name: "q", queue: q}
}

// cleanCallLimits is the limit (ARGV 4: the most jobs a call examines) of
// each cleanJobsInSet call b's server ran, oldest first, from its SLOWLOG.
func cleanCallLimits(t *testing.T, b *testBundle) []int {
	t.Helper()
	logs, err := b.rdb.SlowLogGet(context.Background(), -1).Result()
	require.NoError(t, err)
	sha := fmt.Sprintf("%x", sha1.Sum([]byte(scripts.Source("cleanJobsInSet"))))
	var limits []int
	for i := len(logs) - 1; i >= 0; i-- {
		args := logs[i].Args
		if len(args) < 3 || !strings.EqualFold(args[0], "evalsha") || args[1] != sha {
			continue
		}
		numKeys, err := strconv.Atoi(args[2])
		require.NoError(t, err)
		limit, err := strconv.Atoi(args[3+numKeys+3]) // base, state, cut-off, limit
		require.NoError(t, err)
		limits = append(limits, limit)
	}
	require.NotEmpty(t, limits, "clean script calls in the SLOWLOG")
	return limits
}

// TestCleanCandidatesInSmallCalls: the clean preview of up to 10,000 jobs
// lists what the clean then removes, in script calls that examine at most
// 1000 jobs each (SLOWLOG), as the clean's own: before, it was one call
// over the whole window (10,000 jobs when no limit is given, about 120 ms
// of Redis for waiting jobs). 2500 jobs, a third of them too young to go.
func TestCleanCandidatesInSmallCalls(t *testing.T) {
	t.Parallel()
	for _, state := range []drover.JobState{drover.StateWaiting, drover.StateDelayed, drover.StatePrioritized,
		drover.StateCompleted} {
		for _, limit := range []int{0, 1500} {
			t.Run(fmt.Sprintf("%s/limit%d", state, limit), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				b := ownCleanServer(t)
				fillMixed(t, b, state, 2500)
				require.NoError(t, b.rdb.SlowLogReset(ctx).Err())
				listed, err := b.queue.CleanCandidates(ctx, time.Hour, limit, state)
				require.NoError(t, err)
				for _, n := range cleanCallLimits(t, b) {
					require.LessOrEqual(t, n, 1000, "jobs one preview call examines")
				}
				removed, err := b.queue.Clean(ctx, time.Hour, limit, state)
				require.NoError(t, err)
				require.NotEmpty(t, removed)
				if state == drover.StateWaiting {
					slices.Reverse(removed) // the clean's order is BullMQ's, head to tail; the preview's oldest first
				}
				require.Equal(t, removed, listed, "the preview is what the clean removes")
			})
		}
	}
}

// fillMixed writes n jobs into state of b's queue, every third one added
// (or finished) a minute ago, the others long ago.
func fillMixed(t *testing.T, b *testBundle, state drover.JobState, n int) {
	t.Helper()
	ctx := context.Background()
	k := b.prefix + ":q:"
	young := time.Now().Add(-time.Minute).UnixMilli()
	p := b.rdb.Pipeline()
	for i := range n {
		id := strconv.Itoa(i + 1)
		ts := int64(1000 + i)
		if i%3 == 0 {
			ts = young
		}
		p.HSet(ctx, k+id, "name", "x", "data", "{}", "opts", "{}", "timestamp", ts, "delay", 0, "priority", 0)
		switch state {
		case drover.StateWaiting:
			p.LPush(ctx, k+"wait", id)
		case drover.StateDelayed:
			p.ZAdd(ctx, k+"delayed", redis.Z{Score: float64((int64(1e13) + int64(i)) * 0x1000), Member: id})
		case drover.StatePrioritized:
			p.ZAdd(ctx, k+"prioritized", redis.Z{Score: float64(int64(1)<<32 + int64(i)), Member: id})
		case drover.StateCompleted:
			p.HSet(ctx, k+id, "returnvalue", "1", "finishedOn", ts)
			p.ZAdd(ctx, k+"completed", redis.Z{Score: float64(ts), Member: id})
		}
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
}
