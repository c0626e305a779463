package interoptest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit"
)

// TestInteropJobSchedulerUndecodableRun: a Node scheduler whose template
// has an option a drover worker cannot decode (stackTraceLimit "x": Node
// takes it) goes on under a drover worker, as under a Node one, which
// creates the next run when it takes a run, before anything else. The
// drover worker fails each such run for good ("cannot decode job"), which
// is kept, but it did not create the next run either: the scheduler
// stopped at its first run.
func TestInteropJobSchedulerUndecodableRun(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	for _, by := range []impl{nodeImpl, droverImpl} {
		t.Run(string(by), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 300},
				map[string]any{"name": "n", "opts": map[string]any{"stackTraceLimit": "x", "priority": 3}})
			require.NoError(t, err)
			b.startWorker(t, by, workerSpec{})
			schedKey := b.prefix + ":" + queueName + ":repeat:s1"
			testkit.WaitFor(t, waitLong, "the scheduler's 4th run", func() bool {
				ic, _ := b.rdb.HGet(ctx, schedKey, "ic").Int64()
				return ic >= 4
			})
			// The runs the worker made keep the template's priority.
			next, err := b.rdb.ZRange(ctx, b.prefix+":"+queueName+":repeat", 0, 0).Result()
			require.NoError(t, err)
			require.Equal(t, []string{"s1"}, next)
			ids, err := b.rdb.ZRange(ctx, b.prefix+":"+queueName+":delayed", 0, -1).Result()
			require.NoError(t, err)
			for _, id := range ids {
				p, err := b.rdb.HGet(ctx, b.prefix+":"+queueName+":"+id, "priority").Result()
				require.NoError(t, err)
				require.Equal(t, "3", p, "priority of %s", id)
			}
		})
	}
}
