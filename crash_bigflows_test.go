package drover_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
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
			srv, err := redistest.Start(args...)
			require.NoError(t, err)
			t.Cleanup(func() { srv.Stop() })
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: 1})
			t.Cleanup(func() { _ = rdb.Close() })
			logs := &syncBuffer{}
			logger := slog.New(slog.NewTextHandler(logs, nil))
			q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Logger: logger})
			require.NoError(t, err)
			// Every event kept: a completed event per job is counted below.
			require.NoError(t, q.SetEventsMaxLen(ctx, 1_000_000))
			fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Logger: logger})
			require.NoError(t, err)
			_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
			require.NoError(t, err)
			w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
				time.Sleep(time.Millisecond)
				return job.ID, nil
			}), &drover.WorkerOptions{Concurrency: 8, DrainDelay: 200 * time.Millisecond, Logger: logger,
				LockDuration: time.Second, StalledInterval: 500 * time.Millisecond})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			t.Cleanup(func() { _ = w.Close(ctx) })

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
			load.Stop()
			testkit.WaitFor(t, 20*time.Second, "a scheduler run made after the last crash completed", func() bool {
				ids, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateCompleted}, 0, -1, true)
				require.NoError(t, err)
				for _, id := range ids {
					var ms int64
					if _, err := fmt.Sscanf(strings.TrimPrefix(id, "repeat:tick:"), "%d", &ms); err == nil &&
						strings.HasPrefix(id, "repeat:") && time.UnixMilli(ms).After(crashedAt.Add(time.Second)) {
						return true
					}
				}
				return false
			})
			_, err = q.RemoveJobScheduler(ctx, "tick")
			require.NoError(t, err)
			testkit.WaitFor(t, 30*time.Second, "every job finished", func() bool {
				c, err := q.GetJobCounts(ctx)
				require.NoError(t, err)
				return c[drover.StateWaiting]+c[drover.StateActive]+c[drover.StatePrioritized]+
					c[drover.StateDelayed]+c[drover.StateWaitingChildren] == 0
			})
			require.NoError(t, w.Close(ctx))

			s := readQueueStates(t, rdb, "bull", "q")
			require.Empty(t, s.In("failed"))
			completions := map[string]int{}
			for _, e := range rdb.XRange(ctx, "bull:q:events", "-", "+").Val() {
				if e.Values["event"] == "completed" {
					completions[fmt.Sprint(e.Values["jobId"])]++
				}
			}
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
			require.NotContains(t, logs.String(), "level=ERROR")
			t.Logf("%d flows acknowledged, %d jobs completed", len(acked), len(s.In("completed")))
		})
	}
}
