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
// The "cleaned" events are left out of the comparison: drover writes one
// per call, as it does for completed and failed jobs.
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
					dumps[k] = comparableDump(t, b.rdb, b.prefix, dumpOptions{rewrite: func(raw *statedump.Snapshot) {
						delete(raw.Keys, queueName+":events")
						delete(raw.Keys, queueName+":meta") // Node's Queue writes its defaults there
					}})
				}
				require.NotEmpty(t, removed[nodeImpl])
				require.Less(t, len(removed[nodeImpl]), n, "some jobs are kept")
				require.Equal(t, removed[nodeImpl], removed[droverImpl], "the removed ids, in order: Node, drover")
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
