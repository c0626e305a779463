package interoptest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropEvents reads each implementation's events with the other's
// QueueEvents.
func TestInteropEvents(t *testing.T) {
	t.Parallel()

	setup := newSetup(t)

	t.Run("NodeQueueEventsReadsDrover", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx := context.Background()
		require.NoError(t, b.oracle.StartQueueEvents(ctx, b.prefix, queueName))

		ok, err := b.dq.Add(ctx, "ok", map[string]any{"n": 1}, nil)
		require.NoError(t, err)
		bad, err := b.dq.Add(ctx, "bad", map[string]any{"n": 2}, nil)
		require.NoError(t, err)
		later, err := b.dq.Add(ctx, "later", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
		result := map[string]any{"ok": true, "list": []any{float64(1), "a/b"}, "html": "<&>"}
		b.startWorker(t, droverImpl, workerSpec{drover: func(ctx context.Context, job *drover.Job) (any, error) {
			if job.ID == bad.Job.ID {
				return nil, errors.New("drover says no")
			}
			if err := job.UpdateProgress(ctx, map[string]any{"pct": 50}); err != nil {
				return nil, err
			}
			return result, nil
		}})

		// job.waitUntilFinished in Node, for jobs a drover worker finishes.
		okRes, err := b.oracle.WaitUntilFinished(ctx, b.prefix, queueName, ok.Job.ID, waitLong)
		require.NoError(t, err)
		require.Equal(t, "completed", okRes.State)
		require.JSONEq(t, `{"ok":true,"list":[1,"a/b"],"html":"<&>"}`, string(okRes.ReturnValue))
		badRes, err := b.oracle.WaitUntilFinished(ctx, b.prefix, queueName, bad.Job.ID, waitLong)
		require.NoError(t, err)
		require.Equal(t, &bullmqoracle.FinishResult{State: "failed", FailedReason: "drover says no"}, badRes)

		// No drained event: the delayed job is still pending.
		_, err = b.oracle.WaitQueueEvents(ctx, b.prefix, queueName, 1, waitLong, "retries-exhausted")
		require.NoError(t, err)
		evs, err := b.oracle.QueueEvents(ctx, b.prefix, queueName)
		require.NoError(t, err)
		byName := map[string][]bullmqoracle.QueueEvent{}
		var names []string
		for _, e := range evs {
			byName[e.Name] = append(byName[e.Name], e)
			names = append(names, e.Name)
		}
		require.Equal(t, []string{
			"added", "waiting", "added", "waiting", "added", "delayed",
			"active", "progress", "completed", "active", "failed", "retries-exhausted",
		}, names)
		require.Equal(t, map[string]any{"jobId": ok.Job.ID, "name": "ok"}, byName["added"][0].Fields)
		require.Equal(t, map[string]any{"jobId": ok.Job.ID, "prev": "waiting"}, byName["active"][0].Fields)
		require.Equal(t, map[string]any{"jobId": ok.Job.ID, "data": map[string]any{"pct": float64(50)}}, byName["progress"][0].Fields,
			"Node parses progress data written by drover")
		require.Equal(t, map[string]any{"jobId": ok.Job.ID, "returnvalue": result, "prev": "active"}, byName["completed"][0].Fields,
			"Node parses the return value written by drover")
		require.Equal(t, map[string]any{"jobId": bad.Job.ID, "failedReason": "drover says no", "prev": "active"}, byName["failed"][0].Fields)
		require.Equal(t, map[string]any{"jobId": bad.Job.ID, "attemptsMade": "1"}, byName["retries-exhausted"][0].Fields)
		delayed := byName["delayed"][0]
		require.Equal(t, later.Job.ID, delayed.JobID())
		require.Equal(t, float64(later.Job.Timestamp.Add(time.Hour).UnixMilli()), delayed.Fields["delay"],
			"the delayed event carries the absolute due time, a number for Node")
	})

	t.Run("DroverQueueEventsReadsNode", func(t *testing.T) {
		t.Parallel()

		b := setup(t)
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		o, p := b.oracle, b.prefix
		progress := bullmqoracle.Progress(map[string]any{"pct": 50}, &bullmqoracle.Behavior{Kind: "return", Value: map[string]any{"ok": "a/b"}})
		ok, err := o.Add(ctx, p, queueName, "ok", map[string]any{"behavior": progress}, map[string]any{"jobId": "ok-1"})
		require.NoError(t, err)
		_, err = o.Add(ctx, p, queueName, "ok", nil, map[string]any{"jobId": "ok-1"})
		require.NoError(t, err)
		bad, err := o.Add(ctx, p, queueName, "bad", map[string]any{"behavior": bullmqoracle.Fail("node says no")}, nil)
		require.NoError(t, err)
		later, err := o.Add(ctx, p, queueName, "later", map[string]any{}, map[string]any{"delay": 3600000})
		require.NoError(t, err)
		laterJob, err := b.dq.GetJob(ctx, later)
		require.NoError(t, err)

		// drover's reader blocks for new entries while the Node worker runs.
		qe, err := drover.NewQueueEvents(b.rdb, queueName, &drover.QueueEventsOptions{Prefix: p, LastEventID: "0", BlockTimeout: 100 * time.Millisecond})
		require.NoError(t, err)
		var mu sync.Mutex
		var got []drover.Event
		done := make(chan error, 1)
		go func() {
			done <- qe.Run(ctx, func(e drover.Event) error {
				mu.Lock()
				got = append(got, e)
				mu.Unlock()
				if e.Name == drover.EventRetriesExhausted {
					return errDone
				}
				return nil
			})
		}()
		b.pause(t, nodeImpl)
		b.resume(t, nodeImpl)
		b.startWorker(t, nodeImpl, workerSpec{behavior: bullmqoracle.FromData("behavior")})
		require.ErrorIs(t, <-done, errDone)

		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []string{
			"added ok-1", "waiting ok-1", "duplicated ok-1", "added 3", "waiting 3", "added 4", "delayed 4",
			"paused", "resumed",
			"active ok-1 prev=waiting", "progress ok-1", "completed ok-1 prev=active",
			"active 3 prev=waiting", "failed 3 prev=active", "retries-exhausted 3",
		}, eventLines(got))
		byName := map[drover.EventName]drover.Event{}
		for _, e := range got {
			if _, seen := byName[e.Name]; !seen {
				byName[e.Name] = e
			}
			require.False(t, e.Time().IsZero(), "event %s has a time", e.ID)
		}
		require.Equal(t, "ok", byName[drover.EventAdded].JobName)
		require.JSONEq(t, `{"pct":50}`, string(byName[drover.EventProgress].Data))
		require.JSONEq(t, `{"ok":"a/b"}`, string(byName[drover.EventCompleted].ReturnValue))
		require.Equal(t, "node says no", byName[drover.EventFailed].FailedReason)
		require.Equal(t, bad, byName[drover.EventFailed].JobID)
		require.Equal(t, 1, byName[drover.EventRetriesExhausted].AttemptsMade)
		require.Equal(t, laterJob.Timestamp.Add(time.Hour), byName[drover.EventDelayed].DelayUntil)
		require.Equal(t, ok, byName[drover.EventDuplicated].JobID)
	})
}

var errDone = errors.New("done")
