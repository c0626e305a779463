package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestDifferentialFinishWritesEventsCap: a queue whose meta hash has no
// opts.maxLenEvents (a Node Queue made with skipMetasUpdate, meta deleted
// by hand or lost with an obliterate) gets BullMQ's default written into
// meta when a worker ends an attempt: BullMQ's moveToFinished trims the
// events through getOrSetMaxEvents, and its retryJob and moveToDelayed call
// it too. drover's finishJobs only read it. The cap is deleted while the
// attempt runs (after the worker's start-up stalled check, which writes it
// on both sides); meta must have it again once the attempt ended.
func TestDifferentialFinishWritesEventsCap(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)
	for _, tc := range []struct {
		name     string
		job      jobSpec
		behavior bullmqoracle.Behavior
		event    drover.EventName
	}{
		{"Completed", jobSpec{}, bullmqoracle.Echo(), drover.EventCompleted},
		{"Failed", jobSpec{}, bullmqoracle.Fail("boom"), drover.EventFailed},
		{"RetryToWait", jobSpec{attempts: 3}, bullmqoracle.Fail("boom"), drover.EventWaiting},
		{"RetryToDelayed", jobSpec{attempts: 3, backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}},
			bullmqoracle.Fail("boom"), drover.EventDelayed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, by := range []impl{nodeImpl, droverImpl} {
				b := setup(t)
				ctx := context.Background()
				spec := tc.job
				spec.name, spec.data = "j", map[string]any{"n": 1}
				id := b.add(t, nodeImpl, spec)
				b.startWorker(t, by, workerSpec{behavior: bullmqoracle.SleepThen(700*time.Millisecond, tc.behavior)})
				b.waitEvents(t, 1, func(e drover.Event) bool { return e.Name == drover.EventActive && e.JobID == id })
				meta := b.prefix + ":" + queueName + ":meta"
				require.NoError(t, b.rdb.HDel(ctx, meta, "opts.maxLenEvents").Err())
				b.waitEvents(t, 1, func(e drover.Event) bool {
					return e.Name == tc.event && e.JobID == id && (tc.event != drover.EventWaiting || e.Prev == "active")
				})
				got, err := b.rdb.HGet(ctx, meta, "opts.maxLenEvents").Result()
				require.NoError(t, err, "%s worker: meta has no opts.maxLenEvents after the attempt ended", by)
				require.Equal(t, "10000", got, by)
			}
		})
	}
}

// TestDifferentialCancelQueuedWritesEventsCap: drover's cancel of a queued
// job fails it as a BullMQ worker failing it would (moveToFinished), so it
// writes the events cap when meta has none.
func TestDifferentialCancelQueuedWritesEventsCap(t *testing.T) {
	t.Parallel()

	b := newSetup(t)(t)
	ctx := context.Background()
	id := b.add(t, nodeImpl, jobSpec{name: "j", data: map[string]any{"n": 1}})
	meta := b.prefix + ":" + queueName + ":meta"
	require.NoError(t, b.rdb.HDel(ctx, meta, "opts.maxLenEvents").Err())
	require.NoError(t, b.dq.CancelJob(ctx, id, "not needed", nil))
	got, err := b.rdb.HGet(ctx, meta, "opts.maxLenEvents").Result()
	require.NoError(t, err, "the cancel of a queued job did not write the events cap")
	require.Equal(t, "10000", got)
}
