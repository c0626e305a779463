package interoptest_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestInteropLegacyRepeatableSaysItStops: a legacy (BullMQ v5) repeatable
// job, its key "name:id:endDate:tz:every" listed in the repeat set without
// a scheduler hash, runs under a drover worker, which, as a BullMQ 6.7
// worker, creates no next run: v6 dropped legacy repeatable jobs. A Node
// worker says so (an "error" event naming the key and the migration); a
// drover worker said nothing, so the schedule ended silently. It now logs
// a warning naming the job and the key. The Redis state is Node's either
// way (TestDifferentialOptionsMatrix/LegacyRepeatable and
// TestDifferentialStalledLegacyRepeatable compare it).
func TestInteropLegacyRepeatableSaysItStops(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	const legacyKey = "job::::5000"
	require.NoError(t, b.rdb.ZAdd(ctx, b.prefix+":"+queueName+":repeat",
		redis.Z{Score: 1_600_000_005_000, Member: legacyKey}).Err())
	id, err := b.oracle.Add(ctx, b.prefix, queueName, "job", map[string]any{"x": 1}, map[string]any{
		"jobId": "repeat:k1:1600000000000", "repeatJobKey": legacyKey,
		"repeat": map[string]any{"every": 5000, "count": 1}, "prevMillis": 1_600_000_000_000,
	})
	require.NoError(t, err)

	var logs testkit.SyncBuffer
	w, err := drover.NewWorker(b.rdb, queueName, drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return "ok", nil }),
		&drover.WorkerOptions{Prefix: b.prefix, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { _ = w.Close(ctx) })
	testkit.WaitFor(t, waitLong, "the legacy job completed", func() bool { return b.completedCount(t) == 1 })
	require.NoError(t, w.Close(ctx))

	require.Contains(t, logs.String(), "job_id="+id)
	require.Contains(t, logs.String(), "scheduler="+legacyKey)
	require.Contains(t, logs.String(), "legacy repeatable job")
	n, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":delayed").Result()
	require.NoError(t, err)
	require.Zero(t, n, "no next run, as with a Node worker")
}
