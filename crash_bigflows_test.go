package drover_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestHundredChildFlowsOutliveRedisCrashes: a worker (concurrency 8) runs
// 100-child flows and a job scheduler's runs while a producer adds such
// flows, and the redis-server is SIGKILLed and restarted twice, from its
// AOF (appendfsync always) or from an RDB snapshot taken moments before
// (writes after it are lost). Afterwards every job is in exactly one state
// with its hash, every parent's dependencies match its children
// (queuecheck), nothing is left active or waiting, the scheduler makes runs
// after the last crash (the worker resumed by itself), and nothing ended
// failed. With the AOF, every flow whose add returned nil is complete,
// each of its jobs completed once, the parent holding its 100 results.
func TestHundredChildFlowsOutliveRedisCrashes(t *testing.T) {
	t.Parallel()
	for _, persist := range []string{"aof", "rdb"} {
		t.Run(persist, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			args := []string{"--appendonly", "yes", "--appendfsync", "always"}
			if persist == "rdb" {
				args = []string{"--appendonly", "no", "--save", ""}
			}
			r := newCrashRig(t, args...)
			srv, rdb, q, fp := r.srv, r.rdb, r.q, r.fp

			const kids = 100
			var (
				mu    sync.Mutex
				acked []string // parents whose add returned nil
			)
			load := testkit.NewLoad()
			load.Every(40*time.Millisecond, func(i int) {
				p := fmt.Sprintf("p%d", i)
				children := make([]drover.FlowJob, kids)
				for c := range children {
					children[c] = drover.FlowJob{Name: "kid", QueueName: "q", Opts: &drover.JobOptions{JobID: fmt.Sprintf("%s-%d", p, c)}}
				}
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := fp.Add(actx, drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{JobID: p}, Children: children})
				cancel()
				if err == nil {
					mu.Lock()
					acked = append(acked, p)
					mu.Unlock()
				}
			})
			for range 2 {
				time.Sleep(600 * time.Millisecond)
				if persist == "rdb" {
					require.NoError(t, rdb.Save(ctx).Err()) // the state the restart goes back to
					time.Sleep(150 * time.Millisecond)      // writes the restart loses
				}
				require.NoError(t, srv.Crash())
			}
			crashedAt := time.Now()
			time.Sleep(600 * time.Millisecond)
			// A loaded machine (-race, other tests) adds few 100-child
			// flows in those 2 s: keep adding until there are enough to
			// check, for at most 15 s.
			for until := time.Now().Add(15 * time.Second); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n > 10 {
					break
				}
			}
			load.Stop()
			s, completions := r.settle(t, crashedAt, 20*time.Second, 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			require.Greater(t, len(acked), 10, "flows were added around the crashes")
			if persist == "aof" {
				for _, p := range acked {
					for c := -1; c < kids; c++ {
						id := p
						if c >= 0 {
							id = fmt.Sprintf("%s-%d", p, c)
						}
						require.Equal(t, []string{"completed"}, s.Where[id], id)
						require.Equal(t, 1, completions[id], "completed events of %s", id)
					}
					vals, err := q.Job(p).GetChildrenValues(ctx)
					require.NoError(t, err)
					require.Len(t, vals, kids, "parent %s has its children's results", p)
				}
			}
			require.NotContains(t, r.logs.String(), "level=ERROR")
			t.Logf("%d flows acknowledged, %d jobs completed", len(acked), len(s.In("completed")))
		})
	}
}
