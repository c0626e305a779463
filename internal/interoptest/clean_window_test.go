package interoptest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestDifferentialCleanWaitingStatesInParts: a clean of waiting, delayed
// or prioritized jobs removes exactly the jobs Node's Queue.clean removes
// from the same state, in the same order, though drover examines BullMQ's
// window (the limit's tail of the list, the limit's lowest-scored members
// of the set) in script calls of at most 1000 jobs: 3000 jobs of mixed
// ages (old and within the grace, interleaved), limits 700, 2500 and none.
// Before, one drover call examined the whole window of up to 10,000 jobs
// (about 120 ms of Redis for 10,000 waiting jobs).
//
// The "cleaned" events are compared too: one per BullMQ window with the
// window's count, as a Node QueueEvents listener sees them. Before,
// drover wrote one per script call of at most 1000 jobs (TestDifferentialCleanedEvents).
func TestDifferentialCleanWaitingStatesInParts(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	const n = 3000
	for _, state := range []string{"wait", "delayed", "prioritized"} {
		for _, limit := range []int{700, 2500, 0} {
			t.Run(fmt.Sprintf("%s/limit%d", state, limit), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				removed := map[impl][]string{}
				events := map[impl][]string{}
				var dumps [2]*statedump.Snapshot
				for k, by := range []impl{nodeImpl, droverImpl} {
					b := setup(t)
					fillMixedAges(t, b, state, n)
					var got []string
					var err error
					if by == nodeImpl {
						got, err = b.oracle.Clean(ctx, b.prefix, queueName, time.Hour.Milliseconds(), limit, state)
					} else {
						js := drover.JobState(state)
						if state == "wait" {
							js = drover.StateWaiting
						}
						got, err = b.dq.Clean(ctx, time.Hour, limit, js)
					}
					require.NoError(t, err)
					removed[by] = got
					events[by] = cleanedCounts(t, b)
					dumps[k] = comparableDump(t, b.rdb, b.prefix, dumpOptions{rewrite: func(raw *statedump.Snapshot) {
						delete(raw.Keys, queueName+":events")
						delete(raw.Keys, queueName+":meta") // Node's Queue writes its defaults there
					}})
				}
				require.NotEmpty(t, removed[nodeImpl])
				require.Less(t, len(removed[nodeImpl]), n, "some jobs are kept")
				require.Equal(t, removed[nodeImpl], removed[droverImpl], "the removed ids, in order: Node, drover")
				require.Equal(t, events[nodeImpl], events[droverImpl], "the cleaned events' counts: Node, drover")
				requireSameState(t, dumps[0], dumps[1])
			})
		}
	}
}

// fillMixedAges writes n jobs into state (wait, delayed or prioritized)
// of b's queue, the same on every call: about a third of them added within
// the last hour, the rest two hours ago, interleaved at random (seeded).
func fillMixedAges(t *testing.T, b *bundle, state string, n int) {
	t.Helper()
	ctx := context.Background()
	k := b.prefix + ":" + queueName + ":"
	r := rand.New(rand.NewPCG(7, 7))
	now := time.Now()
	p := b.rdb.Pipeline()
	for i := range n {
		id := strconv.Itoa(i + 1)
		ts := now.Add(-2 * time.Hour).UnixMilli()
		if r.IntN(3) == 0 {
			ts = now.Add(-time.Minute).UnixMilli()
		}
		fields := []any{"name", "x", "data", "{}", "opts", "{}", "timestamp", ts, "delay", 0, "priority", 0}
		switch state {
		case "wait":
			p.LPush(ctx, k+"wait", id)
		case "delayed":
			due := now.Add(time.Hour).UnixMilli() + int64(r.IntN(1000))
			fields[9] = 3600000
			p.ZAdd(ctx, k+"delayed", redis.Z{Score: float64(due*0x1000 + int64(i%0x1000)), Member: id})
		case "prioritized":
			prio := 1 + r.IntN(5)
			fields[11] = prio
			p.ZAdd(ctx, k+"prioritized", redis.Z{Score: float64(int64(prio)<<32 + int64(i)), Member: id})
		}
		p.HSet(ctx, k+id, fields...)
	}
	p.Set(ctx, k+"id", n, 0)
	_, err := p.Exec(ctx)
	require.NoError(t, err)
}

// TestDifferentialCleanedEvents: a clean of completed jobs writes the
// "cleaned" events Node's Queue.clean writes, one per BullMQ call (a
// window of 10,000, or of the limit when smaller) with its count, though
// drover removes them in script calls of at most 1000. Before, drover
// wrote one event per call of 1000: [1000 1000 500] where Node writes
// [2500].
func TestDifferentialCleanedEvents(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, tc := range []struct{ jobs, limit int }{
		{2500, 0}, {2500, 1500}, {2000, 0}, {10000, 0}, {10050, 0}, {0, 0},
	} {
		t.Run(fmt.Sprintf("jobs%d/limit%d", tc.jobs, tc.limit), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			events := map[impl][]string{}
			for _, by := range []impl{nodeImpl, droverImpl} {
				b := setup(t)
				if tc.jobs > 0 {
					old := float64(time.Now().Add(-time.Hour).UnixMilli())
					members := make([]redis.Z, tc.jobs)
					for i := range members {
						members[i] = redis.Z{Score: old, Member: "c" + strconv.Itoa(i)}
					}
					require.NoError(t, b.rdb.ZAdd(ctx, b.prefix+":"+queueName+":completed", members...).Err())
				}
				var err error
				if by == nodeImpl {
					_, err = b.oracle.Clean(ctx, b.prefix, queueName, 0, tc.limit, "completed")
				} else {
					_, err = b.dq.Clean(ctx, 0, tc.limit, drover.StateCompleted)
				}
				require.NoError(t, err)
				events[by] = cleanedCounts(t, b)
			}
			require.NotEmpty(t, events[nodeImpl])
			require.Equal(t, events[nodeImpl], events[droverImpl], "the cleaned events' counts: Node, drover")
		})
	}
}

// cleanedCounts is the count of each "cleaned" event in b's events
// stream, oldest first.
func cleanedCounts(t *testing.T, b *bundle) []string {
	t.Helper()
	entries, err := b.rdb.XRange(context.Background(), b.prefix+":"+queueName+":events", "-", "+").Result()
	require.NoError(t, err)
	var counts []string
	for _, e := range entries {
		if e.Values["event"] == "cleaned" {
			counts = append(counts, fmt.Sprint(e.Values["count"]))
		}
	}
	return counts
}
