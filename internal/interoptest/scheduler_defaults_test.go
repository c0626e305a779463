package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestInteropJobSchedulerQueueDefaultDelay: a queue whose default job
// options set a delay can have job schedulers. BullMQ 6.7 merges a Queue's
// defaultJobOptions into the template's opts (Object.assign), stores them
// in the scheduler hash, delay included, and gives each run the schedule's
// delay; drover refused every upsert on such a queue ("JobTemplate.Opts
// must not set ... Delay") though the template set none. The Redis state
// after a drover upsert on a queue with DefaultJobOptions.Delay must be
// Node's after an upsert whose template opts carry that delay, which is
// what a Node Queue with defaultJobOptions {delay} passes its script.
func TestInteropJobSchedulerQueueDefaultDelay(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	start := time.Now().Add(2 * time.Hour).Truncate(time.Hour)
	for _, tc := range []struct {
		name   string
		node   map[string]any
		drover drover.RepeatOptions
	}{
		{"Every", map[string]any{"every": 3_600_000, "startDate": start.UnixMilli()}, drover.RepeatOptions{Every: time.Hour, StartDate: start}},
		{"Cron", map[string]any{"pattern": "0 3 * * *", "tz": "UTC"}, drover.RepeatOptions{Pattern: "0 3 * * *", TZ: "UTC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			node := setup(t)
			drv := node.sibling(t)
			_, err := node.oracle.UpsertJobScheduler(ctx, node.prefix, queueName, "s1", tc.node,
				map[string]any{"name": "n", "data": map[string]any{"v": 1}, "opts": map[string]any{"delay": 5000, "attempts": 2}})
			require.NoError(t, err)

			dq, err := drover.NewQueue(drv.rdb, queueName, &drover.QueueOptions{Prefix: drv.prefix,
				DefaultJobOptions: &drover.JobOptions{Delay: 5 * time.Second, Attempts: 2}})
			require.NoError(t, err)
			job, err := dq.UpsertJobScheduler(ctx, "s1", tc.drover, &drover.JobTemplate{Name: "n", Data: map[string]any{"v": 1}})
			require.NoError(t, err)
			require.NotNil(t, job)

			want := comparableDump(t, node.rdb, node.prefix, dumpOptions{rewrite: rankRuns})
			got := comparableDump(t, drv.rdb, drv.prefix, dumpOptions{rewrite: rankRuns})
			requireSameState(t, want, got)

			// The template's own delay is still refused: the schedule
			// decides when each run is due.
			_, err = dq.UpsertJobScheduler(ctx, "s2", tc.drover, &drover.JobTemplate{Opts: &drover.JobOptions{Delay: time.Second}})
			require.ErrorIs(t, err, drover.ErrInvalidOption)
		})
	}
}
